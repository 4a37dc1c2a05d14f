import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import {
  NodeStatusManager,
  type NodeStatusManagerOptions,
} from '../../../src/nodestatus/node-status-manager.js';
import { RuntimeState } from '../../../src/nodestatus/runtime-state.js';
import type { Node } from '../../../src/api/node.js';
import type { ObjectReference } from '../../../src/api/core-v1.js';
import {
  FakeCri,
  fakeMachineHost,
  fakeNetworkHost,
  image,
  nodeStatusConfig,
  nodeStatusFlags,
  settle,
} from './fixtures.js';
import { StoreClient } from './store-client.js';

const logLines: string[] = [];
setLogSink((line) => logLines.push(line));

const KUBELET_VERSION = 'v1.30.0+tskubelet.0.1.0';

interface Harness {
  clock: FakeClock;
  client: StoreClient;
  cri: FakeCri;
  runtimeState: RuntimeState;
  events: string[];
  manager: NodeStatusManager;
  node(): Node | undefined;
  /** Moves the fake time forward in steps, letting the loops run between them. */
  run(ms: number, stepMs?: number): Promise<void>;
}

let current: Harness | undefined;

afterEach(async () => {
  await current?.manager.stop();
  current = undefined;
});

async function harness(
  overrides: Partial<NodeStatusManagerOptions> = {},
  opts: { runtimeUp?: boolean } = {},
): Promise<Harness> {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0));
  const client = StoreClient.create(clock);
  const cri = new FakeCri();
  const runtimeState = new RuntimeState(clock);
  const status = async () => (await cri.status(false, { timeoutMs: 10_000 })).status;
  if (opts.runtimeUp !== false) await runtimeState.updateRuntimeUp(status);
  // The kubelet checks the runtime every 5 s (ClusterNode's loop); without it the runtime counts as down.
  const runtimeUp = () => {
    void runtimeState.updateRuntimeUp(status);
    clock.setTimeout(runtimeUp, 5_000);
  };
  clock.setTimeout(runtimeUp, 5_000);
  const events: string[] = [];
  const manager = new NodeStatusManager({
    nodeName: 'n1',
    config: nodeStatusConfig(),
    flags: nodeStatusFlags(),
    client,
    clock,
    kubeletVersion: KUBELET_VERSION,
    runtimeService: cri,
    runtimeName: 'containerd',
    imageService: cri,
    runtimeState,
    updateRuntimeUp: () => runtimeState.updateRuntimeUp(status),
    recorder: {
      eventFor: (ref: ObjectReference, type, reason, message) =>
        events.push(`${ref.kind}/${ref.name} uid=${ref.uid} ${type} ${reason}: ${message}`),
    },
    machineHost: fakeMachineHost(),
    networkHost: fakeNetworkHost(),
    random: () => 0,
    ...overrides,
  });
  const h: Harness = {
    clock,
    client,
    cri,
    runtimeState,
    events,
    manager,
    node: () => client.store.tryGet('nodes', 'n1') as Node | undefined,
    run: async (ms, stepMs = 100) => {
      await settle();
      for (let t = 0; t < ms; t += stepMs) {
        clock.advance(Math.min(stepMs, ms - t));
        await settle();
      }
    },
  };
  current = h;
  return h;
}

function statusPatches(client: StoreClient) {
  return client.callsOf('patch', 'nodes').filter((c) => c.subresource === 'status');
}

