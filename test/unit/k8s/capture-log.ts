/** A Logger that keeps what it is told, for tests that count log lines. */
import type { Logger } from '../../../src/lib/log.js';

export interface CapturedLine {
  level: 'info' | 'warn' | 'error' | 'v';
  verbosity: number;
  msg: string;
  kv: Record<string, unknown> | undefined;
}

/** verbosity is what enabled() answers for (every level unless given), as --v would set it. */
export function captureLog(verbosity = Infinity): Logger & { lines: CapturedLine[] } {
  const lines: CapturedLine[] = [];
  return {
    lines,
    info: (msg, kv) => lines.push({ level: 'info', verbosity: 0, msg, kv }),
    warn: (msg, kv) => lines.push({ level: 'warn', verbosity: 0, msg, kv }),
    error: (msg, kv) => lines.push({ level: 'error', verbosity: 0, msg, kv }),
    v: (level, msg, kv) => lines.push({ level: 'v', verbosity: level, msg, kv }),
    enabled: (level) => level <= verbosity,
  };
}

/** The lines a default --v=0 run would print. */
export function printed(log: { lines: CapturedLine[] }): CapturedLine[] {
  return log.lines.filter((l) => l.level !== 'v');
}
