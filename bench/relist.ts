/**
 * GenericPLEG relist cost with 100, 500 and 1,000 containers (one per pod, as a node of single
 * container pods has), through the real stack: GenericPLEG → KubeGenericRuntimeManager →
 * RemoteRuntimeService → gRPC over a unix socket → the fake CRI server in a child process. The
 * figures therefore include the client's encoding and decoding and the conversion to the kubelet's
 * types, and leave out the runtime's own work (which containerd does in another process too).
 *
 * Three shapes of relist:
 *  - steady: nothing changed since the last relist (the common case, once a second): two List calls
 *    and their decoding, and the comparison of every container's state;
 *  - few: 3 containers changed since the last relist (a relist asked for by a task event while pods
 *    start): the steady cost plus 3 getPodStatus;
 *  - churn: 10 containers changed since the last relist: the steady cost plus 10 getPodStatus;
 *  - cold: the first relist of a fresh PLEG, every pod new (a kubelet restart): a getPodStatus for
 *    every pod (ListPodSandbox, PodSandboxStatus, ListContainers, ContainerStatus each).
 *
 * And, once, the client's CPU per unary call: Version (the smallest answer), 16 at a time, so that
 * the cost of a call itself (framing, HTTP/2, the promise) shows apart from what its answer holds.
 *
 * Env: BENCH_RELIST_SIZES (default "100,500,1000"), BENCH_RELIST_COUNT (relists per shape, default 20).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { connectRuntime, type RuntimeConnection } from '../src/cri/connect-runtime.js';
import { KubeGenericRuntimeManager } from '../src/kuberuntime/runtime-manager.js';
import { realClock } from '../src/lib/clock.js';
import { GenericPLEG } from '../src/pleg/generic-pleg.js';
import { InMemoryPodCache } from '../src/pleg/pod-cache.js';
import type { RelistRuntimeReply, RelistRuntimeRequest } from './relist-fake-runtime.js';
import { emit, envNumber, percentile, quickMode, say } from './report.js';

const BENCH = 'relist';
const FEW_PER_RELIST = 3;
const CHURN_PER_RELIST = 10;
const WARMUP_RELISTS = 3;

interface Sample {
  wallMs: number;
  cpuMs: number;
}

/** The fake runtime's child process and a request/reply over its IPC channel. */
class FakeRuntimeProcess {
  private constructor(private readonly child: ChildProcess) {}

  static start(): FakeRuntimeProcess {
    // Same extension as this file: .ts under tsx, .js from dist/.
    const here = fileURLToPath(import.meta.url);
    const script = path.join(path.dirname(here), `relist-fake-runtime${path.extname(here)}`);
    const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new FakeRuntimeProcess(child);
  }

  request(message: RelistRuntimeRequest, timeoutMs = 60_000): Promise<RelistRuntimeReply> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`fake runtime did not answer ${message.cmd} within ${timeoutMs} ms`));
      }, timeoutMs);
      const onMessage = (reply: RelistRuntimeReply) => {
        cleanup();
        if ('error' in reply) reject(new Error(`fake runtime: ${reply.error}`));
        else resolve(reply);
      };
      const onExit = (code: number | null) => {
        cleanup();
        reject(new Error(`fake runtime exited with ${code}`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
      };
      this.child.on('message', onMessage);
      this.child.once('exit', onExit);
      this.child.send(message);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send({ cmd: 'exit' } satisfies RelistRuntimeRequest);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * The channel holds every event of a cold relist (two per pod): the default 1,000 would overflow at
 * 1,000 pods, as upstream's does after a restart, and the bench would time the error log of each
 * dropped event instead of the relist.
 */
function newPleg(runtime: KubeGenericRuntimeManager, containers: number): GenericPLEG {
  return new GenericPLEG({
    runtime,
    cache: new InMemoryPodCache(),
    clock: realClock,
    eventChannelCapacity: Math.max(1000, 4 * containers),
  });
}

/** One relist, timed; the events are drained as the sync loop would, so the channel never overflows. */
async function timedRelist(pleg: GenericPLEG): Promise<Sample> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await pleg.relist();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  while (pleg.events.tryReceive() !== undefined);
  // A relist that failed would be timed as a fast one.
  if (pleg.metrics().relistFailures > 0) throw new Error('a relist failed: see the log above');
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

function report(n: number, shape: string, samples: Sample[], note: string): void {
  const wall = samples.map((s) => s.wallMs);
  const cpu = samples.map((s) => s.cpuMs);
  const p50 = percentile(wall, 50);
  const count = `${samples.length} relist(s)`;
  emit({ bench: BENCH, n, metric: `${shape}_p50_ms`, value: p50, note: `${note}; ${count}` });
  emit({ bench: BENCH, n, metric: `${shape}_p90_ms`, value: percentile(wall, 90) });
  emit({
    bench: BENCH,
    n,
    metric: `${shape}_cpu_ms`,
    value: percentile(cpu, 50),
    note: 'median CPU per relist',
  });
  emit({ bench: BENCH, n, metric: `${shape}_us_per_container`, value: (p50 * 1000) / n });
}

const CALLS = 4000;
const CALLS_AT_ONCE = 16;

/** Client CPU per Version call, median of three batches of CALLS (after one to warm up). */
async function benchCalls(conn: RuntimeConnection): Promise<void> {
  const batch = async (): Promise<number> => {
    const cpu0 = process.cpuUsage();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next++ < CALLS) await conn.runtime.version();
    };
    await Promise.all(Array.from({ length: CALLS_AT_ONCE }, worker));
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / CALLS;
  };
  await batch();
  const perCall = [await batch(), await batch(), await batch()];
  emit({
    bench: BENCH,
    n: 1,
    metric: 'unary_call_cpu_us',
    value: percentile(perCall, 50),
    note: `client CPU per Version call, ${CALLS_AT_ONCE} at a time, median of 3 × ${CALLS}`,
  });
  say(`relist: a unary call costs the client ${percentile(perCall, 50).toFixed(0)} µs of CPU`);
}