describe('NodeStatusManager: registration', () => {
  it('creates the node with its labels, annotation, taints and full status', async () => {
    const h = await harness({
      config: nodeStatusConfig({
        registerWithTaints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }],
      }),
      flags: nodeStatusFlags({ nodeLabels: { team: 'a' } }),
    });
    h.manager.start();
    await h.run(100);
    assert.equal(h.manager.registrationCompleted, true);
    const created = h.client.callsOf('create', 'nodes');
    assert.equal(created.length, 1);
    assert.equal(created[0]?.atMs, Date.UTC(2026, 0, 1) + 100, 'the first attempt waits 100 ms, as upstream');
    const node = h.node()!;
    assert.deepEqual(node.metadata.labels, {
      'kubernetes.io/hostname': 'n1',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': node.status?.nodeInfo?.architecture,
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/arch': node.status?.nodeInfo?.architecture,
      team: 'a',
    });
    assert.deepEqual(node.metadata.annotations, {
      'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
    });
    assert.deepEqual(node.spec?.taints, [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }]);
    assert.deepEqual(node.status?.addresses, [
      { type: 'InternalIP', address: '192.0.2.2' },
      { type: 'Hostname', address: 'n1' },
    ]);
    assert.deepEqual(node.status?.capacity, {
      cpu: '2',
      memory: '24684092Ki',
      'hugepages-1Gi': '0',
      'hugepages-2Mi': '0',
      pods: '110',
      'ephemeral-storage': '100000000Ki',
    });
    assert.equal(node.status?.allocatable?.memory, '24581692Ki');
    assert.equal(node.status?.allocatable?.['ephemeral-storage'], '92159999848');
    assert.deepEqual(node.status?.nodeInfo, {
      machineID: '3d1219c7c4c5404aaa1f6d2a48adfda4',
      systemUUID: '3d1219c7c4c5404aaa1f6d2a48adfda4',
      bootID: 'bd552fd1-3a8b-424d-995d-37e744b88677',
      kernelVersion: '6.1.0-test-amd64',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      containerRuntimeVersion: 'containerd://1.6.20~ds1',
      kubeletVersion: KUBELET_VERSION,
      kubeProxyVersion: KUBELET_VERSION,
      operatingSystem: 'linux',
      architecture: node.status?.nodeInfo?.architecture,
    });
    assert.deepEqual(node.status?.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
    assert.deepEqual(node.status?.images, [{ names: ['registry.k8s.io/pause:3.9'], sizeBytes: 300_000 }]);
    assert.deepEqual(
      node.status?.conditions?.map((c) => `${c.type}=${c.status} ${c.reason}`),
      [
        'MemoryPressure=False KubeletHasSufficientMemory',
        'DiskPressure=False KubeletHasNoDiskPressure',
        'PIDPressure=False KubeletHasSufficientPID',
        'Ready=True KubeletReady',
      ],
    );
    assert.deepEqual(h.events, [
      'Node/n1 uid=n1 Normal NodeHasSufficientMemory: Node n1 status is now: NodeHasSufficientMemory',
      'Node/n1 uid=n1 Normal NodeHasNoDiskPressure: Node n1 status is now: NodeHasNoDiskPressure',
      'Node/n1 uid=n1 Normal NodeHasSufficientPID: Node n1 status is now: NodeHasSufficientPID',
    ]);
    for (const call of h.client.calls)
      assert.equal(call.timeoutMs, 10_000, `${call.verb} ${call.resource} has a deadline`);
    for (const call of h.cri.calls) assert.match(call, / 10000$/);
  });

  it('retries with back-off (100 ms doubling to 7 s) until the API server answers', async () => {
    const h = await harness();
    h.client.down = true;
    h.manager.start();
    await h.run(30_000, 100);
    const start = Date.UTC(2026, 0, 1);
    const attempts = h.client.callsOf('create', 'nodes').map((c) => c.atMs - start);
    assert.deepEqual(attempts, [100, 300, 700, 1500, 3100, 6300, 12_700, 19_700, 26_700]);
    h.client.down = false;
    await h.run(7_000, 100);
    assert.equal(h.manager.registrationCompleted, true);
    assert.ok(h.node());
  });

  it('adopts an existing node: fixes the labels and annotation it owns, keeps taints and others', async () => {
    const h = await harness({
      config: nodeStatusConfig({ registerWithTaints: [{ key: 'new', effect: 'NoSchedule' }] }),
    });
    h.client.store.create('nodes', {
      metadata: {
        name: 'n1',
        labels: { 'kubernetes.io/hostname': 'stale', 'kubernetes.io/os': 'linux', keep: 'me' },
      },
      spec: { taints: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] },
    });
    h.manager.start();
    await h.run(200);
    assert.equal(h.manager.registrationCompleted, true);
    const node = h.node()!;
    assert.equal(node.metadata.labels?.['kubernetes.io/hostname'], 'n1');
    assert.equal(node.metadata.labels?.['beta.kubernetes.io/os'], 'linux');
    assert.equal(node.metadata.labels?.keep, 'me');
    assert.equal(
      node.metadata.annotations?.['volumes.kubernetes.io/controller-managed-attach-detach'],
      'true',
    );
    assert.deepEqual(node.spec?.taints, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }]);
    // The status round that follows fills in the rest.
    assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    assert.equal(node.status?.nodeInfo?.containerRuntimeVersion, 'containerd://1.6.20~ds1');
  });

  it("keeps the conditions others set (node-problem-detector's) through its status rounds", async () => {
    const h = await harness();
    const kernelDeadlock = {
      type: 'KernelDeadlock',
      status: 'False',
      lastHeartbeatTime: '2025-12-31T23:00:00Z',
      lastTransitionTime: '2025-12-31T23:00:00Z',
      reason: 'KernelHasNoDeadlock',
      message: 'kernel has no deadlock',
    };
    h.client.store.create('nodes', { metadata: { name: 'n1' }, status: { conditions: [kernelDeadlock] } });
    h.manager.start();
    await h.run(60_000, 1_000);
    const conditions = h.node()?.status?.conditions ?? [];
    assert.deepEqual(
      conditions.find((c) => c.type === 'KernelDeadlock'),
      kernelDeadlock,
    );
    assert.equal(conditions.find((c) => c.type === 'Ready')?.status, 'True');
    assert.ok(h.client.callsOf('patch', 'nodes').length >= 2, 'several status rounds ran');
  });

  it('does not register with registerNode false, and updates the status of a node made by others', async () => {
    const h = await harness({ config: nodeStatusConfig({ registerNode: false }) });
    h.client.store.create('nodes', { metadata: { name: 'n1' } });
    h.manager.start();
    await h.run(100);
    assert.equal(h.client.callsOf('create', 'nodes').length, 0);
    assert.equal(h.node()?.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
  });
});

