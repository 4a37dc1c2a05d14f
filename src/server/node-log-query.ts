/**
 * The node log query (`/logs/?query=…`, upstream kubelet_server_journal.go): what the query
 * parameters mean, upstream's validation with its error texts (apimachinery field errors), and the
 * journalctl command line they become. Serving it is node-log-query-handler.ts.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { goQuote } from '../lib/go-quote.js';
import { goRegexpSyntaxError } from '../lib/go-regexp-syntax.js';

const MAX_TAIL_LINES = 100_000;
const MAX_SERVICE_LENGTH = 256;
const MAX_SERVICES = 4;
/** Upstream's broad defence: only these characters reach journalctl's --unit. */
const SERVICE_NAME_UNSAFE = /[^a-zA-Z\-_0-9@]+/;

/** An RFC 3339 time as Go holds it: the instant (nanoseconds) and the offset it was written with. */
export interface GoTime {
  epochNs: bigint;
  offsetMinutes: number;
  /** Written with `Z` (Go's UTC location) rather than a numeric offset. */
  utc: boolean;
}

export interface NodeLogQuery {
  services: string[];
  files: string[];
  sinceTime?: GoTime;
  untilTime?: GoTime;
  tailLines?: number;
  boot?: number;
  pattern: string;
}

/** Any of the options set (upstream compares its options struct with the zero value). */
export function hasOptions(q: NodeLogQuery): boolean {
  return (
    q.sinceTime !== undefined ||
    q.untilTime !== undefined ||
    q.tailLines !== undefined ||
    q.boot !== undefined ||
    q.pattern !== ''
  );
}

/** Go's %#v of a []string. */
function goStringSlice(values: readonly string[]): string {
  return `[]string{${values.map(goQuote).join(', ')}}`;
}

/** field.Invalid(...).Error(): the value quoted when a string, printed as is otherwise. */
function invalid(field: string, value: string | number | { go: string }, detail: string): string {
  const shown = typeof value === 'string' ? goQuote(value) : typeof value === 'number' ? value : value.go;
  return `${field}: Invalid value: ${shown}: ${detail}`;
}

/** utilerrors.NewAggregate(list).Error(): one message alone, several in brackets, duplicates once. */
export function aggregateFieldErrors(errors: readonly string[]): string {
  const unique = [...new Set(errors)];
  return unique.length === 1 ? unique[0]! : unique.length === 0 ? '' : `[${unique.join(', ')}]`;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** time.Parse(time.RFC3339, v), or undefined where Go refuses it. */
export function parseRFC3339(v: string): GoTime | undefined {
  const m = RFC3339.exec(v);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number, number, number, number, number, number,
  ]; // prettier-ignore
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59)
    return undefined;
  const zone = m[8]!;
  const offsetMinutes =
    zone === 'Z'
      ? 0
      : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  if (Math.abs(offsetMinutes) >= 24 * 60) return undefined;
  const localMs = Date.UTC(year, month - 1, day, hour, minute, second);
  const nanos = BigInt((m[7] ?? '').padEnd(9, '0') || '0');
  const epochNs = BigInt(localMs - offsetMinutes * 60_000) * 1_000_000n + nanos;
  return { epochNs, offsetMinutes, utc: zone === 'Z' || offsetMinutes === 0 };
}