async function benchSize(
  containers: number,
  relists: number,
  logsDir: string,
  withCalls: boolean,
): Promise<void> {
  const fake = FakeRuntimeProcess.start();
  let conn: RuntimeConnection | undefined;
  try {
    const populated = await fake.request({ cmd: 'populate', pods: containers, containersPerPod: 1 });
    if (!('endpoint' in populated)) throw new Error('fake runtime gave no endpoint');
    conn = await connectRuntime(populated.endpoint, {
      runtimeRequestTimeoutMs: 30_000,
      signal: AbortSignal.timeout(30_000),
    });
    const runtime = new KubeGenericRuntimeManager({
      runtimeService: conn.runtime,
      imageService: conn.images,
      runtimeName: conn.version.runtimeName,
      nodeName: 'bench-node',
      podLogsDir: logsDir,
      rootDir: logsDir,
      legacyContainerLogsDir: '',
    });

    if (withCalls) await benchCalls(conn);

    const pleg = newPleg(runtime, containers);
    for (let i = 0; i < WARMUP_RELISTS; i++) await timedRelist(pleg);
    const steady: Sample[] = [];
    for (let i = 0; i < relists; i++) steady.push(await timedRelist(pleg));

    const changedRelists = async (count: number): Promise<Sample[]> => {
      const samples: Sample[] = [];
      for (let i = 0; i < relists; i++) {
        await fake.request({ cmd: 'churn', count });
        samples.push(await timedRelist(pleg));
      }
      return samples;
    };
    const few = await changedRelists(FEW_PER_RELIST);
    const churn = await changedRelists(CHURN_PER_RELIST);
    // Cold: a fresh PLEG each time, so every pod is new to it. Last, so that the JIT has warmed up
    // getPodStatus in the churn relists, as it would have in a kubelet that has been running.
    const coldRuns = Math.max(1, Math.min(3, Math.round(relists / 7)));
    const cold: Sample[] = [];
    for (let i = 0; i < coldRuns; i++) cold.push(await timedRelist(newPleg(runtime, containers)));

    report(containers, 'steady', steady, 'nothing changed since the previous relist');
    report(containers, 'few', few, `${FEW_PER_RELIST} containers changed before each relist`);
    report(containers, 'churn', churn, `${CHURN_PER_RELIST} containers changed before each relist`);
    report(containers, 'cold', cold, 'first relist of a fresh PLEG: getPodStatus for every pod');
    const p50 = (samples: Sample[], key: keyof Sample): string =>
      percentile(
        samples.map((s) => s[key]),
        50,
      ).toFixed(2);
    say(
      `relist n=${containers}: CPU p50 steady ${p50(steady, 'cpuMs')} ms, few ${p50(few, 'cpuMs')} ms, ` +
        `churn ${p50(churn, 'cpuMs')} ms; wall p50 steady ${p50(steady, 'wallMs')} ms, cold ${p50(cold, 'wallMs')} ms`,
    );
  } finally {
    conn?.close();
    await fake.stop();
  }
}

async function main(): Promise<void> {
  const sizes = (process.env.BENCH_RELIST_SIZES ?? '100,500,1000').split(',').map((s) => Number(s.trim()));
  const relists = envNumber('BENCH_RELIST_COUNT', quickMode() ? 10 : 20);
  const logsDir = mkdtempSync(path.join(os.tmpdir(), 'tskubelet-bench-relist-'));
  say(
    `relist: ${sizes.join(', ')} containers (one per pod), ${relists} relists per shape, node ${process.version}`,
  );
  try {
    for (const [i, n] of sizes.entries()) await benchSize(n, relists, logsDir, i === 0);
  } finally {
    rmSync(logsDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  say(`relist bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
