/**
 * A klog-style logger: structured key/value pairs, verbosity levels set by --v.
 * Lines go to stderr as `I1121 06:50:00.123456 <pid> file] message key="value"`-like text,
 * close enough to upstream that the same greps work.
 */
export type Severity = 'I' | 'W' | 'E';

let verbosity = 0;
let sink: (line: string) => void = (line) => process.stderr.write(line + '\n');

export function setVerbosity(v: number): void {
  verbosity = v;
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

function emit(sev: Severity, component: string, msg: string, kv: Record<string, unknown> | undefined): void {
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
      if (verbosity >= level) emit('I', component, msg, kv);
    },
    enabled: (level) => verbosity >= level,
  };
}