/** The wall clock of t in its own offset (or UTC), as parts. */
function wallClock(t: GoTime, inUtc: boolean): { d: Date; nanos: bigint } {
  const shiftNs = inUtc ? 0n : BigInt(t.offsetMinutes) * 60_000_000_000n;
  const local = t.epochNs + shiftNs;
  const ms = local / 1_000_000n - (local < 0n && local % 1_000_000n !== 0n ? 1n : 0n);
  return { d: new Date(Number(ms)), nanos: ((local % 1_000_000_000n) + 1_000_000_000n) % 1_000_000_000n };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Go's time.Time.String() ("2006-01-02 15:04:05.999999999 -0700 MST") for a parsed RFC 3339 time. */
export function goTimeString(t: GoTime): string {
  const { d, nanos } = wallClock(t, false);
  const frac = nanos === 0n ? '' : '.' + String(nanos).padStart(9, '0').replace(/0+$/, '');
  const sign = t.offsetMinutes < 0 ? '-' : '+';
  const off = `${sign}${pad(Math.floor(Math.abs(t.offsetMinutes) / 60))}${pad(Math.abs(t.offsetMinutes) % 60)}`;
  const date = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${frac}`;
  // A numeric offset parses into a zone without a name, which Go prints as the offset again.
  return `${date} ${time} ${off} ${t.utc ? 'UTC' : off}`;
}

/** Upstream's dateLayout "2006-1-2 15:4:5", in UTC (journalctl is run with TZ=UTC). */
export function journalDate(t: GoTime): string {
  const { d } = wallClock(t, true);
  return `${d.getUTCFullYear()}-${d.getUTCMonth() + 1}-${d.getUTCDate()} ${d.getUTCHours()}:${d.getUTCMinutes()}:${d.getUTCSeconds()}`;
}

/** strconv.Atoi: the value, or Go's error text. */
function goAtoi(v: string): number | string {
  if (!/^[+-]?\d+$/.test(v)) return `strconv.Atoi: parsing ${goQuote(v)}: invalid syntax`;
  const n = BigInt(v);
  if (n > 9223372036854775807n || n < -9223372036854775808n)
    return `strconv.Atoi: parsing ${goQuote(v)}: value out of range`;
  return Number(n);
}

/**
 * Upstream's newNodeLogQuery: no query when none of its parameters is given (the plain /logs/
 * answers then), else the query or the errors (a 400).
 */
export function parseNodeLogQuery(params: URLSearchParams): { query?: NodeLogQuery; errors: string[] } {
  const errors: string[] = [];
  const q: NodeLogQuery = { services: [], files: [], pattern: '' };
  const queries = params.getAll('query');
  for (const v of queries) {
    // A / or \ says it is a file; blank values are dropped.
    if (/[/\\]/.test(v)) q.files.push(v);
    else if (v.trim() !== '') q.services.push(v);
  }
  if (params.has('query') && q.files.length === 0 && q.services.length === 0)
    errors.push(invalid('query', { go: goStringSlice(queries) }, 'query cannot be empty'));
  for (const name of ['sinceTime', 'untilTime'] as const) {
    const v = params.get(name) ?? '';
    if (v === '') continue;
    const t = parseRFC3339(v);
    if (t) q[name] = t;
    else errors.push(invalid(name, v, 'invalid time format'));
  }
  for (const name of ['boot', 'tailLines'] as const) {
    const v = params.get(name) ?? '';
    if (v === '') continue;
    const n = goAtoi(v);
    if (typeof n === 'number') q[name] = n;
    else errors.push(invalid(name, v, n));
  }
  q.pattern = params.get('pattern') ?? '';
  if (errors.length > 0) return { errors };
  if (q.services.length === 0 && q.files.length === 0 && !hasOptions(q)) return { errors };
  return { query: q, errors };
}

/** Go's error strings for what stat meets most. */
const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'not a directory',
  EACCES: 'permission denied',
  ELOOP: 'too many levels of symbolic links',
  ENAMETOOLONG: 'file name too long',
};

/** securejoin's answer without following links: the file's path inside root, `..` stopping at root. */
export function joinInside(root: string, file: string): string {
  return path.join(root, path.posix.normalize('/' + file));
}

/** Upstream's nodeLogQuery.validate; an empty list when the query may run (else a 406). */
export async function validateNodeLogQuery(q: NodeLogQuery, logDir: string): Promise<string[]> {
  const errors: string[] = [];
  for (const s of q.services) {
    if (s.length > MAX_SERVICE_LENGTH) errors.push(invalid('query', s, 'length must be less than 100'));
    else if (SERVICE_NAME_UNSAFE.test(s))
      errors.push(invalid('query', s, 'input contains unsupported characters'));
  }
  if (q.services.length > MAX_SERVICES)
    errors.push(`query: Too many: ${q.services.length}: must have at most ${MAX_SERVICES} items`);
  const files = { go: goStringSlice(q.files) };
  if (q.files.length === 0 && q.services.length === 0) {
    errors.push('query: Required value: cannot be empty with options');
  } else if (q.files.length > 0 && q.services.length > 0) {
    errors.push(
      invalid(
        'query',
        `[${q.files.join(' ')}], [${q.services.join(' ')}]`,
        'cannot specify a file and service',
      ),
    );
  } else if (q.files.length > 1) {
    errors.push(invalid('query', files, 'cannot specify more than one file'));
  } else if (q.files.length === 1 && hasOptions(q)) {
    errors.push(invalid('query', files, 'cannot specify file with options'));
  } else if (q.files.length === 1) {
    const full = joinInside(logDir, q.files[0]!);
    try {
      await stat(full);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      errors.push(invalid('query', files, `stat ${full}: ${ERRNO_TEXT[code] ?? code.toLowerCase()}`));
    }
  }
  if (q.sinceTime && q.untilTime && q.sinceTime.epochNs > q.untilTime.epochNs)
    errors.push(invalid('untilTime', { go: goTimeString(q.untilTime) }, 'must be after `sinceTime`'));
  if (q.boot !== undefined && q.boot > 0) errors.push(invalid('boot', q.boot, 'must be less than 1'));
  if (q.tailLines !== undefined && (q.tailLines < 0 || q.tailLines > MAX_TAIL_LINES))
    errors.push(invalid('tailLines', q.tailLines, `must be between 0 and ${MAX_TAIL_LINES}, inclusive`));
  const patternError = goRegexpSyntaxError(q.pattern);
  if (patternError) errors.push(invalid('pattern', q.pattern, patternError));
  return errors;
}

/**
 * Upstream's getLoggingCmd on Linux. One difference: upstream writes sinceTime after --until too (a
 * slip: any untilTime would then end the logs where they begin); the until time is passed here.
 */
export function journalctlArgs(q: NodeLogQuery, services: readonly string[]): string[] {
  const args = ['--utc', '--no-pager', '--output=short-precise'];
  if (q.sinceTime) args.push(`--since=${journalDate(q.sinceTime)}`);
  if (q.untilTime) args.push(`--until=${journalDate(q.untilTime)}`);
  if (q.tailLines !== undefined) args.push('--pager-end', `--lines=${q.tailLines}`);
  for (const s of services) if (s !== '') args.push(`--unit=${s}`);
  if (q.pattern !== '') args.push(`--grep=${q.pattern}`);
  if (q.boot !== undefined) args.push('--boot', String(q.boot));
  return args;
}
