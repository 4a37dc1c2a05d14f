/**
 * The chaos harness: many pods, then faults a node meets in real life (the
 * kubelet killed with SIGKILL, containerd killed likewise, a restart with hostile manifests in the
 * folder, an API server outage) and, after each, a count of what was lost:
 *
 * - Running pods: pods the node reports Running and ready whose container runs in containerd;
 * - container IDs changed: pods whose running container is not the one they had before;
 * - restarts: the growth of the pods' restart counts;
 * - emptyDir files changed: a file each data pod wrote into its emptyDir at start, with content the
 *   harness chose, read on the host: gone, different, or written anew (another inode or mtime).
 *
 * Anything but "all running, nothing changed" is a loss. The form (how many pods, kills, how long an
 * outage) comes from the environment, so CI runs a short form and `npm run chaos` the long one.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Container, Pod, Volume } from '../../src/api/core-v1.js';
import type { CriInspector } from '../helpers/cri-inspect.js';
import { sleep } from '../helpers/wait.js';

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const STACK_SCRIPT = path.join(repoRoot, 'scripts/runtime-stack.sh');

export interface ChaosForm {
  pods: number;
  kubeletKills: number;
  containerdKills: number;
  outageSeconds: number;
}

/** What CI runs (`npm test`): a few minutes on 2 cores. */
export const SHORT_FORM: ChaosForm = { pods: 30, kubeletKills: 3, containerdKills: 3, outageSeconds: 20 };
/** What `npm run chaos` runs. */
export const LONG_FORM: ChaosForm = { pods: 100, kubeletKills: 10, containerdKills: 6, outageSeconds: 300 };

