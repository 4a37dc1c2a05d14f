/**
 * The folders and files each pod start makes, and what each kind of file call costs: the CPU of the
 * whole process (process.cpuUsage: the main thread, libuv's pool threads, V8's helpers), in µs.
 *
 * - "calls": one file call, made the way the code can make it: through fs/promises (a promise and
 *   a round trip to a libuv pool thread), with callbacks (the round trip without the promise), or
 *   synchronously (fs.*Sync: the system call on the main thread), on cgroupfs, a tmpfs and the disk
 *   the bench folder is on. Each case runs BENCH_CALLS times, BENCH_CALL_CONCURRENCY at once.
 * - "pod": the kubelet's own code for each pod start, BENCH_PODS pods at once as a burst of pods
 *   starts (µs per pod): the pod's data dirs (its first sync, then 3 more), its cgroup (made under
 *   a QoS tier of the bench's own cgroup root, then found 3 more times), the service account token
 *   volume (the emptyDir wrapper, the medium checks, the tmpfs's mount and the atomic writer's first
 *   write, then 3 remounts with nothing changed), a container's start (its restart count from its
 *   log folder, its config: the log folder and the termination message file), and the hosts file.
 *   The tmpfs is mounted as a kubelet mounts it, through the mount helper (started beforehand):
 *   the figures hold the kubelet's side of that (a pipe each way), not the helper's shell nor
 *   mount(8), which are other processes.
 * - "count": the same stages, one round, not timed: the file calls each makes per pod, by call and
 *   by the function that made it (bench/file-call-count.ts), to stderr; the totals on stdout.
 *
 * Figures: the median over BENCH_ROUNDS rounds (min and max beside it). Compare two trees by running
 * this file in each, alternating, under one lock (docs/benchmarks.md shows the command).
 *
 * Run (root: cgroups and mounts): node --import tsx bench/pod-file-work.ts  [calls|pod|count]
 * Env: BENCH_ROUNDS (default 7, quick 2), BENCH_PODS (default 100), BENCH_CALLS (default 2000),
 *      BENCH_CALL_CONCURRENCY (default 8), BENCH_FILEWORK_DIR (a folder on the disk under test;
 *      default a new one in /var/tmp).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Pod } from '../src/api/core-v1.js';
import { CgroupManager } from '../src/cm/cgroup-manager.js';
import { realCgroupFs } from '../src/cm/cgroup-fs.js';
import { newCgroupName, parseCgroupfsToCgroupName } from '../src/cm/cgroup-name.js';
import { detectCgroupSubsystems } from '../src/cm/cgroup-subsystems.js';
import { PodContainerManager } from '../src/cm/pod-container-manager.js';
import { qosContainersInfo } from '../src/cm/qos-container-manager.js';
import { makePodDataDirs } from '../src/kubelet/pod-data-dirs.js';
import { generateContainerConfig, type ContainerConfigOptions } from '../src/kuberuntime/container-config.js';
import { calcRestartCountByLogDir } from '../src/kuberuntime/container-status.js';
import { makeHostsMount } from '../src/kuberuntime/etc-hosts.js';
import { buildContainerLogsDirectory } from '../src/kuberuntime/sandbox-config.js';
import { realClock } from '../src/lib/clock.js';
import type { Payload } from '../src/volume/atomic-writer.js';
import { DataVolumeMounter } from '../src/volume/data-volume.js';
import { MountHelper } from '../src/volume/mount-helper.js';
import { MOUNT_COMMAND_TIMEOUT_MS, SystemMounter } from '../src/volume/mounter.js';
import { PROJECTED_PLUGIN_NAME } from '../src/volume/projected.js';
import type { VolumeHost } from '../src/volume/volume-plugin.js';
import { podVolumeDir } from '../src/volume/volume-paths.js';
import { countFileCalls } from './file-call-count.js';
import { emit, envNumber, median, quickMode, say } from './report.js';

const BENCH = 'pod-file-work';
const ROUNDS = envNumber('BENCH_ROUNDS', quickMode() ? 2 : 7);
const PODS = envNumber('BENCH_PODS', 100);
const CALLS = envNumber('BENCH_CALLS', quickMode() ? 200 : 2000);
const CALL_CONCURRENCY = Math.max(1, envNumber('BENCH_CALL_CONCURRENCY', 8));
const REMOUNTS = 3;
// A pod start syncs about 4 times (docs/benchmarks.md).
const LATER_SYNCS = 3;
const TOKEN_VOLUME = 'kube-api-access-bench';

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** The whole process's CPU µs while fn runs, per item. */
async function cpuPer(items: number, fn: () => Promise<unknown>): Promise<number> {
  const before = cpuMicros();
  await fn();
  return (cpuMicros() - before) / items;
}

