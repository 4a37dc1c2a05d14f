import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerStatus, PodStatus } from '../../../src/api/core-v1.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { generateAPIPodStatus } from '../../../src/status/generate-api-pod-status.js';
import { LocalStatusManager, type VersionedPodStatus } from '../../../src/status/status-manager.js';
import { UID, at, container, iso, pod, runtimeStatus, sandbox } from './fixtures.js';

const logLines: string[] = [];
setLogSink((line) => logLines.push(line));

function setup() {
  const clock = new FakeClock(at(10));
  const updates: VersionedPodStatus[] = [];
  const manager = new LocalStatusManager({ clock, sink: { podStatusChanged: (u) => updates.push(u) } });
  return { clock, manager, updates };
}

const probed = () =>
  pod({
    containers: [{ name: 'app', image: 'busybox:1.36', readinessProbe: { exec: { command: ['true'] } } }],
  });

describe('LocalStatusManager', () => {
  it('stores, versions and hands each new status to the sink, ignoring repeats', () => {
    const { manager, updates, clock } = setup();
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const p = pod({});
    const status = generateAPIPodStatus({
      pod: p,
      podStatus: runtimeStatus([app]),
      podIsTerminal: false,
      nowMs: clock.now(),
    });
    manager.setPodStatus(p, status);
    assert.deepEqual(manager.getPodStatus(UID), status);
    assert.equal(updates.length, 1);
    assert.deepEqual(
      {
        uid: updates[0]!.uid,
        name: updates[0]!.podName,
        ns: updates[0]!.podNamespace,
        v: updates[0]!.version,
      },
      { uid: UID, name: 'web', ns: 'default', v: 1 },
    );
    clock.advance(5000);
    manager.setPodStatus(p, structuredClone(status));
    assert.equal(updates.length, 1, 'the same status is not a new version');
    manager.setPodStatus(p, {
      ...structuredClone(status),
      podIP: '10.88.0.9',
      podIPs: [{ ip: '10.88.0.9' }],
    });
    assert.equal(updates.length, 2);
    assert.equal(updates[1]!.version, 2);
    assert.equal(updates[1]!.atMs, at(10), 'latency counts from the first undelivered version');
  });

  it('keeps the start time and condition transition times of the cached status', () => {
    const { manager, clock } = setup();
    const p = pod({});
    manager.setPodStatus(p, { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False' }] });
    const first = manager.getPodStatus(UID)!;
    assert.equal(first.startTime, iso(10));
    assert.equal(first.conditions?.[0]?.lastTransitionTime, iso(10));
    clock.advance(7000);
    manager.setPodStatus(p, {
      phase: 'Pending',
      startTime: iso(99),
      conditions: [{ type: 'Ready', status: 'False', reason: 'X' }],
    });
    const second = manager.getPodStatus(UID)!;
    assert.equal(second.startTime, iso(10));
    assert.equal(second.conditions?.[0]?.lastTransitionTime, iso(10));
    clock.advance(1000);
    manager.setPodStatus(p, { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] });
    assert.equal(manager.getPodStatus(UID)!.conditions?.[0]?.lastTransitionTime, iso(18));
  });

  it('refuses to bring a terminated container back under Never', () => {
    const { manager, updates } = setup();
    const p = pod({ restartPolicy: 'Never' });
    const done: PodStatus = {
      phase: 'Succeeded',
      containerStatuses: [
        {
          name: 'app',
          state: { terminated: { exitCode: 0 } },
          ready: false,
          restartCount: 0,
          image: 'b',
          imageID: '',
        },
      ],
    };
    manager.setPodStatus(p, done);
    logLines.length = 0;
    manager.setPodStatus(p, {
      phase: 'Running',
      containerStatuses: [
        { name: 'app', state: { running: {} }, ready: true, restartCount: 0, image: 'b', imageID: '' },
      ],
    });
    assert.equal(manager.getPodStatus(UID)?.phase, 'Succeeded');
    assert.equal(updates.length, 1);
    assert.ok(logLines.some((l) => l.includes('attempted illegal transition to non-terminated state')));
  });

  it('lets a sidecar (restartable init container) of a Never pod run again after it exited', () => {
    const { manager, updates } = setup();
    const p = pod({ restartPolicy: 'Never' });
    p.spec.initContainers = [{ name: 'side', image: 'b', restartPolicy: 'Always' }];
    const side = (state: ContainerStatus['state'], restartCount: number): ContainerStatus => ({
      name: 'side',
      state,
      ready: false,
      restartCount,
      image: 'b',
      imageID: '',
    });
    manager.setPodStatus(p, {
      phase: 'Running',
      initContainerStatuses: [side({ terminated: { exitCode: 1 } }, 0)],
    });
    logLines.length = 0;
    manager.setPodStatus(p, { phase: 'Running', initContainerStatuses: [side({ running: {} }, 1)] });
    assert.equal(updates.length, 2);
    assert.ok(manager.getPodStatus(UID)?.initContainerStatuses?.[0]?.state?.running);
    assert.ok(!logLines.some((l) => l.includes('illegal transition')));
  });

  it('updates readiness and the Ready conditions when a probe result changes', () => {
    const { manager, clock } = setup();
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const p = probed();
    manager.setPodStatus(
      p,
      generateAPIPodStatus({
        pod: p,
        podStatus: runtimeStatus([app]),
        podIsTerminal: false,
        nowMs: clock.now(),
      }),
    );
    assert.equal(manager.getPodStatus(UID)?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
    clock.advance(3000);
    manager.setContainerReadiness(UID, app.containerID, true);
    const status = manager.getPodStatus(UID)!;
    assert.equal(status.containerStatuses?.[0]?.ready, true);
    const ready = status.conditions?.find((c) => c.type === 'Ready');
    assert.deepEqual(ready, {
      type: 'Ready',
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: iso(13),
    });
    assert.equal(status.conditions?.find((c) => c.type === 'ContainersReady')?.status, 'True');
    assert.equal(status.conditions?.find((c) => c.type === 'Initialized')?.lastTransitionTime, iso(10));
    manager.setContainerReadiness(UID, 'containerd://unknown', false);
    manager.setContainerReadiness('other-uid', app.containerID, false);
    assert.equal(manager.getPodStatus(UID)?.containerStatuses?.[0]?.ready, true);
  });

  it('records startup probe results', () => {
    const { manager, clock } = setup();
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const p = pod({
      containers: [{ name: 'app', image: 'busybox:1.36', startupProbe: { exec: { command: ['true'] } } }],
    });
    manager.setPodStatus(
      p,
      generateAPIPodStatus({
        pod: p,
        podStatus: runtimeStatus([app]),
        podIsTerminal: false,
        nowMs: clock.now(),
      }),
    );
    assert.equal(manager.getPodStatus(UID)?.containerStatuses?.[0]?.started, false);
    manager.setContainerStartup(UID, app.containerID, true);
    assert.equal(manager.getPodStatus(UID)?.containerStatuses?.[0]?.started, true);
  });

  it('terminatePod reports containers not seen stopped as failed and an API pod as Failed', () => {
    const { manager, clock, updates } = setup();
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const p = pod({});
    manager.setPodStatus(
      p,
      generateAPIPodStatus({
        pod: p,
        podStatus: runtimeStatus([app]),
        podIsTerminal: false,
        nowMs: clock.now(),
      }),
    );
    manager.terminatePod(p);
    const status = manager.getPodStatus(UID)!;
    assert.equal(status.phase, 'Failed');
    assert.deepEqual(status.containerStatuses?.[0]?.state, {
      terminated: {
        exitCode: 137,
        reason: 'ContainerStatusUnknown',
        message: 'The container could not be located when the pod was terminated',
      },
    });
    assert.equal(updates.at(-1)?.podIsFinished, true);
  });

  it('terminatePod leaves the phase of a static pod and the waiting containers of an uninitialized pod', () => {
    const { manager, clock } = setup();
    const setupC = container('setup', { state: 'running', startedAtMs: at(2) });
    const p = pod({ initContainers: [{ name: 'setup', image: 'busybox:1.36' }] }, 'file');
    manager.setPodStatus(
      p,
      generateAPIPodStatus({
        pod: p,
        podStatus: runtimeStatus([setupC]),
        podIsTerminal: false,
        nowMs: clock.now(),
      }),
    );
    manager.terminatePod(p);
    const status = manager.getPodStatus(UID)!;
    assert.equal(status.phase, 'Pending');
    assert.deepEqual(status.containerStatuses?.[0]?.state, { waiting: { reason: 'PodInitializing' } });
    assert.equal(status.initContainerStatuses?.[0]?.state?.terminated?.reason, 'ContainerStatusUnknown');
  });

  it('forgets orphaned statuses', () => {
    const { manager } = setup();
    manager.setPodStatus(pod({}), { phase: 'Pending' });
    manager.removeOrphanedStatuses(['someone-else']);
    assert.equal(manager.getPodStatus(UID), undefined);
  });

  it('bounds termination messages and keeps going when the sink throws', () => {
    const clock = new FakeClock(at(10));
    const manager = new LocalStatusManager({
      clock,
      sink: {
        podStatusChanged: () => {
          throw new Error('apiserver unreachable');
        },
      },
    });
    const p = pod({});
    logLines.length = 0;
    manager.setPodStatus(p, {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'app',
          state: { terminated: { exitCode: 1, message: 'x'.repeat(20_000) } },
          ready: false,
          restartCount: 0,
          image: 'b',
          imageID: '',
        },
      ],
    });
    assert.equal(
      manager.getPodStatus(UID)?.containerStatuses?.[0]?.state?.terminated?.message?.length,
      12_288,
    );
    assert.ok(logLines.some((l) => l.includes('apiserver unreachable')));
  });

  it('never lets a later setPodStatus bring an API pod back from finished', () => {
    const { manager, clock } = setup();
    const p = pod({});
    manager.setPodStatus(
      p,
      generateAPIPodStatus({
        pod: p,
        podStatus: runtimeStatus([], [sandbox('SANDBOX_NOTREADY')]),
        podIsTerminal: false,
        nowMs: clock.now(),
      }),
    );
    manager.terminatePod(p);
    manager.setPodStatus(p, { ...manager.getPodStatus(UID)!, podIP: '10.88.0.77' });
    assert.equal(manager.getVersionedPodStatus(UID)?.podIsFinished, true);
  });
});
