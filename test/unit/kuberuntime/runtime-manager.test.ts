import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { CriNotFoundError } from '../../../src/cri/errors.js';
import {
  KubeGenericRuntimeManager,
  type KubeGenericRuntimeManagerOptions,
} from '../../../src/kuberuntime/runtime-manager.js';
import { PodStartSlots } from '../../../src/kuberuntime/pod-start-slots.js';
import type { PodSyncResult } from '../../../src/kuberuntime/types.js';
import { Backoff } from '../../../src/lib/backoff.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { MetricsRegistry } from '../../../src/lib/metrics.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import { waitFor } from '../../helpers/wait.js';

let dir = '';
let clock: FakeClock;
let fake: FakeRuntime;
let events: string[];
let backoff: Backoff;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'kuberuntime-mgr-'));
  await writeFile(path.join(dir, 'resolv.conf'), 'nameserver 192.168.1.1\nsearch corp.example\n');
  clock = new FakeClock();
  fake = new FakeRuntime(clock);
  fake.addImage('busybox:latest');
  fake.addImage('busybox:1.36');
  events = [];
  backoff = new Backoff(clock, 10_000, 300_000);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function manager(over: Partial<KubeGenericRuntimeManagerOptions> = {}): KubeGenericRuntimeManager {
  return new KubeGenericRuntimeManager({
    runtimeService: fake,
    imageService: fake,
    clock,
    podLogsDir: path.join(dir, 'pods'),
    rootDir: path.join(dir, 'root'),
    resolvConf: path.join(dir, 'resolv.conf'),
    clusterDNS: ['10.96.0.10'],
    clusterDomain: 'cluster.local',
    nodeName: 'node-a',
    nodeIPs: ['192.168.1.50'],
    legacyContainerLogsDir: path.join(dir, 'containers'),
    recorder: {
      event: (_p, fieldPath, type, reason, message) =>
        events.push(`${fieldPath} ${type} ${reason}: ${message}`),
    },
    ...over,
  });
}

function pod(containers: Container[], spec: Partial<Pod['spec']> = {}, uid = 'uid-1'): Pod {
  return {
    metadata: { name: 'web', namespace: 'prod', uid, labels: { app: 'web' } },
    spec: { containers, terminationGracePeriodSeconds: 30, ...spec },
  };
}

const app: Container = { name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] };

function failures(r: PodSyncResult): string[] {
  return r.results.filter((x) => x.reason).map((x) => `${x.action} ${x.target}: ${x.reason}: ${x.message}`);
}

async function sync(m: KubeGenericRuntimeManager, p: Pod): Promise<PodSyncResult> {
  const status = await m.getPodStatus(p.metadata.uid!, p.metadata.name!, p.metadata.namespace!);
  return m.syncPod(p, status, backoff);
}