/** Runs task(0..n-1), at most `concurrency` at a time. */
async function pool(n: number, concurrency: number, task: (i: number) => unknown): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, lane));
}

function report(results: Map<string, number[]>, n: number): void {
  for (const [metric, values] of results) {
    emit({
      bench: BENCH,
      n,
      metric,
      value: median(values),
      min: Math.min(...values),
      max: Math.max(...values),
      rounds: values.length,
    });
  }
}

function record(results: Map<string, number[]>, metric: string, value: number): void {
  let values = results.get(metric);
  if (!values) results.set(metric, (values = []));
  values.push(value);
}

// ---- where the bench works ------------------------------------------------------------------------

interface Places {
  dir: string;
  tmpfs: string;
  cgroupRoot: string;
  cgroups: CgroupManager;
  /** A folder of the bench's own in the first v1 hierarchy (or the v2 tree). */
  cgroupDir: string;
}

async function setUpPlaces(): Promise<Places> {
  const base = process.env.BENCH_FILEWORK_DIR ?? '/var/tmp';
  const dir = fs.mkdtempSync(path.join(base, 'tskubelet-bench-filework-'));
  const tmpfs = path.join(dir, 'tmpfs');
  fs.mkdirSync(tmpfs);
  execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', tmpfs]);
  const subsystems = await detectCgroupSubsystems(realCgroupFs());
  const cgroups = new CgroupManager({ subsystems, driver: 'cgroupfs' });
  const cgroupRoot = `/tskubelet-bench-filework-${process.pid}`;
  await cgroups.create(parseCgroupfsToCgroupName(`${cgroupRoot}/kubepods/besteffort`));
  const first = subsystems.version === 'v2' ? subsystems.root : subsystems.hierarchies[0]!.mountPoint;
  return { dir, tmpfs, cgroupRoot, cgroups, cgroupDir: path.join(first, cgroupRoot) };
}

async function tearDownPlaces(p: Places): Promise<void> {
  execFileSync('umount', [p.tmpfs]);
  fs.rmSync(p.dir, { recursive: true, force: true });
  const result = await p.cgroups.destroy(parseCgroupfsToCgroupName(p.cgroupRoot));
  if (!result.removed) say(`cgroups left behind: ${result.busy.join(', ')}`);
}

// ---- calls ----------------------------------------------------------------------------------------

type Style = 'promises' | 'callback' | 'sync';

interface CallCase {
  /** `<what> <file system>` */
  name: string;
  /** Runs before each measured batch; i is the call's index. */
  prepare?: (i: number) => void;
  call: Partial<Record<Style, (i: number) => unknown>>;
  cleanup?: (i: number) => void;
}

