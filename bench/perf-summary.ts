/**
 * Where a kubelet's CPU went, from a `perf record` of it (bench/perf-window.ts):
 * `node dist/bench/perf-summary.js perf-<pid>-1.data [kubelet.cjs.map]`.
 *
 * Prints three tables: the CPU by thread (node names none of its threads: the main thread is the
 * one whose id is the process's); the main thread by kind of work, each sample given to the first
 * kind its stack matches (garbage collection, V8 compiling, the kernel by system call, JSON, TLS,
 * malloc, then the JavaScript and V8's builtins and runtime that ran it); and the JavaScript's share
 * by the deepest frame of the kubelet's bundle on the stack, mapped through the bundle's source map
 * to its file in `src/` (so a builtin or kernel call is charged to the project code that made it).
 * Frames whose code V8 named neither in its perf map nor as a builtin stay unnamed, and a perf map
 * may name an address with an older function that used it before it moved: so the file table counts
 * only frames in the bundle, whose names carry their line and column.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PerfSample {
  tid: number;
  /** Leaf first: `symbol (dso)` per frame. */
  frames: string[];
}

/** Kinds of main-thread work, first match wins; `kernel` kinds apply only when the leaf is the kernel's. */
const KINDS: { kind: string; stack?: RegExp; kernel?: RegExp; leaf?: RegExp }[] = [
  {
    kind: 'garbage collection',
    stack:
      /Scavenger|MarkCompactCollector|Sweeper::|Heap::CollectGarbage|IncrementalMarking|ConcurrentMarking/,
  },
  {
    kind: 'V8 compiling (parse, bytecode, Sparkplug, TurboFan on the main thread)',
    stack: /Compiler::Compile|Parser::|BaselineBatchCompiler|GenerateBaselineCode|compiler::PipelineImpl/,
  },
  { kind: 'kernel: socket and pipe writes', kernel: /sys_write|do_writev|sock_write_iter|pipe_write/ },
  { kind: 'kernel: socket reads', kernel: /sys_read|sock_read_iter|sys_recvmsg|unix_stream_read/ },
  { kind: 'kernel: epoll', kernel: /epoll/ },
  {
    kind: 'kernel: file calls',
    kernel: /openat|sys_mkdir|statx|newfstat|sys_unlink|readlink|getdents|rename|sys_close|sys_chmod|statfs/,
  },
  { kind: 'kernel: scheduling, interrupts, the rest', kernel: /./ },
  { kind: 'JSON parse and stringify', stack: /JsonParser|JsonStringifier/ },
  { kind: 'TLS (OpenSSL)', leaf: /ssl3_|ossl_|EVP_|aes|gcm|SSL_|tls1_/ },
  {
    kind: 'malloc and free',
    leaf: /^(malloc|_int_malloc|_int_free|cfree|free|malloc_consolidate|unlink_chunk)/,
  },
];
export const JS_KIND = 'JavaScript, V8 builtins and runtime, node';

/** `perf script -F tid,ip,sym,dso` output: a line with the thread's id, then one frame a line, leaf first. */
export function parsePerfScript(text: string): PerfSample[] {
  const samples: PerfSample[] = [];
  let current: PerfSample | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith('\t') && line.trim()) {
      current = { tid: Number(line.trim().split(/\s+/)[0]), frames: [] };
      samples.push(current);
    } else if (current && line.trim()) {
      current.frames.push(line.trim().replace(/^[0-9a-f]+ /, ''));
    }
  }
  return samples;
}

export function kindOf(sample: PerfSample): string {
  const leaf = sample.frames[0] ?? '';
  const kernelLeaf = leaf.endsWith('([kernel.kallsyms])');
  const stack = sample.frames.join('\n');
  for (const k of KINDS) {
    if (k.stack?.test(stack)) return k.kind;
    if (k.kernel && kernelLeaf && k.kernel.test(stack)) return k.kind;
    if (k.leaf?.test(leaf)) return k.kind;
  }
  return JS_KIND;
}

const BUNDLE_FRAME = /JS:[~^*+]?(\S*) file:\/\/\/\S*kubelet\.cjs:(\d+):(\d+)/;
const NODE_FRAME = /JS:[~^*+]?\S* (node:[^:]+)/;
const TIERS: Record<string, string> = {
  '~': 'interpreted (Ignition)',
  '^': 'baseline (Sparkplug)',
  '+': 'optimized (Maglev)',
  '*': 'optimized (TurboFan)',
};

/** The tier V8 ran the deepest JavaScript frame in, from the mark its perf map puts before the name. */
export function tierOf(sample: PerfSample): string {
  for (const frame of sample.frames) {
    const m = /JS:([~^*+]?)/.exec(frame);
    if (m) return TIERS[m[1]!] ?? 'JavaScript (tier not marked)';
  }
  return 'no JavaScript frame';
}

/** The source file (and function) of the deepest bundle frame, else node's module, else native (by the sample's kind). */
export function whereOf(
  sample: PerfSample,
  kind: string,
  sourceOf: (line: number, column: number) => string,
): { file: string; fn: string } {
  for (const frame of sample.frames) {
    const m = BUNDLE_FRAME.exec(frame);
    if (!m) continue;
    const file = sourceOf(Number(m[2]), Number(m[3]));
    return { file, fn: `${file} ${m[1] || '(anonymous)'}` };
  }
  const node = sample.frames.map((f) => NODE_FRAME.exec(f)?.[1]).find(Boolean);
  const file = node
    ? `node (${node})`
    : `no JavaScript frame: ${kind === JS_KIND ? "node's and V8's C++ (callbacks, promise jobs)" : kind}`;
  return { file, fn: file };
}

