/**
 * The container log file formats a kubelet reads (upstream staging/src/k8s.io/cri-client/pkg/logs):
 * the CRI format the runtime writes, one line per write or per chunk of a long write,
 *   `<RFC3339Nano timestamp> <stdout|stderr> <P|F>[:more tags] <content>`
 * where P marks a partial line whose content continues on the next line and F a full one; and the
 * older Docker JSON format, `{"log":"…","stream":"stdout","time":"…"}`. Timestamps are kept as
 * nanoseconds since the epoch (bigint), so sinceTime compares and prints exactly.
 */

export type LogStream = 'stdout' | 'stderr';

export interface LogMessage {
  timestampNs: bigint;
  stream: LogStream;
  /** The content as it goes to the reader: a full line keeps its newline, a partial line has none. */
  log: Buffer;
}

export type ParseResult = LogMessage | { error: string };
export type LogParser = (line: Buffer) => ParseResult;

const RFC3339_RE =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** Go's lenient RFC3339Nano parse: any number of fraction digits, Z or an offset. */
export function parseRfc3339Nano(text: string): bigint | undefined {
  const m = RFC3339_RE.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac = '', zone] = m;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  // Go's time.Parse refuses fields out of range (month 13, day 45, hour 99) where Date.UTC rolls over.
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  // Not Date.UTC, which reads years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  const ms = date.getTime();
  let offsetSeconds = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone!.startsWith('-') ? -1 : 1;
    const offsetHours = Number(zone!.slice(1, 3));
    const offsetMinutes = Number(zone!.slice(4, 6));
    if (offsetHours > 23 || offsetMinutes > 59) return undefined;
    offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60);
  }
  const seconds = BigInt(ms / 1000 - offsetSeconds);
  return seconds * 1_000_000_000n + BigInt(frac.padEnd(9, '0'));
}

/** Days in month (1-12) of year, leap years included. */
function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Upstream's output format, RFC3339NanoFixed in UTC: always nine fraction digits. */
export function formatRfc3339NanoFixed(ns: bigint): string {
  const seconds = ns / 1_000_000_000n;
  let frac = ns % 1_000_000_000n;
  let secs = seconds;
  if (frac < 0n) {
    frac += 1_000_000_000n;
    secs -= 1n;
  }
  const iso = new Date(Number(secs) * 1000).toISOString(); // 2006-01-02T15:04:05.000Z
  return `${iso.slice(0, 19)}.${frac.toString().padStart(9, '0')}Z`;
}

const SPACE = 0x20;
const NEWLINE = 0x0a;

/** One line of the CRI format, as read from the file with its trailing newline (if it had one). */
export function parseCriLog(line: Buffer): ParseResult {
  const i1 = line.indexOf(SPACE);
  if (i1 < 0) return { error: 'timestamp is not found' };
  const ts = parseRfc3339Nano(line.toString('latin1', 0, i1));
  if (ts === undefined) return { error: `unexpected timestamp format "${line.toString('utf8', 0, i1)}"` };
  const i2 = line.indexOf(SPACE, i1 + 1);
  if (i2 < 0) return { error: 'stream type is not found' };
  const stream = line.toString('latin1', i1 + 1, i2);
  if (stream !== 'stdout' && stream !== 'stderr') return { error: `unexpected stream type "${stream}"` };
  const i3 = line.indexOf(SPACE, i2 + 1);
  if (i3 < 0) return { error: 'log tag is not found' };
  // Tags are colon-separated for forward compatibility; the first says partial or full.
  const partial = line.toString('latin1', i2 + 1, i3).split(':')[0] === 'P';
  let end = line.length;
  if (partial && end > i3 + 1 && line[end - 1] === NEWLINE) end--;
  return { timestampNs: ts, stream, log: line.subarray(i3 + 1, end) };
}

/** One line of Docker's JSON log driver format. */
export function parseDockerJsonLog(line: Buffer): ParseResult {
  let v: unknown;
  try {
    v = JSON.parse(line.toString('utf8'));
  } catch (err) {
    return { error: `failed with ${String(err)} to unmarshal log` };
  }
  const o = v as { log?: unknown; stream?: unknown; time?: unknown };
  if (v === null || typeof v !== 'object') return { error: 'log line is not a JSON object' };
  const ts = typeof o.time === 'string' ? parseRfc3339Nano(o.time) : undefined;
  if (ts === undefined) return { error: 'log line has no valid time' };
  const stream = o.stream === 'stderr' ? 'stderr' : 'stdout';
  return { timestampNs: ts, stream, log: Buffer.from(typeof o.log === 'string' ? o.log : '', 'utf8') };
}

/** Upstream's getParseFunc: the first format that parses the sample line. */
export function parserFor(sample: Buffer): LogParser | undefined {
  for (const p of [parseCriLog, parseDockerJsonLog]) if (!('error' in p(sample))) return p;
  return undefined;
}