describe('syncPod', () => {
  test('a new pod: sandbox, then its container created and started, with upstream labels and results', async () => {
    const m = manager();
    const p = pod([app]);
    const r = await sync(m, p);
    assert.deepEqual(failures(r), []);
    assert.equal(r.failed, false);
    assert.deepEqual(
      r.results.map((x) => x.action),
      ['KillPodSandbox', 'CreatePodSandbox', 'ConfigPodSandbox', 'StartContainer'],
    );

    const [sandboxCall] = fake.callsOf('runPodSandbox');
    const sandboxConfig = sandboxCall![0] as {
      labels: Record<string, string>;
      logDirectory: string;
      dnsConfig: unknown;
      hostname: string;
    };
    assert.equal(sandboxConfig.labels['io.kubernetes.pod.uid'], 'uid-1');
    assert.equal(sandboxConfig.labels.app, 'web');
    assert.equal(sandboxConfig.hostname, 'web');
    assert.equal(sandboxConfig.logDirectory, path.join(dir, 'pods/prod_web_uid-1'));
    assert.deepEqual(sandboxConfig.dnsConfig, {
      servers: ['10.96.0.10'],
      searches: ['prod.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example'],
      options: ['ndots:5'],
    });
    assert.deepEqual(await readdir(path.join(dir, 'pods/prod_web_uid-1')), ['app']);

    const [c] = fake.containersNamed('app');
    assert.equal(c?.state, 'CONTAINER_RUNNING');
    assert.equal(c?.config.labels['io.kubernetes.container.name'], 'app');
    assert.equal(c?.config.annotations['io.kubernetes.container.restartCount'], '0');
    assert.equal(c?.config.logPath, 'app/0.log');
    assert.deepEqual(c?.config.command, ['sleep', '3600']);
    assert.ok(events.includes('spec.containers{app} Normal Created: Created container app'));
    assert.ok(events.includes('spec.containers{app} Normal Started: Started container app'));

    const hosts = c?.config.mounts.find((x) => x.containerPath === '/etc/hosts');
    assert.equal(hosts?.hostPath, path.join(dir, 'root/pods/uid-1/etc-hosts'));
    assert.match(await readFile(hosts!.hostPath, 'utf8'), /^10\.88\.0\.2\tweb$/m);

    const status = await m.getPodStatus('uid-1', 'web', 'prod');
    assert.equal(status.sandboxStatuses.length, 1);
    assert.deepEqual(status.ips, ['10.88.0.2']);
    assert.equal(status.containerStatuses.length, 1);
    const cs = status.containerStatuses[0]!;
    assert.equal(cs.state, 'running');
    assert.equal(cs.containerID, `containerd://${c!.id}`);
    assert.equal(cs.restartCount, 0);
    assert.equal(cs.podSandboxId, status.sandboxStatuses[0]!.id);

    const pods = await m.getPods(false);
    assert.equal(pods.length, 1);
    assert.equal(pods[0]!.uid, 'uid-1');
    assert.equal(pods[0]!.terminationGracePeriodSeconds, 30);
    assert.deepEqual(
      pods[0]!.containers.map((x) => [x.name, x.state]),
      [['app', 'running']],
    );
    assert.deepEqual(
      pods[0]!.sandboxes.map((x) => x.state),
      ['ready'],
    );
  });

  test('a running pod that matches its spec: no runtime changes', async () => {
    const m = manager();
    const p = pod([app]);
    await sync(m, p);
    fake.resetCalls();
    const r = await sync(m, p);
    assert.deepEqual(failures(r), []);
    for (const method of [
      'runPodSandbox',
      'createContainer',
      'startContainer',
      'stopContainer',
      'stopPodSandbox',
    ] as const) {
      assert.equal(fake.callsOf(method).length, 0, method);
    }
  });

  test('an exited container restarts with the next restart count, then crash-loop back-off holds it', async () => {
    const m = manager();
    const p = pod([app]);
    await sync(m, p);
    const first = fake.containersNamed('app')[0]!;
    fake.exitContainer(first.id, 1);
    const r = await sync(m, p);
    assert.deepEqual(failures(r), []);
    const second = fake.containersNamed('app')[1]!;
    assert.equal(second.state, 'CONTAINER_RUNNING');
    assert.equal(second.config.metadata.attempt, 1);
    assert.equal(second.config.annotations['io.kubernetes.container.restartCount'], '1');
    assert.equal(second.config.logPath, 'app/1.log');
    assert.equal(fake.callsOf('runPodSandbox').length, 1, 'the sandbox is kept');

    clock.advance(1000);
    fake.exitContainer(second.id, 1);
    const held = await sync(m, p);
    assert.deepEqual(failures(held), [
      'StartContainer app: CrashLoopBackOff: back-off 10s restarting failed container=app pod=web_prod(uid-1)',
    ]);
    assert.equal(held.failed, true);
    assert.equal(fake.containersNamed('app').length, 2);
    assert.ok(
      events.includes(
        'spec.containers{app} Warning BackOff: Back-off restarting failed container app in pod web_prod(uid-1)',
      ),
    );

    clock.advance(10_000);
    assert.deepEqual(failures(await sync(m, p)), []);
    assert.equal(fake.containersNamed('app').length, 3);
    const status = await m.getPodStatus('uid-1', 'web', 'prod');
    assert.equal(status.containerStatuses[0]!.restartCount, 2);
  });

  test('restart policy Never: an exited container stays down and the pod is stopped', async () => {
    const m = manager();
    const p = pod([app], { restartPolicy: 'Never' });
    await sync(m, p);
    fake.exitContainer(fake.containersNamed('app')[0]!.id, 0);
    const r = await sync(m, p);
    assert.deepEqual(failures(r), []);
    assert.equal(fake.containersNamed('app').length, 1);
    const sandbox = [...fake.sandboxes.values()][0]!;
    assert.equal(sandbox.state, 'SANDBOX_NOTREADY');
    // And it is not recreated afterwards.
    await sync(m, p);
    assert.equal(fake.callsOf('runPodSandbox').length, 1);
  });

  test('a changed image kills and restarts that container only', async () => {
    const m = manager();
    const side: Container = { name: 'side', image: 'busybox:1.36', command: ['sleep', '3600'] };
    await sync(m, pod([app, side]));
    const oldApp = fake.containersNamed('app')[0]!;
    const oldSide = fake.containersNamed('side')[0]!;
    const r = await sync(m, pod([{ ...app, image: 'busybox:latest' }, side]));
    assert.deepEqual(failures(r), []);
    assert.deepEqual(fake.callsOf('stopContainer'), [[oldApp.id, 30]]);
    assert.equal(oldSide.state, 'CONTAINER_RUNNING');
    const newApp = fake.containersNamed('app')[1]!;
    assert.equal(newApp.state, 'CONTAINER_RUNNING');
    assert.equal(newApp.config.image.userSpecifiedImage, 'busybox:latest');
    assert.ok(
      events.includes(
        'spec.containers{app} Normal Killing: Container app definition changed, will be restarted',
      ),
    );
  });

  test('image pull failures: ErrImagePull, then ImagePullBackOff', async () => {
    const m = manager();
    fake.pullsSucceed = false;
    const p = pod([{ name: 'app', image: 'nosuch:1' }]);
    const r = await sync(m, p);
    assert.equal(failures(r).length, 1);
    assert.match(failures(r)[0]!, /^StartContainer app: ErrImagePull: failed to pull and unpack image/);
    assert.ok(events.includes('spec.containers{app} Warning Failed: Error: ErrImagePull'));
    const again = await sync(m, p);
    assert.deepEqual(failures(again), [
      'StartContainer app: ImagePullBackOff: Back-off pulling image "nosuch:1"',
    ]);
  });

  test('a configuration error is CreateContainerConfigError', async () => {
    const m = manager();
    const p = pod([
      { ...app, env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }] },
    ]);
    const r = await sync(m, p);
    assert.deepEqual(failures(r), [
      "StartContainer app: CreateContainerConfigError: couldn't get configMap prod/cfg, no kubeClient defined",
    ]);
  });

  test('runtime failures: CreatePodSandboxError, CreateContainerError, RunContainerError', async () => {
    const m = manager();
    fake.injectError('runPodSandbox', new Error('failed to setup network for sandbox'), 1);
    const r = await sync(m, pod([app]));
    assert.deepEqual(failures(r), [
      'CreatePodSandbox web_prod(uid-1): CreatePodSandboxError: Failed to create sandbox for pod "web_prod(uid-1)": failed to setup network for sandbox',
    ]);
    assert.ok(
      events.includes(
        ' Warning FailedCreatePodSandBox: Failed to create pod sandbox: failed to setup network for sandbox',
      ),
    );

    fake.injectError('createContainer', new Error('no space left on device'), 1);
    assert.deepEqual(failures(await sync(m, pod([app]))), [
      'StartContainer app: CreateContainerError: no space left on device',
    ]);

    fake.injectError('startContainer', new Error('exec: "sleep": executable file not found'), 1);
    assert.deepEqual(failures(await sync(m, pod([app]))), [
      'StartContainer app: RunContainerError: exec: "sleep": executable file not found',
    ]);
  });

  test('a sandbox that died is replaced with the next attempt; its containers are killed first', async () => {
    const m = manager();
    const p = pod([app]);
    await sync(m, p);
    const oldSandbox = [...fake.sandboxes.values()][0]!;
    fake.setSandboxState(oldSandbox.id, 'SANDBOX_NOTREADY');
    fake.resetCalls();
    const r = await sync(m, p);
    assert.deepEqual(failures(r), []);
    assert.equal(fake.callsOf('stopContainer').length, 1);
    assert.deepEqual(fake.callsOf('stopPodSandbox'), [[oldSandbox.id]]);
    const [call] = fake.callsOf('runPodSandbox');
    assert.equal((call![0] as { metadata: { attempt: number } }).metadata.attempt, 1);
    assert.ok(
      events.includes(' Normal SandboxChanged: Pod sandbox changed, it will be killed and re-created.'),
    );
    const status = await m.getPodStatus('uid-1', 'web', 'prod');
    assert.equal(status.sandboxStatuses.length, 2);
    assert.equal(status.sandboxStatuses[0]!.state, 'SANDBOX_READY');
  });

  test('init containers run one at a time, in order, before the app containers', async () => {
    const m = manager();
    const p = pod([app], {
      initContainers: [
        { name: 'init1', image: 'busybox:1.36' },
        { name: 'init2', image: 'busybox:1.36' },
      ],
    });
    await sync(m, p);
    assert.deepEqual(
      [...fake.containers.values()].map((c) => c.config.metadata.name),
      ['init1'],
    );
    await sync(m, p);
    assert.equal(fake.containers.size, 1, 'init1 still runs: nothing else starts');
    fake.exitContainer(fake.containersNamed('init1')[0]!.id, 0);
    await sync(m, p);
    assert.deepEqual(
      [...fake.containers.values()].map((c) => c.config.metadata.name),
      ['init1', 'init2'],
    );
    assert.equal(
      fake.containersNamed('init2')[0]!.config.annotations['io.kubernetes.container.type'],
      'init',
    );
    fake.exitContainer(fake.containersNamed('init2')[0]!.id, 0);
    await sync(m, p);
    assert.equal(fake.containersNamed('app')[0]?.state, 'CONTAINER_RUNNING');
  });

  test('a failed postStart hook kills the container: PostStartHookError', async () => {
    const m = manager();
    fake.execSync = async () => ({ stdout: Buffer.alloc(0), stderr: Buffer.from('nope'), exitCode: 1 });
    const p = pod([{ ...app, lifecycle: { postStart: { exec: { command: ['false'] } } } }]);
    const r = await sync(m, p);
    assert.deepEqual(failures(r), [
      'StartContainer app: PostStartHookError: Exec lifecycle hook ([false]) for Container "app" in Pod "web_prod(uid-1)" failed - error: command \'false\' exited with 1: nope, message: "nope"',
    ]);
    assert.equal(fake.containersNamed('app')[0]!.state, 'CONTAINER_EXITED');
    assert.ok(events.includes('spec.containers{app} Warning FailedPostStartHook: PostStartHook failed'));
    assert.ok(events.includes('spec.containers{app} Normal Killing: FailedPostStartHook'));
  });

  test('the termination message file is read back into the status message', async () => {
    const m = manager();
    await sync(m, pod([app]));
    const c = fake.containersNamed('app')[0]!;
    const mount = c.config.mounts.find((x) => x.containerPath === '/dev/termination-log')!;
    await writeFile(mount.hostPath, 'disk full');
    fake.exitContainer(c.id, 2, { reason: 'Error' });
    const status = await m.getPodStatus('uid-1', 'web', 'prod');
    assert.equal(status.containerStatuses[0]!.message, 'disk full');
    assert.equal(status.containerStatuses[0]!.exitCode, 2);
    assert.equal(status.containerStatuses[0]!.reason, 'Error');
    assert.ok(status.containerStatuses[0]!.finishedAtMs > 0);
  });

  test('FallbackToLogsOnError reads the tail of the CRI log when the file is empty', async () => {
    const m = manager();
    await sync(m, pod([{ ...app, terminationMessagePolicy: 'FallbackToLogsOnError' }]));
    const c = fake.containersNamed('app')[0]!;
    const logFile = path.join(dir, 'pods/prod_web_uid-1/app/0.log');
    await writeFile(
      logFile,
      '2024-01-01T00:00:00.000000000Z stdout F starting\n2024-01-01T00:00:01.000000000Z stderr P pan\n2024-01-01T00:00:01.000000000Z stderr F ic: oops\n',
    );
    fake.exitContainer(c.id, 1);
    const status = await m.getPodStatus('uid-1', 'web', 'prod');
    assert.equal(status.containerStatuses[0]!.message, 'starting\npanic: oops\n');
  });

  test('a restart count continues from the log folder when the runtime forgot the container', async () => {
    const m = manager();
    await mkdir(path.join(dir, 'pods/prod_web_uid-1/app'), { recursive: true });
    await writeFile(path.join(dir, 'pods/prod_web_uid-1/app/4.log'), '');
    await sync(m, pod([app]));
    assert.equal(fake.containersNamed('app')[0]!.config.metadata.attempt, 5);
  });
});