/** The bundle's 1-based line and column to the file in src/ (or node_modules/) it came from. */
export function bundleSources(map: SourceMap): (line: number, column: number) => string {
  const cache = new Map<string, string>();
  return (line, column) => {
    const key = `${line}:${column}`;
    let file = cache.get(key);
    if (file === undefined) {
      const entry = map.findEntry(line - 1, column - 1);
      const source = 'originalSource' in entry ? entry.originalSource : '';
      file = source.replace(/^.*?\/src\//, 'src/').replace(/^.*node_modules\//, 'node_modules/') || '?';
      cache.set(key, file);
    }
    return file;
  };
}

export function folderOf(file: string): string {
  if (file.startsWith('src/')) return file.split('/').slice(0, 2).join('/');
  if (file.startsWith('node_modules/'))
    return file
      .split('/')
      .slice(0, file.startsWith('node_modules/@') ? 3 : 2)
      .join('/');
  if (file.startsWith('node (')) return 'node (its own modules)';
  return file;
}

export interface PerfSummary {
  /** Samples per thread; the main thread's key says so. */
  byThread: Map<string, number>;
  /** The main thread's samples by kind (KINDS), by folder, file and function of the deepest bundle frame. */
  byKind: Map<string, number>;
  byFolder: Map<string, number>;
  byFile: Map<string, number>;
  byFunction: Map<string, number>;
  /** The main thread's samples by the tier of the deepest JavaScript frame. */
  byTier: Map<string, number>;
  mainSamples: number;
}

export function summarizePerf(
  samples: readonly PerfSample[],
  mainTid: number,
  sourceOf: (line: number, column: number) => string,
): PerfSummary {
  const out: PerfSummary = {
    byThread: new Map(),
    byKind: new Map(),
    byFolder: new Map(),
    byFile: new Map(),
    byFunction: new Map(),
    byTier: new Map(),
    mainSamples: 0,
  };
  const add = (into: Map<string, number>, key: string) => into.set(key, (into.get(key) ?? 0) + 1);
  for (const s of samples) {
    add(out.byThread, s.tid === mainTid ? `main thread (${s.tid})` : `thread ${s.tid}`);
    if (s.tid !== mainTid) continue;
    out.mainSamples++;
    const kind = kindOf(s);
    add(out.byKind, kind);
    add(out.byTier, tierOf(s));
    const { file, fn } = whereOf(s, kind, sourceOf);
    add(out.byFolder, folderOf(file));
    add(out.byFile, file);
    add(out.byFunction, fn);
  }
  return out;
}

/** A Markdown table of the largest entries: name, ms on a CPU, share of `total` samples. */
function markdown(
  title: string,
  counts: Map<string, number>,
  total: number,
  limit: number,
  msPerSample: number,
): string {
  const rows = [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, n]) => `| ${name} | ${Math.round(n * msPerSample)} | ${((100 * n) / total).toFixed(1)} % |`);
  return [`| ${title} | ms | share |`, '| --- | ---: | ---: |', ...rows].join('\n');
}

function main(): void {
  const [data, mapArg] = process.argv.slice(2);
  if (!data) {
    console.error('usage: perf-summary <perf-<pid>-<n>.data> [kubelet.cjs.map]');
    process.exit(2);
  }
  const mapPath =
    mapArg ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'kubelet', 'kubelet.cjs.map');
  const sourceOf = bundleSources(new SourceMap(JSON.parse(readFileSync(mapPath, 'utf8'))));
  const header = execFileSync('perf', ['report', '-i', data, '--header-only'], { encoding: 'utf8' });
  const hz = Number(/sample_freq \} = (\d+)/.exec(header)?.[1] ?? 1999);
  const msPerSample = 1000 / hz;
  const text = execFileSync('perf', ['script', '-i', data, '-F', 'tid,ip,sym,dso'], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const pid = Number(/perf-(\d+)-/.exec(path.basename(data))?.[1]);
  const samples = parsePerfScript(text);
  const s = summarizePerf(samples, pid, sourceOf);
  console.log(
    `${data}: ${samples.length} samples at ${hz} Hz, ${Math.round(samples.length * msPerSample)} ms on a CPU\n`,
  );
  console.log(markdown('thread', s.byThread, samples.length, 12, msPerSample));
  console.log('\nThe main thread by kind of work (the first kind its stack matches):\n');
  console.log(markdown('kind', s.byKind, s.mainSamples, 20, msPerSample));
  console.log('\nThe main thread by the tier its deepest JavaScript frame ran in:\n');
  console.log(markdown('tier', s.byTier, s.mainSamples, 6, msPerSample));
  console.log(
    "\nThe main thread by the deepest frame of the kubelet's bundle, by folder, file and function:\n",
  );
  console.log(markdown('folder', s.byFolder, s.mainSamples, 30, msPerSample));
  console.log('');
  console.log(markdown('file', s.byFile, s.mainSamples, 30, msPerSample));
  console.log('');
  console.log(markdown('function', s.byFunction, s.mainSamples, 30, msPerSample));
}

// Run as a script (also through a symlinked path), not when a test imports it.
if (
  process.argv[1] &&
  existsSync(process.argv[1]) &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
)
  main();
