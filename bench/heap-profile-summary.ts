/**
 * Where a kubelet's allocations came from, from a sampling heap profile (`.heapprofile`, e.g.
 * bench/heap-sampler.ts's, which keeps the samples of collected objects): bytes by the allocating
 * function, by the deepest project file on the stack (as bench/cpu-profile-summary.ts groups CPU),
 * and inclusive by function. Frames of the bundle are named through its source map.
 *
 * Usage: node dist/bench/heap-profile-summary.js <file.heapprofile> [pods]
 * With pods, each table also shows bytes per pod. Env: TOP (rows per table, 30).
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  frameNamer,
  sourceMapsBesideScripts,
  type CallFrame,
  type FrameName,
} from './cpu-profile-summary.js';

export interface HeapProfileNode {
  callFrame: CallFrame;
  /** The bytes this frame allocated itself, scaled by V8 from its samples. */
  selfSize: number;
  id: number;
  children: HeapProfileNode[];
}

export interface HeapProfile {
  head: HeapProfileNode;
}

export interface HeapProfileSummary {
  totalBytes: number;
  selfByFunction: Map<string, number>;
  inclusive: Map<string, number>;
  /** Each frame's bytes to the deepest project file on its stack (helpers of src/lib/ passed over). */
  byProjectFile: Map<string, number>;
  /** The same, to the deepest project function: which code of ours asked for the bytes. */
  byProjectFunction: Map<string, number>;
}

export function summarizeHeapProfile(
  profile: HeapProfile,
  nameOf: (f: CallFrame) => FrameName,
): HeapProfileSummary {
  const out: HeapProfileSummary = {
    totalBytes: 0,
    selfByFunction: new Map(),
    inclusive: new Map(),
    byProjectFile: new Map(),
    byProjectFunction: new Map(),
  };
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const stack: FrameName[] = [];
  const visit = (node: HeapProfileNode): void => {
    stack.push(nameOf(node.callFrame));
    const bytes = node.selfSize;
    if (bytes > 0) {
      out.totalBytes += bytes;
      const own = stack[stack.length - 1]!;
      add(out.selfByFunction, own.name, bytes);
      let project: FrameName | undefined;
      for (let i = stack.length - 1; i >= 0 && !project; i--) {
        const m = stack[i]!.module;
        if (m.startsWith('src/') && !m.startsWith('src/lib/')) project = stack[i];
      }
      add(out.byProjectFile, project?.module ?? own.module, bytes);
      add(out.byProjectFunction, project?.name ?? own.name, bytes);
      for (const name of new Set(stack.map((f) => f.name))) add(out.inclusive, name, bytes);
    }
    for (const c of node.children) visit(c);
    stack.pop();
  };
  visit(profile.head);
  return out;
}

function main(): void {
  const [file, podsArg] = process.argv.slice(2);
  if (!file) {
    console.error('usage: heap-profile-summary <file.heapprofile> [pods]');
    process.exit(2);
  }
  const top = Number(process.env.TOP ?? 30);
  const pods = podsArg === undefined ? undefined : Number(podsArg);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as HeapProfile;
  const summary = summarizeHeapProfile(profile, frameNamer(sourceMapsBesideScripts()));
  const mib = (b: number) => (b / 2 ** 20).toFixed(1);
  const print = (title: string, m: Map<string, number>): void => {
    console.log(`\n${title}`);
    for (const [name, bytes] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      const perPod = pods ? `${(bytes / pods / 1024).toFixed(1).padStart(7)} KiB/pod ` : '';
      console.log(
        `${mib(bytes).padStart(8)} MiB ${((100 * bytes) / summary.totalBytes).toFixed(1).padStart(5)} % ${perPod} ${name}`,
      );
    }
  };
  console.log(`allocated (sampled, scaled): ${mib(summary.totalBytes)} MiB`);
  print('by project file (deepest src/ frame, src/lib passed over)', summary.byProjectFile);
  print('by project function', summary.byProjectFunction);
  print('self, by function', summary.selfByFunction);
  print('inclusive, by function', summary.inclusive);
}

// Run as a script (also through a symlinked path), not when a test imports it.
if (
  process.argv[1] &&
  existsSync(process.argv[1]) &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
)
  main();
