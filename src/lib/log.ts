/**
 * A klog-style logger: structured key/value pairs, verbosity levels set by --v (and per component by
 * --vmodule). Two formats, as upstream's --logging-format:
 * - `text`: `I1121 06:50:00.123 <pid> component] "message" key="value"`, close enough to klog that the
 *   same greps work;
 * - `json`: one object per line as component-base/logs/json writes it: `ts` (Unix time in
 *   milliseconds, a float), `msg`, `v` (the verbosity, on info lines only), `err` on error lines,
 *   then the key/value pairs.
 */
import { monotonicMs } from './clock.js';

export type Severity = 'I' | 'W' | 'E';

export type LogFormat = 'text' | 'json';

/** The formats --logging-format accepts, in upstream's order. */
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'text'];

/** One --vmodule entry: components whose name matches filePattern (`*` and `?` globs) log up to verbosity. */
export interface VModuleEntry {
  filePattern: string;
  verbosity: number;
}

let verbosity = 0;
let format: LogFormat = 'text';
let vmodule: { pattern: RegExp; verbosity: number }[] = [];
/**
 * Lines go to stderr in one write per tick rather than one each: a write to a pipe or journald's
 * socket is a system call, and a 100-pod start logs about 800 lines, in bursts. What is still
 * buffered when the process exits (an uncaught error included) is written on the way out.
 */
let buffered: string[] = [];
let flushQueued = false;

function flushStderr(): void {
  flushQueued = false;
  if (buffered.length === 0) return;
  const text = buffered.join('\n') + '\n';
  buffered = [];
  process.stderr.write(text);
}

function stderrSink(line: string): void {
  buffered.push(line);
  if (flushQueued) return;
  flushQueued = true;
  process.nextTick(flushStderr);
}
process.on('exit', flushStderr);

let sink: (line: string) => void = stderrSink;

export function setVerbosity(v: number): void {
  verbosity = v;
}

export function setLogFormat(f: LogFormat): void {
  format = f;
}

/**
 * Upstream matches --vmodule patterns against Go source file names; tskubelet has no such names at
 * run time, so a pattern is matched against the logger's component (`kubelet`, `server`, `k8s`, ...).
 */
export function setVModule(entries: readonly VModuleEntry[]): void {
  vmodule = entries.map((e) => ({
    pattern: new RegExp(
      '^' +
        e.filePattern
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '.*')
          .replace(/\?/g, '.') +
        '$',
    ),
    verbosity: e.verbosity,
  }));
}

function verbosityFor(component: string): number {
  for (const m of vmodule) if (m.pattern.test(component)) return m.verbosity;
  return verbosity;
}

export function getVerbosity(): number {
  return verbosity;
}

/** Replaces where lines go (tests capture them). */
export function setLogSink(fn: (line: string) => void): void {
  sink = fn;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

function formatValue(v: unknown): string {
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined) return '<nil>';
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

function jsonValue(v: unknown): unknown {
  if (v instanceof Error) return v.message;
  if (v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  return v;
}

// The wall clock at monotonicMs()'s zero: a JSON line's ts keeps sub-millisecond steps, as zap's does.
const WALL_ORIGIN_MS = Date.now() - monotonicMs();

function emitJson(sev: Severity, level: number, msg: string, kv: Record<string, unknown> | undefined): void {
  // zapr's shape: info lines carry "v"; error lines carry "err" (from the pairs) and no "v".
  const line: Record<string, unknown> = { ts: WALL_ORIGIN_MS + monotonicMs(), msg };
  if (sev !== 'E') line.v = level;
  if (kv) for (const [k, v] of Object.entries(kv)) if (!(k in line)) line[k] = jsonValue(v);
  let text: string;
  try {
    text = JSON.stringify(line);
  } catch {
    text = JSON.stringify({ ts: line.ts, msg, ...(sev !== 'E' ? { v: level } : {}), kv: String(kv) });
  }
  sink(text);
}

function emit(
  sev: Severity,
  component: string,
  msg: string,
  kv: Record<string, unknown> | undefined,
  level = 0,
): void {
  if (format === 'json') {
    emitJson(sev, level, msg, kv);
    return;
  }
  const d = new Date();
  const head =
    `${sev}${pad(d.getMonth() + 1)}${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:` +
    `${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)} ${process.pid} ${component}]`;
  let line = `${head} ${JSON.stringify(msg)}`;
  if (kv) for (const [k, v] of Object.entries(kv)) line += ` ${k}=${formatValue(v)}`;
  sink(line);
}

export interface Logger {
  info(msg: string, kv?: Record<string, unknown>): void;
  warn(msg: string, kv?: Record<string, unknown>): void;
  error(msg: string, kv?: Record<string, unknown>): void;
  /** Logs at info only when --v is at least level. */
  v(level: number, msg: string, kv?: Record<string, unknown>): void;
  enabled(level: number): boolean;
}

export function logger(component: string): Logger {
  return {
    info: (msg, kv) => emit('I', component, msg, kv),
    warn: (msg, kv) => emit('W', component, msg, kv),
    error: (msg, kv) => emit('E', component, msg, kv),
    v: (level, msg, kv) => {
      if (verbosityFor(component) >= level) emit('I', component, msg, kv, level);
    },
    enabled: (level) => verbosityFor(component) >= level,
  };
}