/** The form from CHAOS_PODS, CHAOS_KUBELET_KILLS, CHAOS_CONTAINERD_KILLS and CHAOS_OUTAGE_S; the short form for what is unset. */
export function chaosFormFromEnv(env: NodeJS.ProcessEnv = process.env): ChaosForm {
  const count = (name: string, fallback: number, min: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name}=${raw}: want an integer >= ${min}`);
    return n;
  };
  return {
    pods: count('CHAOS_PODS', SHORT_FORM.pods, 1),
    kubeletKills: count('CHAOS_KUBELET_KILLS', SHORT_FORM.kubeletKills, 0),
    containerdKills: count('CHAOS_CONTAINERD_KILLS', SHORT_FORM.containerdKills, 0),
    outageSeconds: count('CHAOS_OUTAGE_S', SHORT_FORM.outageSeconds, 0),
  };
}

const DATA_FILE = 'seed';
const EMPTY_DIR_PLUGIN = 'kubernetes.io~empty-dir';

/** Every third pod has emptyDir data; every fourth a liveness probe, and others a readiness probe. */
export function hasData(index: number): boolean {
  return index % 3 === 0;
}

export function chaosPodName(index: number): string {
  return `chaos-${String(index).padStart(3, '0')}`;
}

/**
 * Pod `index` of the run: a sleeping busybox; data pods write `seed` (the harness's content) into
 * their emptyDir when it is missing, so a restarted container keeps the file and a recreated pod
 * writes a new one. Probes are generous with time: a loaded machine must not fail them.
 */
export function chaosPod(namespace: string, index: number, seed: string): Pod {
  const data = hasData(index);
  const script = data
    ? `[ -f /data/${DATA_FILE} ] || printf %s "$SEED" > /data/${DATA_FILE}; exec sleep 2147483647`
    : 'exec sleep 2147483647';
  const container: Container = {
    name: 'main',
    image: 'busybox',
    imagePullPolicy: 'IfNotPresent',
    command: ['sh', '-c', script],
    env: [{ name: 'SEED', value: seed }],
  };
  const probe = { periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 };
  if (index % 4 === 0) {
    container.livenessProbe = {
      exec: { command: data ? ['test', '-f', `/data/${DATA_FILE}`] : ['true'] },
      ...probe,
    };
  } else if (index % 4 === 2) {
    container.readinessProbe = { exec: { command: ['true'] }, ...probe };
  }
  const volumes: Volume[] = [];
  if (data) {
    volumes.push({ name: 'data', emptyDir: {} });
    container.volumeMounts = [{ name: 'data', mountPath: '/data' }];
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: chaosPodName(index), namespace, labels: { app: 'chaos' } },
    spec: { terminationGracePeriodSeconds: 1, containers: [container], volumes },
  };
}

/** The content pod `index` writes, unique to the run. */
export function seedsFor(pods: number): string[] {
  const runId = randomBytes(6).toString('hex');
  return Array.from({ length: pods }, (_, i) => `${chaosPodName(i)}-${runId}`);
}

export interface SeedFile {
  content: string;
  ino: number;
  mtimeMs: number;
}

/** One pod as seen at one moment, keyed by the manifest's name (chaos-007). */
export interface PodSnapshot {
  uid: string;
  /** Running, ready, and its container runs in containerd under the ID the status names. */
  healthy: boolean;
  /** The running container of `main` in containerd. */
  containerId: string;
  restartCount: number;
  seed: SeedFile | undefined;
  /** Why it is not healthy, for the report. */
  problem: string;
}

export type NodeSnapshot = Map<string, PodSnapshot>;

/** Where the pods' status comes from: /pods in standalone mode, the API server in cluster mode. */
export type PodLister = () => Promise<Pod[]>;

export interface Tally {
  stage: string;
  pods: number;
  running: number;
  containerIdsChanged: number;
  restarts: number;
  emptyDirFilesChanged: number;
  settled: boolean;
  settleMs: number;
  /** The first few pods that are not as they were, with why. */
  examples: string[];
}

export function losses(t: Tally): string[] {
  const out: string[] = [];
  if (!t.settled) out.push('the node did not settle');
  if (t.running !== t.pods) out.push(`${t.pods - t.running} pod(s) not running`);
  if (t.containerIdsChanged) out.push(`${t.containerIdsChanged} container ID(s) changed`);
  if (t.restarts) out.push(`${t.restarts} restart(s)`);
  if (t.emptyDirFilesChanged) out.push(`${t.emptyDirFilesChanged} emptyDir file(s) changed`);
  return out;
}

export function formatTally(t: Tally): string {
  const base =
    `chaos: ${t.stage.padEnd(28)} | Running pods ${t.running}/${t.pods} | container IDs changed ` +
    `${t.containerIdsChanged} | restarts ${t.restarts} | emptyDir files changed ${t.emptyDirFilesChanged}` +
    ` | ${t.settled ? 'settled' : 'NOT settled'} in ${(t.settleMs / 1000).toFixed(1)} s`;
  return t.examples.length ? `${base}\n  ${t.examples.join('\n  ')}` : base;
}

/**
 * Watches the chaos pods of one node: the status its lister reports, containerd's containers, and
 * the data files under the kubelet's root dir.
 */
export class ChaosObserver {
  constructor(
    private readonly cri: CriInspector,
    private readonly namespace: string,
    private readonly list: PodLister,
    private readonly rootDir: string,
    private readonly seeds: string[],
  ) {}

  /** Manifest name → what the node shows now. A pod the lister does not show is absent. */
  async observe(): Promise<NodeSnapshot> {
    const [pods, containers] = await Promise.all([
      this.list().catch(() => [] as Pod[]),
      this.cri.containers(this.namespace).catch(() => []),
    ]);
    const runningByPod = new Map<string, string[]>();
    for (const c of containers) {
      if (c.state !== 'CONTAINER_RUNNING' || c.labels['io.kubernetes.container.name'] !== 'main') continue;
      const podName = c.labels['io.kubernetes.pod.name'] ?? '';
      runningByPod.set(podName, [...(runningByPod.get(podName) ?? []), c.id]);
    }
    const out: NodeSnapshot = new Map();
    for (const [index] of this.seeds.entries()) {
      const name = chaosPodName(index);
      // Static pods carry the node's name after the manifest's.
      const pod = pods.find((p) => p.metadata.name === name || p.metadata.name?.startsWith(`${name}-`));
      if (!pod) continue;
      const fullName = pod.metadata.name ?? '';
      const uid = pod.metadata.uid ?? '';
      const cs = pod.status?.containerStatuses?.find((c) => c.name === 'main');
      const running = runningByPod.get(fullName) ?? [];
      const statusId = (cs?.containerID ?? '').replace(/^\w+:\/\//, '');
      let problem = '';
      if (pod.status?.phase !== 'Running') problem = `phase ${pod.status?.phase ?? 'unknown'}`;
      else if (!cs?.state?.running) problem = `container ${JSON.stringify(cs?.state ?? {})}`;
      else if (!cs.ready) problem = 'not ready';
      else if (running.length !== 1) problem = `${running.length} running containers in containerd`;
      else if (running[0] !== statusId) problem = 'status names another container';
      out.set(name, {
        uid,
        healthy: problem === '',
        containerId: running[0] ?? '',
        restartCount: cs?.restartCount ?? 0,
        seed: hasData(index) ? await this.readSeed(uid) : undefined,
        problem,
      });
    }
    return out;
  }

  private async readSeed(uid: string): Promise<SeedFile | undefined> {
    const file = path.join(this.rootDir, 'pods', uid, 'volumes', EMPTY_DIR_PLUGIN, 'data', DATA_FILE);
    try {
      const [content, st] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
      return { content, ino: st.ino, mtimeMs: st.mtimeMs };
    } catch {
      return undefined;
    }
  }

  /**
   * Waits (bounded) until every pod is healthy, with the same containers, for holdMs in a row; then
   * returns that snapshot. On timeout it returns the last one, settled false, for the tally to show.
   */
  async settle(
    timeoutMs: number,
    holdMs: number,
  ): Promise<{ snapshot: NodeSnapshot; settled: boolean; ms: number }> {
    const started = Date.now();
    let stableSince = 0;
    let previous = '';
    let last: NodeSnapshot = new Map();
    while (Date.now() - started < timeoutMs) {
      last = await this.observe();
      const all = last.size === this.seeds.length && [...last.values()].every((p) => p.healthy);
      const ids = [...last.values()].map((p) => p.containerId).join(',');
      if (all && ids === previous) {
        if (Date.now() - stableSince >= holdMs)
          return { snapshot: last, settled: true, ms: Date.now() - started };
      } else {
        stableSince = Date.now();
      }
      previous = all ? ids : '';
      await sleep(1000);
    }
    return { snapshot: last, settled: false, ms: Date.now() - started };
  }

  /** The baseline's own check: every data pod's file holds what the harness gave it. */
  seedProblems(snapshot: NodeSnapshot): string[] {
    const out: string[] = [];
    for (const [index, seed] of this.seeds.entries()) {
      if (!hasData(index)) continue;
      const got = snapshot.get(chaosPodName(index))?.seed?.content;
      if (got !== seed)
        out.push(`${chaosPodName(index)}: emptyDir file holds ${JSON.stringify(got)}, not ${seed}`);
    }
    return out;
  }

  tally(stage: string, baseline: NodeSnapshot, now: NodeSnapshot, settled: boolean, settleMs: number): Tally {
    const t: Tally = {
      stage,
      pods: this.seeds.length,
      running: 0,
      containerIdsChanged: 0,
      restarts: 0,
      emptyDirFilesChanged: 0,
      settled,
      settleMs,
      examples: [],
    };
    const note = (name: string, what: string) => {
      if (t.examples.length < 5) t.examples.push(`${name}: ${what}`);
    };
    for (const [index] of this.seeds.entries()) {
      const name = chaosPodName(index);
      const before = baseline.get(name);
      const after = now.get(name);
      if (after?.healthy) t.running++;
      else note(name, after ? after.problem : 'gone from the node');
      if (!before) continue;
      if (after?.containerId !== before.containerId) {
        t.containerIdsChanged++;
        note(
          name,
          `container ${before.containerId.slice(0, 12)} → ${after?.containerId.slice(0, 12) || 'none'}`,
        );
      }
      t.restarts += Math.max(0, (after?.restartCount ?? 0) - before.restartCount);
      if (before.seed) {
        const s = after?.seed;
        if (
          !s ||
          s.content !== before.seed.content ||
          s.ino !== before.seed.ino ||
          s.mtimeMs !== before.seed.mtimeMs
        ) {
          t.emptyDirFilesChanged++;
          note(name, s ? 'emptyDir file rewritten' : 'emptyDir file gone');
        }
      }
    }
    return t;
  }
}

/** `kill -9` of the stack's containerd (scripts/runtime-stack.sh crash): shims and containers live on. */
export async function crashContainerd(): Promise<void> {
  await run('bash', [STACK_SCRIPT, 'crash'], { timeout: 60_000 });
}

/** Starts the stack's containerd again (idempotent). */
export async function startContainerd(): Promise<void> {
  await run('bash', [STACK_SCRIPT, 'up'], { timeout: 180_000 });
}

export interface HealthzAnswer {
  /** How long /healthz took to answer 200, or Infinity when it did not within the timeout. */
  ms: number;
  /** What it said instead of 200, for the report. */
  failure: string;
  /** The verbose answer's body ('' when none came). */
  body: string;
}

export async function probeHealthz(port: number, timeoutMs = 5000): Promise<HealthzAnswer> {
  const started = Date.now();
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz?verbose`, {
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = await res.text();
    if (res.status === 200) return { ms: Date.now() - started, failure: '', body };
    return { ms: Infinity, failure: `${res.status}: ${body.slice(0, 500)}`, body };
  } catch (err) {
    return { ms: Infinity, failure: err instanceof Error ? err.message : String(err), body: '' };
  }
}

