/**
 * A preload for the kubelet under a bench (`node --import dist/bench/memory-sampler.js bin/tskubelet …`,
 * e.g. through the cluster bench's BENCH_NODE_ARGS): what the RSS is made of, every 0.5 s, as one JSON
 * line to TSKUBELET_MEMORY_LOG_DIR/memory-<pid>.jsonl: the RSS and its anonymous part
 * (`/proc/self/smaps_rollup`, so the rest is file-backed: node's executable and its libraries), V8's
 * committed heap by space (size / used, MiB), the ArrayBuffers' memory, and at each new high of the
 * RSS (and every 10 s) the RSS of malloc's main heap (`[heap]`) and of the anonymous mappings (V8's
 * pages, the threads' stacks and malloc arenas). With BENCH_WINDOW_SIGNAL=1 the bench's SIGUSR2
 * at the pods' creation and once all run is written as a `mark` line. Reading /proc/self/smaps costs
 * a few ms, so the figures of a run with it are for memory, not CPU.
 *
 * Print a run: `node dist/bench/memory-sampler.js FILE.jsonl` (one line a second, marks included).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';

const MIB = 1024 * 1024;
const mib = (bytes: number): number => Math.round((bytes / MIB) * 10) / 10;

interface Sample {
  t: number;
  mark?: string;
  rss?: number;
  anon?: number;
  spaces?: Record<string, [number, number]>;
  arrayBuffers?: number;
  mallocHeap?: number;
  anonMappings?: number;
}

function rollupKiB(text: string, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/** RSS of malloc's main heap and of the anonymous mappings, from /proc/self/smaps. */
function mappings(): { mallocHeap: number; anonMappings: number } {
  let name = '';
  let heapKiB = 0;
  let anonKiB = 0;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1] ?? '';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    if (name === '[heap]') heapKiB += Number(rss[1]);
    else if (name === '') anonKiB += Number(rss[1]);
  }
  return { mallocHeap: mib(heapKiB * 1024), anonMappings: mib(anonKiB * 1024) };
}

function startSampling(dir: string): void {
  const file = path.join(dir, `memory-${process.pid}.jsonl`);
  let high = 0;
  let n = 0;
  const timer = setInterval(() => {
    const rollup = readFileSync('/proc/self/smaps_rollup', 'utf8');
    const rssBytes = rollupKiB(rollup, 'Rss') * 1024;
    const sample: Sample = {
      t: Date.now(),
      rss: mib(rssBytes),
      anon: mib(rollupKiB(rollup, 'Anonymous') * 1024),
      spaces: Object.fromEntries(
        v8
          .getHeapSpaceStatistics()
          .filter((s) => s.space_size > 0)
          .map((s) => [s.space_name.replace(/_space$/, ''), [mib(s.space_size), mib(s.space_used_size)]]),
      ),
      arrayBuffers: mib(process.memoryUsage().arrayBuffers),
    };
    if (rssBytes > high + MIB || ++n % 20 === 0) {
      high = Math.max(high, rssBytes);
      Object.assign(sample, mappings());
    }
    appendFileSync(file, JSON.stringify(sample) + '\n');
  }, 500);
  timer.unref();
  process.on('SIGUSR2', () =>
    appendFileSync(file, JSON.stringify({ t: Date.now(), mark: 'SIGUSR2' }) + '\n'),
  );
}

function printRun(file: string): void {
  const samples = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Sample);
  const t0 = samples[0]?.t ?? 0;
  let lastPrinted = -Infinity;
  let maps = { mallocHeap: NaN, anonMappings: NaN };
  for (const s of samples) {
    const at = ((s.t - t0) / 1000).toFixed(1).padStart(6);
    if (s.mallocHeap !== undefined) maps = { mallocHeap: s.mallocHeap, anonMappings: s.anonMappings ?? NaN };
    if (s.mark) {
      console.log(`${at} ---- ${s.mark}`);
      continue;
    }
    if (s.t - lastPrinted < 1000) continue;
    lastPrinted = s.t;
    const spaces = Object.entries(s.spaces ?? {})
      .map(([name, [size, used]]) => `${name} ${size}/${used}`)
      .join(' ');
    const file = mib(((s.rss ?? 0) - (s.anon ?? 0)) * MIB);
    console.log(
      `${at} rss ${s.rss} (file ${file}, anon ${s.anon}) | ${spaces} | arrayBuffers ${s.arrayBuffers} | ` +
        `[heap] ${maps.mallocHeap} anon mappings ${maps.anonMappings}`,
    );
  }
}

const dir = process.env.TSKUBELET_MEMORY_LOG_DIR;
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of process.argv.slice(2)) printRun(file);
} else if (dir) {
  startSampling(dir);
}