describe('machine figures', () => {
  // A container without limits sees the machine's figures through the downward API.
  const withEnv: Container = {
    ...app,
    env: [{ name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory' } } }],
  };

  test('are read once, when made: a container start reads no /proc file on the event loop', async () => {
    const machineMemory = String(os.totalmem());
    const m = manager();
    const totalmem = mock.method(os, 'totalmem');
    const cpus = mock.method(os, 'cpus');
    try {
      const r = await sync(m, pod([withEnv]));
      assert.deepEqual(failures(r), []);
      const [c] = fake.containersNamed('app');
      assert.ok(
        c?.config.envs.some((e) => e.key === 'MEM' && e.value === machineMemory),
        'the limit defaults to the machine memory',
      );
      assert.equal(totalmem.mock.callCount(), 0);
      assert.equal(cpus.mock.callCount(), 0);
    } finally {
      totalmem.mock.restore();
      cpus.mock.restore();
    }
  });

  test("memoryCapacityBytes sets the OOM score's memory, not the downward API's default", async () => {
    const m = manager({ memoryCapacityBytes: 1024 ** 3, nodeAllocatable: () => undefined });
    const r = await sync(m, pod([{ ...withEnv, resources: { requests: { memory: '256Mi' } } }]));
    assert.deepEqual(failures(r), []);
    const [c] = fake.containersNamed('app');
    assert.ok(c?.config.envs.some((e) => e.key === 'MEM' && e.value === String(os.totalmem())));
    // Burstable: 1000 - 1000 * request / capacity = 1000 - 250.
    assert.equal(c?.config.linux?.resources?.oomScoreAdj, 750);
  });
});

describe('syncPod: pod-start slots', () => {
  /** Holds every RunPodSandbox until the test lets it through, counting how many are in flight. */
  function gateSandboxes(): { waiting: (() => void)[]; maxInFlight: () => number } {
    const waiting: (() => void)[] = [];
    let inFlight = 0;
    let max = 0;
    const run = fake.runPodSandbox.bind(fake);
    fake.runPodSandbox = async (...args) => {
      inFlight++;
      max = Math.max(max, inFlight);
      try {
        await new Promise<void>((resolve) => waiting.push(resolve));
        return await run(...args);
      } finally {
        inFlight--;
      }
    };
    return { waiting, maxInFlight: () => max };
  }

  /** The promise, or a failure naming what it waited for after 5 s (a wait for a slot never ends here: no lapse on the fake clock). */
  function within<T>(what: string, p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), 5_000);
    });
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  }

  const pods = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      ...pod([app], {}, `uid-${i}`),
      metadata: { name: `web-${i}`, namespace: 'prod', uid: `uid-${i}` },
    }));

  test('at most the bound start at once; each start frees its slot for the next pod', async () => {
    const gate = gateSandboxes();
    const m = manager({ podStartSlots: new PodStartSlots(2, clock) });
    const syncs = pods(5).map((p) => sync(m, p));
    await waitFor('two sandboxes are being made', () => gate.waiting.length === 2, 5_000, 5);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(gate.waiting.length, 2, 'the third pod waits for a slot');
    for (let let_through = 0; let_through < 5; let_through++) {
      await waitFor('a sandbox waits', () => gate.waiting.length > 0, 5_000, 5);
      gate.waiting.shift()!();
    }
    const results = await Promise.all(syncs);
    assert.deepEqual(results.flatMap(failures), []);
    assert.equal(gate.maxInFlight(), 2);
    assert.equal(fake.containersNamed('app').filter((c) => c.state === 'CONTAINER_RUNNING').length, 5);
  });

  test('a failed sandbox gives its slot back', async () => {
    const slots = new PodStartSlots(1, clock);
    const m = manager({ podStartSlots: slots });
    fake.injectError('runPodSandbox', new Error('failed to setup network for sandbox'), 1);
    const [a, b] = pods(2);
    const [ra, rb] = await Promise.all([sync(m, a!), sync(m, b!)]);
    assert.equal(failures(ra).length + failures(rb).length, 1);
    assert.equal(fake.callsOf('runPodSandbox').length, 2);
    // Both syncs are over: the one slot is free again, at once (no lapse on the fake clock).
    (await within('the slot to be free again', slots.acquire(pods(3)[2]!)))();
  });

  test('a pod gives its slot back before it pulls an image, so pods with their images go ahead', async () => {
    const m = manager({ podStartSlots: new PodStartSlots(1, clock) });
    const pulls: (() => void)[] = [];
    const pull = fake.pullImage.bind(fake);
    fake.pullImage = async (...args) => {
      await new Promise<void>((resolve) => pulls.push(resolve));
      return pull(...args);
    };
    const [a, b] = pods(2);
    const pulling = { ...a!, spec: { ...a!.spec, containers: [{ ...app, image: 'busybox:1.37' }] } };
    const first = sync(m, pulling);
    await waitFor('the first pod pulls its image', () => pulls.length === 1, 5_000, 5);
    const second = await within('the second pod waited for the first pod to pull', sync(m, b!));
    assert.deepEqual(failures(second), []);
    pulls.shift()!();
    assert.deepEqual(failures(await first), []);
  });

  test('a container restart in a running pod takes no slot', async () => {
    const slots = new PodStartSlots(1, clock);
    const m = manager({ podStartSlots: slots });
    const [a] = pods(1);
    assert.deepEqual(failures(await sync(m, a!)), []);
    const [c] = fake.containersNamed('app');
    await fake.stopContainer(c!.id, 0);
    const held = await slots.acquire(pods(2)[1]!); // every slot taken
    const r = await within('the restart waited for a slot', sync(m, a!));
    held();
    assert.deepEqual(failures(r), []);
    assert.equal(fake.callsOf('runPodSandbox').length, 1, 'the sandbox stayed');
    assert.equal(fake.callsOf('startContainer').length, 2, 'the container started again without a slot');
  });

  test('a pod stopped while its start waits makes no sandbox', async () => {
    const gate = gateSandboxes();
    const m = manager({ podStartSlots: new PodStartSlots(1, clock) });
    const [a, b] = pods(2);
    const first = sync(m, a!);
    await waitFor('the first sandbox is being made', () => gate.waiting.length === 1, 5_000, 5);
    const ac = new AbortController();
    const status = await m.getPodStatus(b!.metadata.uid!, b!.metadata.name!, b!.metadata.namespace!);
    const second = m.syncPod(b!, status, backoff, ac.signal);
    ac.abort(new Error('pod is being stopped'));
    const rb = await second;
    assert.deepEqual(failures(rb), []);
    gate.waiting.shift()!();
    assert.deepEqual(failures(await first), []);
    assert.equal(fake.callsOf('runPodSandbox').length, 1, 'only the first pod made a sandbox');
  });
});