/**
 * Manifests a careless or hostile user may leave in the folder: each
 * must be refused alone, without hanging the kubelet or touching any other pod. Their names sort
 * before the chaos pods' ("bad-" < "chaos-"), so that one which aborts a batch would take the good
 * pods after it down too.
 */
export function hostileManifests(namespace: string): Record<string, string> {
  const pod = (name: string, spec: string, meta = '') =>
    [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      `  name: ${name}`,
      `  namespace: ${namespace}`,
      ...(meta ? [meta] : []),
      'spec:',
      '  terminationGracePeriodSeconds: 1',
      spec,
      '',
    ].join('\n');
  const busybox = (extra = '', command = "['sh', '-c', 'exec sleep 3600']") =>
    [
      '  containers:',
      '  - name: main',
      '    image: busybox',
      '    imagePullPolicy: IfNotPresent',
      `    command: ${command}`,
      ...(extra ? [extra] : []),
    ].join('\n');
  return {
    'bad-negative-period.yaml': pod(
      'bad-negative-period',
      busybox("    livenessProbe:\n      exec:\n        command: ['true']\n      periodSeconds: -1"),
    ),
    'bad-memory-lots.yaml': pod(
      'bad-memory-lots',
      `  nodeSelector:\n    chaos.example/nowhere: 'true'\n${busybox('    resources:\n      limits:\n        memory: lots')}`,
    ),
    'bad-uid.yaml': pod('bad-uid', busybox(), "  uid: '../../x'"),
    'bad-command-string.yaml': pod('bad-command-string', busybox('', "'sleep 3600'")),
  };
}

export const HOSTILE_POD_NAMES = ['bad-negative-period', 'bad-memory-lots', 'bad-uid', 'bad-command-string'];
