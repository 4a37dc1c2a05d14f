/**
 * Where a kubelet's CPU went, from a V8 `.cpuprofile` (the kubelet run with `--cpu-prof`, e.g.
 * through the density bench: BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"): self time by
 * module and by function, and inclusive time by function, optionally within a window of the
 * profile (seconds from its start, e.g. the 100-pod start, found with bench/loop-delay-probe.ts).
 *
 * Usage: node dist/bench/cpu-profile-summary.js <file.cpuprofile> [fromS] [toS]
 * Env: TOP (rows per table, 30).
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [file, fromArg, toArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: cpu-profile-summary <file.cpuprofile> [fromS] [toS]');
  process.exit(2);
}
const top = Number(process.env.TOP ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);

// Paths shortened to what says where: the project's own files, or the npm package.
function where(url: string): string {
  return url
    .replace(/^file:\/\/.*?\/(dist|src|node_modules)\//, '$1/')
    .replace(/^node_modules\/(@[^/]+\/[^/]+|[^/]+)\/.*/, 'npm:$1');
}
function frameName(f: CallFrame): string {
  return `${f.functionName || '(anonymous)'} ${where(f.url)}:${f.lineNumber + 1}`;
}

const fromUs = fromArg === undefined ? -Infinity : profile.startTime + Number(fromArg) * 1e6;
const toUs = toArg === undefined ? Infinity : profile.startTime + Number(toArg) * 1e6;
const selfByModule = new Map<string, number>();
const selfByFunction = new Map<string, number>();
const inclusive = new Map<string, number>();
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
let total = 0;
let t = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!;
  // A sample's weight is the time until the next one.
  const dt = profile.timeDeltas[i + 1] ?? 0;
  if (t < fromUs || t > toUs) continue;
  const node = byId.get(profile.samples[i]!)!;
  if (node.callFrame.functionName === '(idle)') continue;
  total += dt;
  add(selfByFunction, frameName(node.callFrame), dt);
  add(selfByModule, node.callFrame.url ? where(node.callFrame.url) : node.callFrame.functionName, dt);
  const seen = new Set<string>();
  for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
    const name = frameName(byId.get(id)!.callFrame);
    if (seen.has(name)) continue;
    seen.add(name);
    add(inclusive, name, dt);
  }
}

function print(title: string, m: Map<string, number>): void {
  console.log(`\n${title}`);
  for (const [name, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)} %  ${name}`,
    );
  }
}
console.log(
  `${file}: ${(total / 1000).toFixed(0)} ms of CPU (not idle) in ` +
    `${fromArg ?? 0}–${toArg ?? ((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s`,
);
print('self time by module', selfByModule);
print('self time by function', selfByFunction);
print('inclusive time by function', inclusive);
