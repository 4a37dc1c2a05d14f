/**
 * Where a kubelet's CPU went, from a V8 `.cpuprofile` (the kubelet run with `--cpu-prof`, e.g.
 * through the density bench: BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"): self time by
 * module and by function, and inclusive time by function, optionally within a window of the
 * profile (seconds from its start, e.g. the 100-pod start, found with bench/loop-delay-probe.ts).
 *
 * Frames of the bundle (dist/kubelet) are named by their source file and line through the
 * bundle's source map, when it is beside the bundle.
 *
 * Usage: node dist/bench/cpu-profile-summary.js <file.cpuprofile> [fromS] [toS]
 * Env: TOP (rows per table, 30).
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A frame as the tables show it: the function with its file and line, and the file alone. */
export interface FrameName {
  name: string;
  module: string;
}

export interface CpuProfileSummary {
  totalUs: number;
  selfByModule: Map<string, number>;
  selfByFunction: Map<string, number>;
  inclusive: Map<string, number>;
  /**
   * Each sample to the deepest project file on its stack (`src/`, helpers of `src/lib/` passed
   * over for their caller), or its own module when none is there: a socket read or a promise
   * completion has no project frame below it.
   */
  byProjectFile: Map<string, number>;
}

/**
 * Each sample's weight: the time to the next sample, but never more than twice the profile's median
 * interval. On a busy machine the kubelet's thread can wait tens of milliseconds for a core between
 * two samples, and uncapped that wait lands on whatever function happened to be on top (one 68 ms
 * gap once made a 1 µs URL parser look like 2.5 % of a 100-pod start). A heuristic: when it is the
 * sampler that waits while the JavaScript runs, the cap undercounts instead.
 */
export function sampleWeightsUs(timeDeltas: readonly number[]): number[] {
  const sorted = timeDeltas.filter((d) => d > 0).sort((a, b) => a - b);
  const cap = 2 * (sorted[Math.floor(sorted.length / 2)] ?? 0);
  return timeDeltas.map((_, i) => Math.min(Math.max(timeDeltas[i + 1] ?? 0, 0), cap));
}

// Paths shortened to what says where: the project's own files, or the npm package.
function shorten(url: string): string {
  return url
    .replace(/^(file:\/\/)?.*?\/(dist|src|bench|node_modules)\//, '$2/')
    .replace(/^node_modules\/(@[^/]+\/[^/]+|[^/]+)\/.*/, 'npm:$1');
}

/** Names frames by their URL, or through a source map where `mapFor` gives one for the URL. */
export function frameNamer(mapFor: (url: string) => SourceMap | undefined): (f: CallFrame) => FrameName {
  const cache = new Map<string, FrameName>();
  return (f) => {
    const key = `${f.functionName}\0${f.url}\0${f.lineNumber}\0${f.columnNumber ?? 0}`;
    let named = cache.get(key);
    if (named) return named;
    const fn = f.functionName || '(anonymous)';
    const map = f.url && f.lineNumber >= 0 ? mapFor(f.url) : undefined;
    const entry = map?.findEntry(f.lineNumber, f.columnNumber ?? 0);
    if (entry && 'originalSource' in entry) {
      const module = shorten(entry.originalSource);
      named = { name: `${fn} ${module}:${entry.originalLine + 1}`, module };
    } else if (f.url) {
      const module = shorten(f.url);
      named = { name: `${fn} ${module}:${f.lineNumber + 1}`, module };
    } else {
      named = { name: fn, module: fn };
    }
    cache.set(key, named);
    return named;
  };
}

/** The source map beside a file:// script (`<script>.map`), read once per script. */
export function sourceMapsBesideScripts(): (url: string) => SourceMap | undefined {
  const maps = new Map<string, SourceMap | undefined>();
  return (url) => {
    if (!url.startsWith('file://')) return undefined;
    if (!maps.has(url)) {
      const file = `${fileURLToPath(url)}.map`;
      maps.set(url, existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, 'utf8'))) : undefined);
    }
    return maps.get(url);
  };
}

/** Self and inclusive time within [fromS, toS] seconds of the profile's start. */
export function summarizeCpuProfile(
  profile: Profile,
  nameOf: (f: CallFrame) => FrameName,
  fromS = -Infinity,
  toS = Infinity,
): CpuProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const weights = sampleWeightsUs(profile.timeDeltas);
  const out: CpuProfileSummary = {
    totalUs: 0,
    selfByModule: new Map(),
    selfByFunction: new Map(),
    inclusive: new Map(),
    byProjectFile: new Map(),
  };
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const fromUs = profile.startTime + fromS * 1e6;
  const toUs = profile.startTime + toS * 1e6;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    if (t < fromUs || t > toUs) continue;
    const node = byId.get(profile.samples[i]!)!;
    if (node.callFrame.functionName === '(idle)') continue;
    const dt = weights[i]!;
    const own = nameOf(node.callFrame);
    out.totalUs += dt;
    add(out.selfByFunction, own.name, dt);
    add(out.selfByModule, own.module, dt);
    const seen = new Set<string>();
    let project: string | undefined;
    for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
      const { name, module } = nameOf(byId.get(id)!.callFrame);
      if (project === undefined && module.startsWith('src/') && !module.startsWith('src/lib/'))
        project = module;
      if (seen.has(name)) continue;
      seen.add(name);
      add(out.inclusive, name, dt);
    }
    add(out.byProjectFile, project ?? own.module, dt);
  }
  return out;
}

function main(): void {
  const [file, fromArg, toArg] = process.argv.slice(2);
  if (!file) {
    console.error('usage: cpu-profile-summary <file.cpuprofile> [fromS] [toS]');
    process.exit(2);
  }
  const top = Number(process.env.TOP ?? 30);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const summary = summarizeCpuProfile(
    profile,
    frameNamer(sourceMapsBesideScripts()),
    fromArg === undefined ? undefined : Number(fromArg),
    toArg === undefined ? undefined : Number(toArg),
  );
  const print = (title: string, m: Map<string, number>): void => {
    console.log(`\n${title}`);
    for (const [name, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      console.log(
        `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / summary.totalUs).toFixed(1).padStart(5)} %  ${name}`,
      );
    }
  };
  console.log(
    `${file}: ${(summary.totalUs / 1000).toFixed(0)} ms of CPU (not idle) in ` +
      `${fromArg ?? 0}–${toArg ?? ((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s`,
  );
  print('self time by module', summary.selfByModule);
  print('by the deepest project file on the stack (src/lib passed over)', summary.byProjectFile);
  print('self time by function', summary.selfByFunction);
  print('inclusive time by function', summary.inclusive);
}

// Run as a script (also through a symlinked path), not when a test imports it.
if (
  process.argv[1] &&
  existsSync(process.argv[1]) &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
)
  main();