describe('getPodStatus', () => {
  test("given a relist's listing of the pod, it lists nothing again and reads the same status", async () => {
    const m = manager();
    assert.equal((await sync(m, pod([app]))).failed, false);
    const listed = (await m.getPods(true)).find((p) => p.uid === 'uid-1')!;
    const lists = () => fake.callsOf('listPodSandbox').length + fake.callsOf('listContainers').length;
    const full = await m.getPodStatus('uid-1', 'web', 'prod');
    const before = lists();
    const fromListing = await m.getPodStatus('uid-1', 'web', 'prod', listed);
    assert.equal(lists(), before);
    assert.deepEqual(fromListing, full);
    assert.equal(fromListing.containerStatuses[0]?.podSandboxId, fromListing.sandboxStatuses[0]?.id);
  });
  test('a sandbox listed in the state it was last read in is not read again; one that changed is', async () => {
    const m = manager();
    assert.equal((await sync(m, pod([app]))).failed, false);
    const listing = async () => (await m.getPods(true)).find((p) => p.uid === 'uid-1')!;
    const previous = await m.getPodStatus('uid-1', 'web', 'prod');
    const reads = () => fake.callsOf('podSandboxStatus').length;
    let before = reads();
    const again = await m.getPodStatus('uid-1', 'web', 'prod', await listing(), previous);
    assert.equal(reads(), before);
    assert.deepEqual(again.sandboxStatuses, previous.sandboxStatuses);
    assert.deepEqual(again.ips, ['10.88.0.2']);

    await fake.stopPodSandbox(previous.sandboxStatuses[0]!.id);
    before = reads();
    const stopped = await m.getPodStatus('uid-1', 'web', 'prod', await listing(), previous);
    assert.equal(reads(), before + 1);
    assert.equal(stopped.sandboxStatuses[0]?.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(stopped.ips, []);
  });
});

describe('getPodStatus after a sandbox is made', () => {
  test("the pod's first status reading takes the sandbox's status read after RunPodSandbox", async () => {
    const m = manager();
    assert.equal((await sync(m, pod([app]))).failed, false);
    const reads = () => fake.callsOf('podSandboxStatus').length;
    assert.equal(reads(), 1);
    const listed = (await m.getPods(true)).find((p) => p.uid === 'uid-1')!;
    const first = await m.getPodStatus('uid-1', 'web', 'prod', listed);
    assert.equal(reads(), 1);
    assert.equal(first.sandboxStatuses[0]?.state, 'SANDBOX_READY');
    assert.deepEqual(first.ips, ['10.88.0.2']);
    // Taken once: a reading without a previous status asks the runtime again.
    await m.getPodStatus('uid-1', 'web', 'prod', listed);
    assert.equal(reads(), 2);
  });

  test('a sandbox that stopped since it was made is read again', async () => {
    const m = manager();
    assert.equal((await sync(m, pod([app]))).failed, false);
    const [sandbox] = [...fake.sandboxes.keys()];
    await fake.stopPodSandbox(sandbox!);
    const before = fake.callsOf('podSandboxStatus').length;
    const listed = (await m.getPods(true)).find((p) => p.uid === 'uid-1')!;
    const status = await m.getPodStatus('uid-1', 'web', 'prod', listed);
    assert.equal(fake.callsOf('podSandboxStatus').length, before + 1);
    assert.equal(status.sandboxStatuses[0]?.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(status.ips, []);
  });
});

describe('killPod', () => {
  test('stops every container with the pod grace period, then the sandbox', async () => {
    const m = manager();
    const p = pod([app, { ...app, name: 'side' }], { terminationGracePeriodSeconds: 45 });
    await sync(m, p);
    const [running] = await m.getPods(false);
    await m.killPod(p, running!);
    assert.deepEqual(
      fake
        .callsOf('stopContainer')
        .map((c) => c[1])
        .sort(),
      [45, 45],
    );
    assert.equal(fake.callsOf('stopPodSandbox').length, 1);
    assert.ok([...fake.containers.values()].every((c) => c.state === 'CONTAINER_EXITED'));
    assert.deepEqual(await m.getPods(false), []);
    assert.equal((await m.getPods(true)).length, 1);
  });

  test('grace period: override, deletion grace period, default 30, minimum 2, annotations without the pod', async () => {
    const m = manager();
    const p = pod([app], { terminationGracePeriodSeconds: 45 });
    await sync(m, p);
    const [running] = await m.getPods(false);
    await m.killPod(p, running!, 5);
    assert.equal(fake.callsOf('stopContainer').at(-1)![1], 5);
    await m.killPod(p, running!, 0);
    assert.equal(fake.callsOf('stopContainer').at(-1)![1], 2);
    await m.killPod({ ...p, metadata: { ...p.metadata, deletionGracePeriodSeconds: 7 } }, running!);
    assert.equal(fake.callsOf('stopContainer').at(-1)![1], 7);
    const noGrace = pod([app]);
    delete noGrace.spec.terminationGracePeriodSeconds;
    await m.killPod(noGrace, running!);
    assert.equal(fake.callsOf('stopContainer').at(-1)![1], 30);
    // After a kubelet restart there is no pod: the container's annotations recorded 45.
    await m.killPod(undefined, running!);
    assert.equal(fake.callsOf('stopContainer').at(-1)![1], 45);
  });

  test('sidecars stop after the app containers, the later-declared sidecar first', async () => {
    const m = manager();
    const p = pod([app], {
      initContainers: [
        { name: 'logger', image: 'busybox:1.36', restartPolicy: 'Always' },
        { name: 'proxy', image: 'busybox:1.36', restartPolicy: 'Always' },
      ],
    });
    await sync(m, p);
    await sync(m, p);
    await sync(m, p);
    assert.deepEqual(
      [...fake.containers.values()].map((c) => `${c.config.metadata.name}:${c.state}`),
      ['logger:CONTAINER_RUNNING', 'proxy:CONTAINER_RUNNING', 'app:CONTAINER_RUNNING'],
    );
    const [running] = await m.getPods(false);
    fake.resetCalls();
    await m.killPod(p, running!);
    const stopped = fake
      .callsOf('stopContainer')
      .map((c) => fake.containers.get(c[0] as string)!.config.metadata.name);
    assert.deepEqual(stopped, ['app', 'proxy', 'logger']);
  });

  test('a preStop exec hook runs before the stop; gone containers and sandboxes are not errors', async () => {
    const m = manager();
    const hooked: Container = {
      ...app,
      lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo bye'] } } },
    };
    const p = pod([hooked]);
    await sync(m, p);
    const [running] = await m.getPods(false);
    fake.resetCalls();
    await m.killPod(p, running!);
    assert.deepEqual(fake.calls.map((c) => c.method).slice(0, 2), ['execSync', 'stopContainer']);
    assert.deepEqual(fake.callsOf('execSync')[0]!.slice(1), [['sh', '-c', 'echo bye'], 0]);

    fake.injectError('stopContainer', new CriNotFoundError('not found'), 1);
    fake.injectError('stopPodSandbox', new CriNotFoundError('not found'), 1);
    await m.killPod(p, running!);
  });

  test('a failing stop is a KILL_FAILED error naming the container', async () => {
    const m = manager();
    const p = pod([app]);
    await sync(m, p);
    const [running] = await m.getPods(false);
    fake.injectError('stopContainer', new Error('timeout waiting for exit'), 1);
    await assert.rejects(m.killPod(p, running!), (err) => {
      assert.ok(isKubeletError(err, 'KILL_FAILED'));
      assert.match(
        err.message,
        /failed to "KillContainer" for "app" with KillContainerError: "timeout waiting for exit"/,
      );
      return true;
    });
  });

  test('a stop whose answer is lost but whose container has exited is no failure', async () => {
    const m = manager();
    const p = pod([app]);
    await sync(m, p);
    const [running] = await m.getPods(false);
    fake.exitContainer(fake.containersNamed('app')[0]!.id, 137);
    fake.injectError('stopContainer', new Error('ttrpc: closed: unknown'), 1);
    await m.killPod(p, running!);
    assert.equal(fake.callsOf('stopContainer').length, 1);
  });
});

describe('garbageCollect', () => {
  test('keeps the newest dead attempt per container of wanted pods; removes everything dead of unwanted ones', async () => {
    const m = manager();
    const p = pod([app]);
    await sync(m, p);
    for (let i = 0; i < 3; i++) {
      fake.exitContainer(fake.containersNamed('app').at(-1)!.id, 1);
      clock.advance(400_000);
      await sync(m, p);
    }
    assert.equal(fake.containersNamed('app').length, 4);
    const other = pod([app], {}, 'uid-2');
    other.metadata.name = 'gone';
    await sync(m, other);
    const gonePod = (await m.getPods(false)).find((x) => x.uid === 'uid-2')!;
    await m.killPod(other, gonePod);
    const logFile = path.join(dir, 'pods/prod_web_uid-1/app/0.log');
    await writeFile(logFile, 'old log');

    await m.garbageCollect((uid) => uid === 'uid-1');
    const remaining = [...fake.containers.values()].map(
      (c) => `${c.config.labels['io.kubernetes.pod.uid']}/${c.config.metadata.attempt}/${c.state}`,
    );
    assert.deepEqual(remaining.sort(), ['uid-1/2/CONTAINER_EXITED', 'uid-1/3/CONTAINER_RUNNING']);
    assert.deepEqual(
      [...fake.sandboxes.values()].map((s) => s.config.metadata.uid),
      ['uid-1'],
    );
    assert.deepEqual(await readdir(path.join(dir, 'pods')), ['prod_web_uid-1']);
    await assert.rejects(readFile(logFile), { code: 'ENOENT' });
  });
});

describe('image pull secrets', () => {
  test("the pod's readable pull secrets are used for the pull; unreadable ones are named in one warning", async () => {
    const asked: string[] = [];
    const m = manager({
      pullSecrets: {
        getImagePullSecret: async (ns, name) => {
          asked.push(`${ns}/${name}`);
          if (name === 'broken') throw new Error('forbidden');
          if (name !== 'regcred') return undefined;
          return {
            type: 'kubernetes.io/dockerconfigjson',
            data: {
              '.dockerconfigjson': JSON.stringify({
                auths: { 'registry.example:5000': { username: 'u', password: 'p' } },
              }),
            },
          };
        },
      },
    });
    const c: Container = { name: 'app', image: 'registry.example:5000/team/app:v1', command: ['sleep', '1'] };
    const p = pod([c], {
      imagePullSecrets: [{ name: 'regcred' }, { name: 'gone' }, { name: 'broken' }, { name: '' }],
    });
    const r = await sync(m, p);
    assert.deepEqual(failures(r), []);
    assert.deepEqual(asked, ['prod/regcred', 'prod/gone', 'prod/broken']);
    const pulls = fake.callsOf('pullImage');
    assert.equal(pulls.length, 1);
    assert.deepEqual(pulls[0]![1], { username: 'u', password: 'p' });
    assert.ok(
      events.includes(
        ' Warning FailedToRetrieveImagePullSecret: Unable to retrieve some image pull secrets (gone, broken); attempting to pull the image may not succeed.',
      ),
      events.join('\n'),
    );

    // A present image needs no secrets: none are read.
    asked.length = 0;
    const again = pod(
      [{ ...c, imagePullPolicy: 'IfNotPresent' }],
      { imagePullSecrets: [{ name: 'regcred' }] },
      'uid-2',
    );
    assert.deepEqual(failures(await sync(m, again)), []);
    assert.deepEqual(asked, []);
  });
});

describe('syncPod: RuntimeClass and ephemeral containers', () => {
  const classes = {
    lookupRuntimeHandler(name: string | undefined): string {
      if (!name) return '';
      if (name === 'kata') return 'kata-handler';
      throw new Error(`runtimeclass.node.k8s.io "${name}" not found`);
    },
  };

  test("the class's handler goes to RunPodSandbox; an unknown class fails the sandbox with upstream's event", async () => {
    const m = manager({ runtimeClassManager: classes });
    const known = await sync(m, pod([app], { runtimeClassName: 'kata' }));
    assert.deepEqual(failures(known), []);
    assert.equal(fake.callsOf('runPodSandbox')[0]?.[1], 'kata-handler');

    events.length = 0;
    const unknown = await sync(m, pod([app], { runtimeClassName: 'gone' }, 'uid-2'));
    assert.deepEqual(failures(unknown), [
      'CreatePodSandbox web_prod(uid-2): CreatePodSandboxError: Failed to create sandbox for pod "web_prod(uid-2)": runtimeclass.node.k8s.io "gone" not found',
    ]);
    assert.deepEqual(events, [
      ' Warning FailedCreatePodSandBox: Failed to create pod sandbox: runtimeclass.node.k8s.io "gone" not found',
    ]);
    assert.equal(fake.callsOf('runPodSandbox').length, 1);
  });

  test('without a RuntimeClass manager (standalone, no API client) runtimeClassName is not looked up', async () => {
    const r = await sync(manager(), pod([app], { runtimeClassName: 'whatever' }));
    assert.deepEqual(failures(r), []);
    assert.equal(fake.callsOf('runPodSandbox')[0]?.[1], '');
  });

  test("an ephemeral container starts once in the pod's sandbox, in its target's PID namespace", async () => {
    const m = manager();
    const p = pod([app]);
    await sync(m, p);
    const target = [...fake.containers.values()].find((c) => c.config.metadata.name === 'app');
    assert.ok(target);
    p.spec.ephemeralContainers = [{ name: 'debug', image: 'busybox:1.36', targetContainerName: 'app' }];
    assert.deepEqual(failures(await sync(m, p)), []);
    const debug = [...fake.containers.values()].find((c) => c.config.metadata.name === 'debug');
    assert.ok(debug);
    assert.equal(debug.podSandboxId, target.podSandboxId);
    assert.deepEqual(debug.config.linux?.securityContext?.namespaceOptions, {
      network: 'POD',
      pid: 'TARGET',
      ipc: 'POD',
      targetId: target.id,
    });
    // Once it has run it is not started again.
    const creates = fake.callsOf('createContainer').length;
    await sync(m, p);
    assert.equal(fake.callsOf('createContainer').length, creates);
  });

  test('an unknown target is a CreateContainerConfigError', async () => {
    const m = manager();
    const p = pod([app]);
    await sync(m, p);
    p.spec.ephemeralContainers = [{ name: 'debug', image: 'busybox:1.36', targetContainerName: 'nope' }];
    assert.deepEqual(failures(await sync(m, p)), [
      'StartContainer debug: CreateContainerConfigError: unable to find target container nope',
    ]);
  });
});

describe('syncPod: upstream pod-start metrics', () => {
  test('pods and containers started, and failures by code', async () => {
    const registry = new MetricsRegistry();
    const m = manager({ metrics: registry });
    fake.injectError('runPodSandbox', new Error('failed to setup network for sandbox'), 1);
    await sync(m, pod([app]));
    fake.injectError('createContainer', new Error('no space left on device'), 1);
    await sync(m, pod([app]));
    assert.deepEqual(failures(await sync(m, pod([app]))), []);

    const text = await registry.expose();
    assert.match(text, /^kubelet_started_pods_total 2$/m);
    assert.match(text, /^kubelet_started_pods_errors_total 1$/m);
    assert.match(text, /^kubelet_started_containers_total\{container_type="container"\} 2$/m);
    assert.match(
      text,
      /^kubelet_started_containers_errors_total\{container_type="container",code="CreateContainerError"\} 1$/m,
    );
  });

  test('init containers count as such; a start held by back-off is not a start', async () => {
    const registry = new MetricsRegistry();
    const m = manager({ metrics: registry });
    const p = pod([app], { initContainers: [{ name: 'init', image: 'busybox:1.36' }] });
    await sync(m, p);
    fake.exitContainer(fake.containersNamed('init')[0]!.id, 0);
    await sync(m, p);
    const first = fake.containersNamed('app')[0]!;
    fake.exitContainer(first.id, 1);
    await sync(m, p);
    clock.advance(1000);
    fake.exitContainer(fake.containersNamed('app')[1]!.id, 1);
    const held = await sync(m, p);
    assert.match(failures(held)[0] ?? '', /CrashLoopBackOff/);

    const text = await registry.expose();
    assert.match(text, /^kubelet_started_pods_total 1$/m);
    assert.match(text, /^kubelet_started_containers_total\{container_type="init_container"\} 1$/m);
    assert.match(text, /^kubelet_started_containers_total\{container_type="container"\} 2$/m);
    assert.match(text, /^kubelet_started_pods_errors_total 0$/m);
    assert.doesNotMatch(text, /kubelet_started_containers_errors_total\{/);
  });
});