function callbackCall<T>(fn: (cb: (err: Error | null, v?: T) => void) => void): Promise<T | undefined> {
  return new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

function callCases(p: Places): CallCase[] {
  const cases: CallCase[] = [];
  const roots: [string, string][] = [
    ['cgroupfs', p.cgroupDir],
    ['tmpfs', p.tmpfs],
    ['disk', p.dir],
  ];
  for (const [fsName, root] of roots) {
    const existing = fsName === 'cgroupfs' ? path.join(root, 'cgroup.procs') : path.join(root, 'present');
    if (fsName !== 'cgroupfs') fs.writeFileSync(existing, 'x');
    cases.push({
      name: `stat, found, ${fsName}`,
      call: {
        promises: () => fsp.stat(existing),
        callback: () => callbackCall((cb) => fs.stat(existing, cb)),
        sync: () => fs.statSync(existing),
      },
    });
    const missing = path.join(root, 'missing');
    cases.push({
      name: `stat, missing, ${fsName}`,
      call: {
        promises: () => fsp.stat(missing).catch(() => undefined),
        callback: () => callbackCall((cb) => fs.stat(missing, cb)).catch(() => undefined),
        sync: () => fs.statSync(missing, { throwIfNoEntry: false }),
      },
    });
    const dirOf = (i: number) => path.join(root, `d${i}`);
    cases.push({
      name: `mkdir, ${fsName}`,
      call: {
        promises: (i) => fsp.mkdir(dirOf(i), { mode: 0o755 }),
        callback: (i) => callbackCall((cb) => fs.mkdir(dirOf(i), { mode: 0o755 }, cb)),
        sync: (i) => fs.mkdirSync(dirOf(i), { mode: 0o755 }),
      },
      cleanup: (i) => fs.rmdirSync(dirOf(i)),
    });
  }
  const cpuShares = path.join(p.cgroupDir, 'cpu.shares');
  if (fs.existsSync(cpuShares)) {
    const flags = fs.constants.O_WRONLY | fs.constants.O_TRUNC;
    cases.push({
      name: 'write a value (cpu.shares), cgroupfs',
      call: {
        promises: () => fsp.writeFile(cpuShares, '2', { flag: flags }),
        callback: () =>
          callbackCall<void>((cb) =>
            fs.open(cpuShares, flags, (err, fd) => {
              if (err) return cb(err);
              fs.write(fd, '2', (werr) => fs.close(fd, (cerr) => cb(werr ?? cerr)));
            }),
          ),
        sync: () => {
          const fd = fs.openSync(cpuShares, flags);
          try {
            fs.writeSync(fd, '2');
          } finally {
            fs.closeSync(fd);
          }
        },
      },
    });
    cases.push({
      name: 'read a value (cpu.shares), cgroupfs',
      call: {
        promises: () => fsp.readFile(cpuShares, 'utf8'),
        callback: () => callbackCall((cb) => fs.readFile(cpuShares, 'utf8', cb)),
        sync: () => fs.readFileSync(cpuShares, 'utf8'),
      },
    });
  }
  for (const [fsName, root] of roots.slice(1)) {
    const file = (i: number) => path.join(root, `f${i}`);
    const token = Buffer.alloc(1000, 'x');
    cases.push({
      name: `create a 1 KB file, ${fsName}`,
      call: {
        promises: (i) => fsp.writeFile(file(i), token, { mode: 0o644 }),
        callback: (i) => callbackCall<void>((cb) => fs.writeFile(file(i), token, { mode: 0o644 }, cb)),
        sync: (i) => fs.writeFileSync(file(i), token, { mode: 0o644 }),
      },
      cleanup: (i) => fs.unlinkSync(file(i)),
    });
    cases.push({
      name: `read a 1 KB file, ${fsName}`,
      prepare: (i) => fs.writeFileSync(file(i), token),
      call: {
        promises: (i) => fsp.readFile(file(i)),
        callback: (i) => callbackCall((cb) => fs.readFile(file(i), cb)),
        sync: (i) => fs.readFileSync(file(i)),
      },
      cleanup: (i) => fs.unlinkSync(file(i)),
    });
    const link = (i: number) => path.join(root, `l${i}`);
    cases.push({
      name: `symlink, ${fsName}`,
      call: {
        promises: (i) => fsp.symlink('..data/token', link(i)),
        callback: (i) => callbackCall<void>((cb) => fs.symlink('..data/token', link(i), cb)),
        sync: (i) => fs.symlinkSync('..data/token', link(i)),
      },
      cleanup: (i) => fs.unlinkSync(link(i)),
    });
    cases.push({
      name: `readlink, ${fsName}`,
      prepare: (i) => fs.symlinkSync('..data/token', link(i)),
      call: {
        promises: (i) => fsp.readlink(link(i)),
        callback: (i) => callbackCall((cb) => fs.readlink(link(i), cb)),
        sync: (i) => fs.readlinkSync(link(i)),
      },
      cleanup: (i) => fs.unlinkSync(link(i)),
    });
  }
  return cases;
}

async function benchCalls(p: Places): Promise<void> {
  say(`calls: ${CALLS} of each, ${CALL_CONCURRENCY} at once, ${ROUNDS} rounds`);
  const results = new Map<string, number[]>();
  const cases = callCases(p);
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) {
      for (const [style, call] of Object.entries(c.call)) {
        for (let i = 0; i < CALLS; i++) c.prepare?.(i);
        const us = await cpuPer(CALLS, () => pool(CALLS, CALL_CONCURRENCY, call));
        for (let i = 0; i < CALLS; i++) c.cleanup?.(i);
        if (round > 0) record(results, `${c.name}, ${style}: cpu_us`, us);
      }
    }
  }
  report(results, CALL_CONCURRENCY);
}

