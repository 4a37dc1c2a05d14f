/**
 * Counts the file calls a piece of the kubelet makes, by kind and by the project function that made
 * them: `pool readFile (open) @ src/volume/x.ts:fn`.
 *
 * - "pool": each request node hands libuv's thread pool (an async_hooks resource of type
 *   FSREQPROMISE, FSREQCALLBACK or FILEHANDLECLOSEREQ), which is what an asynchronous call costs:
 *   fs/promises' readFile is 4 of them (open, fstat, read, close), writeFile 3, a stat 1. Named by
 *   node's outermost and innermost fs functions on the stack.
 * - "sync": each fs.*Sync call the code makes (wrapped, with node's ES module bindings synced to the
 *   wrappers); the ones node makes inside another (readFileSync's openSync) are not counted again.
 *
 * The site is the first stack frame under src/ outside src/lib/ (memory-fs.ts and read-small-file.ts
 * only pass calls on). A stack trace per call makes counting slow: never time while counting.
 */
import { createHook } from 'node:async_hooks';
import { createRequire, syncBuiltinESMExports } from 'node:module';

const require = createRequire(import.meta.url);
const fsCjs = require('node:fs') as Record<string, unknown>;

const POOL_TYPES = new Set(['FSREQPROMISE', 'FSREQCALLBACK', 'FILEHANDLECLOSEREQ']);

/** The first project frame outside src/lib/: `src/x/y.ts:function`. */
function projectSite(frames: string[]): string {
  for (const line of frames) {
    const m = /at (?:async )?(?:([\w.$<> ]+) \()?.*?\/(src\/[\w/.-]+\.[jt]s):\d+:\d+\)?$/.exec(line.trim());
    if (m && !m[2]!.startsWith('src/lib/')) return `${m[2]}:${(m[1] ?? '<anonymous>').replace(/^.*\./, '')}`;
  }
  return '(outside src/)';
}

/** node's fs functions on the stack, outermost and innermost: `readFile (open)`. */
function nodeCall(frames: string[]): string {
  const names: string[] = [];
  for (const line of frames) {
    const m = /at (?:async )?([\w.$<> ]+) \(node:internal\/fs\//.exec(line.trim());
    if (m) names.push(m[1]!.replace(/^.*\./, ''));
  }
  const outer = names[names.length - 1] ?? '?';
  const inner = names[0] ?? '?';
  return outer === inner ? outer : `${outer} (${inner})`;
}

export interface FileCallCounter {
  /** Counts by `pool|sync call @ site`, since start. */
  counts(): Map<string, number>;
  /** Puts node's own functions back. */
  stop(): void;
}

export function countFileCalls(): FileCallCounter {
  const counts = new Map<string, number>();
  const add = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  const stackLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 60;
  const frames = () => (new Error().stack ?? '').split('\n').slice(2);

  const hook = createHook({
    init(_id, type) {
      if (!POOL_TYPES.has(type)) return;
      const f = frames();
      add(`pool ${nodeCall(f)} @ ${projectSite(f)}`);
    },
  });
  hook.enable();

  const originals: [string, unknown][] = [];
  // readFileSync calls openSync, readSync and closeSync through the module: only the outer call counts.
  let depth = 0;
  for (const name of Object.keys(fsCjs).filter((n) => n.endsWith('Sync'))) {
    const fn = fsCjs[name];
    if (typeof fn !== 'function') continue;
    originals.push([name, fn]);
    const counted = (call: (...a: unknown[]) => unknown) =>
      function (this: unknown, ...args: unknown[]) {
        if (depth === 0) add(`sync ${name.replace(/Sync$/, '')} @ ${projectSite(frames())}`);
        depth++;
        try {
          return call.apply(this, args);
        } finally {
          depth--;
        }
      };
    const wrapped = counted(fn as (...a: unknown[]) => unknown);
    // realpathSync.native hangs off the function; it counts as a realpath.
    const native = (fn as { native?: unknown }).native;
    if (typeof native === 'function') {
      Object.assign(wrapped, { native: counted(native as (...a: unknown[]) => unknown) });
    }
    fsCjs[name] = wrapped;
  }
  syncBuiltinESMExports();

  return {
    counts: () => new Map(counts),
    stop: () => {
      hook.disable();
      for (const [name, fn] of originals) fsCjs[name] = fn;
      syncBuiltinESMExports();
      Error.stackTraceLimit = stackLimit;
    },
  };
}