describe('NodeStatusManager: status updates', () => {
  it('patches at once after registering, then only on change or every nodeStatusReportFrequency', async () => {
    const h = await harness();
    h.manager.start();
    await h.run(100);
    assert.equal(statusPatches(h.client).length, 1, 'the first round reports: nothing was reported yet');
    const gets = () => h.client.callsOf('get', 'nodes').length;
    const getsBefore = gets();

    await h.run(60_000, 1000);
    assert.equal(gets() - getsBefore, 6, 'a status round every 10 s');
    assert.equal(statusPatches(h.client).length, 1, 'nothing changed: no patch');

    h.cri.images.push(image('sha256:busybox', 2_000_000, ['busybox:1.36']));
    await h.run(10_000, 1000);
    assert.equal(statusPatches(h.client).length, 2);
    const patch = statusPatches(h.client)[1]?.body as { status: { images: unknown[] } };
    assert.deepEqual(patch.status.images, [
      { names: ['busybox:1.36'], sizeBytes: 2_000_000 },
      { names: ['registry.k8s.io/pause:3.9'], sizeBytes: 300_000 },
    ]);

    const lastReport = h.manager.lastStatusReportMs;
    await h.run(300_000 - (h.clock.now() - lastReport) - 1000, 1000);
    assert.equal(statusPatches(h.client).length, 2);
    await h.run(11_000, 1000);
    assert.equal(statusPatches(h.client).length, 3, 'the report is due after 5 min');
    const heartbeat = h.node()?.status?.conditions?.find((c) => c.type === 'Ready')?.lastHeartbeatTime;
    assert.equal(heartbeat, new Date(h.manager.lastStatusReportMs).toISOString().replace(/\.\d+Z$/, 'Z'));
    const transition = h.node()?.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime;
    assert.equal(transition, '2026-01-01T00:00:00Z', 'a heartbeat is not a transition');
  });

  it("hands the Node's spec.podCIDRs to the runtime and reports the round in which they changed", async () => {
    const handed: string[] = [];
    let refuse = false;
    const h = await harness({
      updatePodCIDR: async (cidr) => {
        handed.push(cidr);
        if (refuse) throw new Error('runtime said no');
        const changed = handed.at(-2) !== cidr;
        return changed;
      },
    });
    h.manager.start();
    await h.run(100);
    assert.deepEqual(handed, [], 'no podCIDRs in the spec: nothing handed over');
    const node = h.node()!;
    h.client.store.update('nodes', {
      ...node,
      spec: { ...node.spec, podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:1::/64'] },
    } as never);
    const patchesBefore = statusPatches(h.client).length;
    await h.run(10_000, 1000);
    assert.deepEqual(handed, ['10.244.1.0/24,fd00:1::/64']);
    assert.equal(statusPatches(h.client).length, patchesBefore + 1, 'a changed pod CIDR reports the status');
    await h.run(10_000, 1000);
    assert.equal(statusPatches(h.client).length, patchesBefore + 1, 'unchanged: no report');
    refuse = true;
    await h.run(10_000, 1000);
    assert.equal(
      statusPatches(h.client).length,
      patchesBefore + 2,
      'a failed update still reports, as upstream',
    );
    assert.ok(logLines.some((l) => l.includes('Error updating pod CIDR') && l.includes('runtime said no')));
  });

  it('retries a failed round up to five times, then waits for the next', async () => {
    const failures: number[] = [];
    const h = await harness({ onRepeatedHeartbeatFailure: () => failures.push(1) });
    h.manager.start();
    await h.run(100);
    h.cri.images = [];
    h.client.failNext(3, 'patch');
    await h.run(10_000, 1000);
    assert.equal(statusPatches(h.client).length, 1 + 4);
    assert.equal(h.node()?.status?.images, undefined, 'the fourth try got through');
    assert.equal(failures.length, 2, 'tries 2 and 3 failed after a failure');

    h.cri.images = [image('x', 1, ['x:1'])];
    h.client.failNext(100, 'patch');
    const before = statusPatches(h.client).length;
    await h.run(10_000, 1000);
    assert.equal(statusPatches(h.client).length - before, 5);
    assert.ok(
      logLines.some((l) => l.includes('Unable to update node status') && l.includes('exceeds retry count')),
    );
    h.client.failNext(0);
    await h.run(10_000, 1000);
    assert.deepEqual(h.node()?.status?.images, [{ names: ['x:1'], sizeBytes: 1 }]);
  });

  it('turns Ready as soon as the runtime is, through the fast loop, and records NodeReady', async () => {
    const h = await harness({}, { runtimeUp: false });
    h.cri.statusError = new Error('containerd is starting');
    h.manager.start();
    await h.run(100);
    const ready = () => h.node()?.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready()?.status, 'False');
    assert.equal(ready()?.reason, 'KubeletNotReady');
    assert.equal(ready()?.message, 'container runtime status check may not have completed yet');

    h.cri.statusError = undefined;
    await h.run(300);
    assert.equal(ready()?.status, 'True', 'Ready well before the next 10 s round');
    assert.equal(ready()?.message, 'kubelet is posting ready status');
    assert.equal(ready()?.lastTransitionTime, '2026-01-01T00:00:00Z');
    assert.ok(h.events.some((e) => e.endsWith('Normal NodeReady: Node n1 status is now: NodeReady')));
    assert.ok(logLines.some((l) => l.includes('Fast updating node status as it just became ready')));
  });

  it('reports NotReady with the network and PLEG reasons, and Ready again when they clear', async () => {
    let plegHealthy = true;
    const h = await harness();
    h.runtimeState.addHealthCheck({
      name: 'PLEG',
      check: () =>
        plegHealthy
          ? { healthy: true }
          : { healthy: false, message: 'pleg was last seen active 3m0.1s ago; threshold is 3m0s' },
    });
    h.manager.start();
    await h.run(100);
    const ready = () => h.node()?.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready()?.status, 'True');

    plegHealthy = false;
    await h.run(10_000, 1000);
    assert.equal(ready()?.status, 'False');
    assert.equal(
      ready()?.message,
      'PLEG is not healthy: pleg was last seen active 3m0.1s ago; threshold is 3m0s',
    );

    plegHealthy = true;
    h.cri.conditions[1] = {
      type: 'NetworkReady',
      status: false,
      reason: 'NetworkPluginNotReady',
      message: 'Network plugin returns error: cni plugin not initialized',
    };
    await h.run(10_000, 1000);
    assert.equal(
      ready()?.message,
      'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
    );
    h.cri.conditions[1] = { type: 'NetworkReady', status: true, reason: '', message: '' };
    await h.run(10_000, 1000);
    assert.equal(ready()?.status, 'True');
    assert.deepEqual(
      h.events.filter((e) => /NodeReady|NodeNotReady/.test(e)).map((e) => e.split(' ')[3]),
      ['NodeNotReady:', 'NodeReady:'],
    );
  });

  it('puts back os/arch labels removed by someone else', async () => {
    const h = await harness();
    h.manager.start();
    await h.run(100);
    const node = h.client.store.get('nodes', 'n1');
    delete node.metadata.labels!['kubernetes.io/arch'];
    h.client.store.update('nodes', node);
    await h.run(10_000, 1000);
    assert.ok(h.node()?.metadata.labels?.['kubernetes.io/arch']);
  });

  it('stops promptly, aborting its loops', async () => {
    const h = await harness();
    h.client.down = true;
    h.manager.start();
    await h.run(1000);
    await h.manager.stop();
    const calls = h.client.calls.length;
    await h.run(30_000, 1000);
    assert.equal(h.client.calls.length, calls);
  });
});