// ---- pods -----------------------------------------------------------------------------------------

function benchPod(uid: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `bench-${uid.slice(0, 8)}`, namespace: 'default', uid },
    spec: { containers: [{ name: 'sleep', image: 'busybox' }] },
  };
}

function tokenPayload(): Payload {
  // A bound token's JWT is about 1 KB; a cluster's CA about 1.1 KB.
  return new Map([
    ['token', { data: Buffer.alloc(1000, 'e'), mode: 0o644 }],
    ['ca.crt', { data: Buffer.alloc(1100, 'c'), mode: 0o644 }],
    ['namespace', { data: Buffer.from('default'), mode: 0o644 }],
  ]);
}

interface PodRound {
  stages: [string, (i: number) => Promise<unknown>][];
  cleanUp(): Promise<void>;
}

/** The mount helper's two shells, started before anything is measured. */
async function startedMountHelper(): Promise<MountHelper> {
  const helper = new MountHelper();
  await Promise.all([helper.run('true', [], 10_000), helper.run('true', [], 10_000)]);
  return helper;
}

function podRound(p: Places, helper: MountHelper): PodRound {
  const rootDir = path.join(p.dir, 'kubelet');
  const host = {
    rootDir,
    nodeName: 'bench',
    clock: realClock,
    // A mounter of the round's own: what it learnt of earlier rounds' mounts is not carried over.
    mounter: new SystemMounter(MOUNT_COMMAND_TIMEOUT_MS, '/proc/self/mountinfo', helper),
    nodeAllocatable: { cpu: '2', memory: '4Gi' },
    objectCacheTtlMs: 0,
  } as unknown as VolumeHost;
  const podCgroups = new PodContainerManager({
    cgroupManager: p.cgroups,
    qos: qosContainersInfo(newCgroupName(parseCgroupfsToCgroupName(p.cgroupRoot), 'kubepods')),
    podPidsLimit: 0,
    enforceCPULimits: true,
    cpuCFSQuotaPeriodUs: 100_000,
  });
  const signal = new AbortController().signal;
  const configOptions: ContainerConfigOptions = {
    podLogsDir: path.join(p.dir, 'pod-logs'),
    rootDir,
    nodeName: 'bench',
    hostIPs: ['192.168.1.10'],
    nodeAllocatable: { cpu: '2', memory: '4Gi' },
    memoryCapacityBytes: 4 * 1024 ** 3,
    cpuCFSQuota: true,
    cpuCFSQuotaPeriodUs: 100_000,
    seccompDefault: false,
    envSources: {},
  };
  const pods = Array.from({ length: PODS }, () => benchPod(randomUUID()));
  const mounters = pods.map(
    (pod) =>
      new DataVolumeMounter(host, PROJECTED_PLUGIN_NAME, pod, TOKEN_VOLUME, 'memory', () =>
        Promise.resolve(tokenPayload()),
      ),
  );
  const stages: [string, (i: number) => Promise<unknown>][] = [
    [
      'pod data dirs, first sync',
      // As the kubelet's first sync of a pod asks (a base without the hint leaves it out).
      (i) => makePodDataDirs(rootDir, pods[i]!.metadata.uid!, undefined, { likelyNew: true }),
    ],
    [
      `pod data dirs, ${LATER_SYNCS} syncs more`,
      async (i) => {
        for (let s = 0; s < LATER_SYNCS; s++) await makePodDataDirs(rootDir, pods[i]!.metadata.uid!);
      },
    ],
    [
      'pod cgroup, made then found 3 times',
      async (i) => {
        await podCgroups.ensureExists(pods[i]!);
        for (let s = 0; s < 3; s++) await podCgroups.exists(pods[i]!);
      },
    ],
    ['token volume, first setUp', (i) => mounters[i]!.setUp({ remount: false, signal })],
    [
      `token volume, ${REMOUNTS} remounts`,
      async (i) => {
        for (let s = 0; s < REMOUNTS; s++) await mounters[i]!.setUp({ remount: true, signal });
      },
    ],
    [
      'container start: restart count from its log folder, its config (log folder, termination message file)',
      async (i) => {
        const pod = pods[i]!;
        const container = pod.spec.containers[0]!;
        const dir = buildContainerLogsDirectory(configOptions.podLogsDir, pod, container.name);
        const restartCount = await calcRestartCountByLogDir(dir);
        await generateContainerConfig(
          {
            pod,
            container,
            restartCount,
            imageRef: 'sha256:bench',
            image: undefined,
            podIP: '10.244.0.10',
            podIPs: ['10.244.0.10'],
          },
          configOptions,
        );
      },
    ],
    [
      'hosts file',
      (i) =>
        makeHostsMount(pods[i]!, {
          podDir: path.join(rootDir, 'pods', pods[i]!.metadata.uid!),
          podIPs: ['10.244.0.10'],
          hostname: pods[i]!.metadata.name!,
          hostDomain: '',
          nodeHostsFile: '/etc/hosts',
        }),
    ],
  ];
  return {
    stages,
    cleanUp: async () => {
      for (const pod of pods) {
        const uid = pod.metadata.uid!;
        execFileSync('umount', [podVolumeDir(rootDir, uid, PROJECTED_PLUGIN_NAME, TOKEN_VOLUME)]);
        fs.rmSync(path.join(rootDir, 'pods', uid), { recursive: true, force: true });
        fs.rmSync(path.dirname(buildContainerLogsDirectory(configOptions.podLogsDir, pod, 'sleep')), {
          recursive: true,
          force: true,
        });
        await podCgroups.destroy(podCgroups.getPodContainerName(pod).name);
      }
    },
  };
}

