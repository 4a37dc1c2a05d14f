/**
 * What a kubelet spent parsing and compiling its JavaScript, from V8's function-event log
 * (`node --log-function-events --logfile=FILE --no-logfile-per-isolate`), by event and by where the
 * code came from (the bundle, node_modules, Node's own), in the windows that
 * bench/function-events-mark.ts marks: before the start window (the kubelet's start to Node Ready
 * and the settle time), the start window, and after it. The events' times are V8's, taken with the
 * log's own overhead; the top-level ones (a script's parse, a function's lazy parse, its bytecode,
 * Sparkplug's code, a cache's deserialization) do not overlap, the others (preparse, full-parse)
 * are parts of them. TurboFan's compiles run on V8's worker threads.
 *
 * Usage: node dist/bench/function-events-summary.js <file.log>
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TOP_LEVEL = new Set([
  'parse-script',
  'parse-function',
  'parse-eval',
  'interpreter',
  'interpreter-lazy',
  'baseline',
  'deserialize',
]);
const WINDOWS = ['before the start window', 'the start window', 'after the start window'];

export interface WindowTally {
  /** ms and count by `<event> | <origin>`. */
  byEvent: Map<string, { ms: number; count: number }>;
  topLevelMs: number;
}

function originOf(url: string): string {
  if (url.includes('/dist/kubelet/')) return 'bundle';
  if (url.includes('/node_modules/')) return 'node_modules';
  if (url.startsWith('node:')) return 'node';
  return 'other';
}

/** The log's function events, tallied per window (split at each `__window_mark_<n>__`'s first execution). */
export function tallyFunctionEvents(log: string): WindowTally[] {
  const urls = new Map<string, string>();
  const windows: WindowTally[] = [{ byEvent: new Map(), topLevelMs: 0 }];
  for (const line of log.split('\n')) {
    const f = line.split(',');
    if (f[0] === 'script-details') urls.set(f[1]!, f[2] ?? '');
    if (f[0] !== 'function') continue;
    const [, event = '', scriptId = '', , , msText = ''] = f;
    if (event === 'first-execution' && /__window_mark_\d+__/.test(line)) {
      windows.push({ byEvent: new Map(), topLevelMs: 0 });
      continue;
    }
    const ms = Number(msText);
    if (!Number.isFinite(ms) || ms === 0) continue;
    const window = windows[windows.length - 1]!;
    const key = `${event} | ${originOf(urls.get(scriptId) ?? '')}`;
    const entry = window.byEvent.get(key) ?? { ms: 0, count: 0 };
    entry.ms += ms;
    entry.count++;
    window.byEvent.set(key, entry);
    if (TOP_LEVEL.has(event)) window.topLevelMs += ms;
  }
  return windows;
}

function main(file: string): void {
  tallyFunctionEvents(readFileSync(file, 'utf8')).forEach((w, i) => {
    console.log(
      `${WINDOWS[i] ?? `window ${i}`}: parse and compile on the main thread ${w.topLevelMs.toFixed(1)} ms`,
    );
    for (const [key, e] of [...w.byEvent].sort((a, b) => b[1].ms - a[1].ms))
      if (e.ms >= 0.5)
        console.log(`  ${e.ms.toFixed(1).padStart(8)} ms ${String(e.count).padStart(6)}  ${key}`);
  });
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url))
  main(process.argv[2]!);