async function benchPods(p: Places, helper: MountHelper): Promise<void> {
  say(`pod: ${PODS} pods at once, ${ROUNDS} rounds`);
  const results = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS + 1; round++) {
    const r = podRound(p, helper);
    let total = 0;
    for (const [name, stage] of r.stages) {
      const us = await cpuPer(PODS, () => Promise.all(Array.from({ length: PODS }, (_, i) => stage(i))));
      total += us;
      // The first round warms the code up.
      if (round > 0) record(results, `${name}: cpu_us_per_pod`, us);
    }
    if (round > 0) record(results, 'all of it: cpu_us_per_pod', total);
    await r.cleanUp();
  }
  report(results, PODS);
}

/** The file calls of each stage per pod, by call and the function that made it (one round, not timed). */
async function countPods(p: Places, helper: MountHelper): Promise<void> {
  say(`count: ${PODS} pods at once, one round`);
  const r = podRound(p, helper);
  const totals = { pool: 0, sync: 0 };
  for (const [name, stage] of r.stages) {
    const counter = countFileCalls();
    try {
      await Promise.all(Array.from({ length: PODS }, (_, i) => stage(i)));
    } finally {
      counter.stop();
    }
    const counts = [...counter.counts()].sort((a, b) => b[1] - a[1]);
    say(name);
    for (const kind of ['pool', 'sync'] as const) {
      const calls = counts.reduce((sum, [key, n]) => (key.startsWith(kind) ? sum + n : sum), 0) / PODS;
      totals[kind] += calls;
      emit({ bench: BENCH, n: PODS, metric: `${name}: ${kind}_calls_per_pod`, value: calls });
    }
    for (const [key, n] of counts) say(`  ${(n / PODS).toFixed(2).padStart(6)}  ${key}`);
  }
  for (const kind of ['pool', 'sync'] as const)
    emit({ bench: BENCH, n: PODS, metric: `all of it: ${kind}_calls_per_pod`, value: totals[kind] });
  await r.cleanUp();
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0)
    throw new Error('pod-file-work needs root: it makes cgroups and mounts tmpfs');
  const which = process.argv[2];
  if (which !== undefined && which !== 'calls' && which !== 'pod' && which !== 'count')
    throw new Error(`usage: ${BENCH} [calls|pod|count]`);
  const places = await setUpPlaces();
  const helper = await startedMountHelper();
  try {
    if (which === 'count') await countPods(places, helper);
    else {
      if (which !== 'pod') await benchCalls(places);
      if (which !== 'calls') await benchPods(places, helper);
    }
  } finally {
    await helper.close();
    await tearDownPlaces(places);
  }
}

await main();
