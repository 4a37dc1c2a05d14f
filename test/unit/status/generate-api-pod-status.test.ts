import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerStatus, PodCondition, PodStatus } from '../../../src/api/core-v1.js';
import {
  generateAPIPodStatus,
  getPhase,
  type GenerateAPIPodStatusInput,
} from '../../../src/status/generate-api-pod-status.js';
import { BUSYBOX_REF, T0, UID, at, container, iso, pod, runtimeStatus, sandbox } from './fixtures.js';

function generate(
  input: Partial<GenerateAPIPodStatusInput> & Pick<GenerateAPIPodStatusInput, 'pod' | 'podStatus'>,
): PodStatus {
  return generateAPIPodStatus({ podIsTerminal: false, nowMs: at(10), ...input });
}

function condition(status: PodStatus, type: string): PodCondition | undefined {
  return status.conditions?.find((c) => c.type === type);
}

function cs(status: PodStatus, name: string): ContainerStatus {
  const found = [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])].find(
    (s) => s.name === name,
  );
  assert.ok(found, `no status for ${name}`);
  return found;
}

const kubeletConditions = (
  ts: string,
  overrides: Record<string, Partial<PodCondition>> = {},
): PodCondition[] =>
  ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
    type,
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: ts,
    ...overrides[type],
  }));

describe('generateAPIPodStatus', () => {
  it('reports a running pod exactly as upstream would', () => {
    const app = container('app', { state: 'running', startedAtMs: at(2) + 345 });
    const status = generate({ pod: pod({}), podStatus: runtimeStatus([app]) });
    assert.deepEqual(status, {
      phase: 'Running',
      conditions: kubeletConditions(iso(10)),
      podIP: '10.88.0.5',
      podIPs: [{ ip: '10.88.0.5' }],
      startTime: iso(10),
      containerStatuses: [
        {
          name: 'app',
          state: { running: { startedAt: '2026-11-21T06:50:02Z' } },
          lastState: {},
          ready: true,
          started: true,
          restartCount: 0,
          image: 'busybox:1.36',
          imageID: BUSYBOX_REF,
          containerID: app.containerID,
        },
      ],
      qosClass: 'BestEffort',
    });
  });

  it('shows a crash-looping container waiting with CrashLoopBackOff and its last exit as lastState', () => {
    const first = container('app', {
      state: 'exited',
      createdAtMs: at(1),
      startedAtMs: at(1),
      finishedAtMs: at(2),
      exitCode: 1,
      reason: 'Error',
      restartCount: 0,
    });
    const second = container('app', {
      state: 'exited',
      createdAtMs: at(12),
      startedAtMs: at(12),
      finishedAtMs: at(13),
      exitCode: 1,
      reason: 'Error',
      restartCount: 1,
    });
    const message = `back-off 10s restarting failed container=app pod=web_default(${UID})`;
    const status = generate({
      pod: pod({}),
      podStatus: runtimeStatus([second, first]),
      nowMs: at(14),
      waitingReasons: new Map([['app', { reason: 'CrashLoopBackOff', message }]]),
    });
    assert.equal(status.phase, 'Running', 'restartPolicy Always: restarting counts as running');
    assert.deepEqual(cs(status, 'app'), {
      name: 'app',
      state: { waiting: { reason: 'CrashLoopBackOff', message } },
      lastState: {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          startedAt: iso(12),
          finishedAt: iso(13),
          containerID: second.containerID,
        },
      },
      ready: false,
      started: false,
      restartCount: 1,
      image: 'busybox:1.36',
      imageID: BUSYBOX_REF,
      containerID: second.containerID,
    });
    assert.deepEqual(condition(status, 'Ready'), {
      type: 'Ready',
      status: 'False',
      lastProbeTime: null,
      lastTransitionTime: iso(14),
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [app]',
    });
    assert.equal(condition(status, 'ContainersReady')?.message, 'containers with unready status: [app]');
  });

  it('without a recorded start failure, shows the exited attempt as terminated, with the one before as lastState', () => {
    const older = container('app', {
      state: 'exited',
      createdAtMs: at(1),
      exitCode: 2,
      reason: 'Error',
      finishedAtMs: at(2),
    });
    const newer = container('app', {
      state: 'exited',
      createdAtMs: at(3),
      exitCode: 137,
      reason: 'OOMKilled',
      restartCount: 1,
    });
    const status = generate({ pod: pod({}), podStatus: runtimeStatus([older, newer]) });
    assert.deepEqual(cs(status, 'app').state, {
      terminated: { exitCode: 137, reason: 'OOMKilled', containerID: newer.containerID },
    });
    assert.deepEqual(cs(status, 'app').lastState, {
      terminated: { exitCode: 2, reason: 'Error', finishedAt: iso(2), containerID: older.containerID },
    });
  });

  it('completes a pod under OnFailure once every container has succeeded', () => {
    const app = container('app', {
      state: 'exited',
      startedAtMs: at(1),
      finishedAtMs: at(4),
      exitCode: 0,
      reason: 'Completed',
    });
    const status = generate({
      pod: pod({ restartPolicy: 'OnFailure' }),
      podStatus: runtimeStatus([app], [sandbox('SANDBOX_NOTREADY')]),
      podIsTerminal: true,
      // A failure recorded earlier no longer applies: a succeeded container is not restarted under OnFailure.
      waitingReasons: new Map([['app', { reason: 'CrashLoopBackOff', message: 'stale' }]]),
    });
    assert.equal(status.phase, 'Succeeded');
    assert.deepEqual(cs(status, 'app').state, {
      terminated: {
        exitCode: 0,
        reason: 'Completed',
        startedAt: iso(1),
        finishedAt: iso(4),
        containerID: app.containerID,
      },
    });
    assert.deepEqual(
      status.conditions?.map((c) => [c.type, c.status, c.reason]),
      [
        ['PodReadyToStartContainers', 'False', undefined],
        ['Initialized', 'True', 'PodCompleted'],
        ['Ready', 'False', 'PodCompleted'],
        ['ContainersReady', 'False', 'PodCompleted'],
        ['PodScheduled', 'True', undefined],
      ],
    );
    assert.equal(status.podIP, undefined, 'no ready sandbox, no IP from this reading');
  });

  it('keeps a failed container under OnFailure running (it will restart)', () => {
    const app = container('app', { state: 'exited', exitCode: 3, reason: 'Error' });
    const status = generate({ pod: pod({ restartPolicy: 'OnFailure' }), podStatus: runtimeStatus([app]) });
    assert.equal(status.phase, 'Running');
  });

  it('fails a pod under Never when a container failed', () => {
    const ok = container('sidecar', { state: 'exited', exitCode: 0, reason: 'Completed' });
    const bad = container('app', { state: 'exited', exitCode: 1, reason: 'Error' });
    const status = generate({
      pod: pod({
        restartPolicy: 'Never',
        containers: [
          { name: 'sidecar', image: 'busybox:1.36' },
          { name: 'app', image: 'busybox:1.36' },
        ],
      }),
      podStatus: runtimeStatus([ok, bad]),
      waitingReasons: new Map([['app', { reason: 'CrashLoopBackOff', message: 'ignored under Never' }]]),
    });
    assert.equal(status.phase, 'Failed');
    assert.deepEqual(
      status.containerStatuses?.map((s) => s.name),
      ['app', 'sidecar'],
      'regular containers are listed by name, as upstream sorts them',
    );
    assert.equal(
      cs(status, 'app').state?.terminated?.exitCode,
      1,
      'Never does not restart, so no waiting reason',
    );
    assert.deepEqual(condition(status, 'Ready')?.reason, 'PodFailed');
  });

  it('reports a static pod that ran to completion by its restart policy, not by podIsTerminal', () => {
    const app = container('app', { state: 'exited', exitCode: 1, reason: 'Error' });
    const status = generate({
      pod: pod({ restartPolicy: 'Always' }, 'file'),
      podStatus: runtimeStatus([app]),
      podIsTerminal: true,
    });
    assert.equal(status.phase, 'Running');
    const apiPod = generate({
      pod: pod({ restartPolicy: 'Always' }),
      podStatus: runtimeStatus([app]),
      podIsTerminal: true,
    });
    assert.equal(apiPod.phase, 'Failed');
  });

  it('shows a running init container, and regular containers waiting with PodInitializing', () => {
    const setup = container('setup', { state: 'running', startedAtMs: at(2) });
    const p = pod({ initContainers: [{ name: 'setup', image: 'busybox:1.36' }] });
    const status = generate({ pod: p, podStatus: runtimeStatus([setup]) });
    assert.equal(status.phase, 'Pending');
    assert.deepEqual(cs(status, 'app'), {
      name: 'app',
      state: { waiting: { reason: 'PodInitializing' } },
      lastState: {},
      ready: false,
      started: false,
      restartCount: 0,
      image: 'busybox:1.36',
      imageID: '',
    });
    assert.deepEqual(cs(status, 'setup').state, { running: { startedAt: iso(2) } });
    assert.equal(cs(status, 'setup').ready, false, 'a plain init container is ready only once it succeeded');
    assert.deepEqual(condition(status, 'Initialized'), {
      type: 'Initialized',
      status: 'False',
      lastProbeTime: null,
      lastTransitionTime: iso(10),
      reason: 'ContainersNotInitialized',
      message: 'containers with incomplete status: [setup]',
    });
    assert.equal(condition(status, 'Ready')?.message, 'containers with unready status: [app]');
  });

  it('lists init containers in spec order and counts the pod initialized once they succeeded', () => {
    const zeta = container('zeta', { state: 'exited', exitCode: 0, reason: 'Completed' });
    const alpha = container('alpha', { state: 'exited', exitCode: 0, reason: 'Completed' });
    const app = container('app', { state: 'running', startedAtMs: at(5) });
    const p = pod({
      initContainers: [
        { name: 'zeta', image: 'busybox:1.36' },
        { name: 'alpha', image: 'busybox:1.36' },
      ],
    });
    const status = generate({ pod: p, podStatus: runtimeStatus([app, alpha, zeta]) });
    assert.deepEqual(
      status.initContainerStatuses?.map((s) => [s.name, s.ready]),
      [
        ['zeta', true],
        ['alpha', true],
      ],
    );
    assert.equal(status.phase, 'Running');
    assert.equal(condition(status, 'Initialized')?.status, 'True');
    assert.equal(condition(status, 'Ready')?.status, 'True');
  });

  it('fails a pod under Never whose init container failed', () => {
    const setup = container('setup', { state: 'exited', exitCode: 1, reason: 'Error' });
    const p = pod({ restartPolicy: 'Never', initContainers: [{ name: 'setup', image: 'busybox:1.36' }] });
    assert.equal(generate({ pod: p, podStatus: runtimeStatus([setup]) }).phase, 'Failed');
  });

  it('keeps a pod with a crash-looping init container pending under Always', () => {
    const setup = container('setup', { state: 'exited', exitCode: 1, reason: 'Error' });
    const p = pod({ initContainers: [{ name: 'setup', image: 'busybox:1.36' }] });
    const status = generate({
      pod: p,
      podStatus: runtimeStatus([setup]),
      waitingReasons: new Map([
        ['setup', { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container=setup' }],
      ]),
    });
    assert.equal(status.phase, 'Pending');
    assert.equal(cs(status, 'setup').state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(cs(status, 'setup').lastState?.terminated?.exitCode, 1);
  });

  it('shows an image pull failure as the waiting reason of a container that never ran', () => {
    const message =
      'failed to pull and unpack image "docker.io/library/nope:latest": failed to resolve reference: not found';
    const p = pod({ containers: [{ name: 'app', image: 'nope' }] });
    const status = generate({
      pod: p,
      podStatus: runtimeStatus([]),
      waitingReasons: new Map([['app', { reason: 'ErrImagePull', message }]]),
    });
    assert.equal(status.phase, 'Pending');
    assert.deepEqual(cs(status, 'app'), {
      name: 'app',
      state: { waiting: { reason: 'ErrImagePull', message } },
      lastState: {},
      ready: false,
      started: false,
      restartCount: 0,
      image: 'nope',
      imageID: '',
    });
    assert.equal(condition(status, 'PodReadyToStartContainers')?.status, 'True');
    const backOff = generate({
      pod: p,
      podStatus: runtimeStatus([]),
      waitingReasons: new Map([
        ['app', { reason: 'ImagePullBackOff', message: 'Back-off pulling image "nope"' }],
      ]),
    });
    assert.deepEqual(cs(backOff, 'app').state, {
      waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "nope"' },
    });
  });

  it('shows ContainerCreating before anything ran, and no ready-to-start before the sandbox', () => {
    const status = generate({ pod: pod({}), podStatus: runtimeStatus([], []) });
    assert.deepEqual(cs(status, 'app').state, { waiting: { reason: 'ContainerCreating' } });
    assert.equal(condition(status, 'PodReadyToStartContainers')?.status, 'False');
    assert.equal(status.phase, 'Pending');
  });

  it('holds a container back until its probes pass', () => {
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const probed = pod({
      containers: [
        {
          name: 'app',
          image: 'busybox:1.36',
          readinessProbe: { exec: { command: ['true'] } },
          startupProbe: { exec: { command: ['true'] } },
        },
      ],
    });
    const before = generate({ pod: probed, podStatus: runtimeStatus([app]) });
    assert.deepEqual([cs(before, 'app').started, cs(before, 'app').ready], [false, false]);
    const started = generate({
      pod: probed,
      podStatus: runtimeStatus([app]),
      probeResults: { startup: new Map([[app.containerID, true]]) },
    });
    assert.deepEqual([cs(started, 'app').started, cs(started, 'app').ready], [true, false]);
    const ready = generate({
      pod: probed,
      podStatus: runtimeStatus([app]),
      probeResults: {
        startup: new Map([[app.containerID, true]]),
        readiness: new Map([[app.containerID, true]]),
      },
    });
    assert.deepEqual([cs(ready, 'app').started, cs(ready, 'app').ready], [true, true]);
    assert.equal(condition(ready, 'Ready')?.status, 'True');
  });

  it('keeps lastTransitionTime and startTime while nothing changes, and moves them only on a change', () => {
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const probed = pod({
      containers: [{ name: 'app', image: 'busybox:1.36', readinessProbe: { exec: { command: ['true'] } } }],
    });
    const first = generate({ pod: probed, podStatus: runtimeStatus([app]), nowMs: at(10) });
    const second = generate({
      pod: probed,
      podStatus: runtimeStatus([app]),
      nowMs: at(20),
      oldPodStatus: first,
    });
    assert.deepEqual(second, first);
    const third = generate({
      pod: probed,
      podStatus: runtimeStatus([app]),
      nowMs: at(30),
      oldPodStatus: second,
      probeResults: { readiness: new Map([[app.containerID, true]]) },
    });
    assert.equal(third.startTime, iso(10));
    assert.equal(condition(third, 'Ready')?.lastTransitionTime, iso(30));
    assert.equal(condition(third, 'ContainersReady')?.lastTransitionTime, iso(30));
    assert.equal(condition(third, 'Initialized')?.lastTransitionTime, iso(10));
    assert.equal(condition(third, 'PodScheduled')?.lastTransitionTime, iso(10));
  });

  it("keeps conditions others own, the scheduler's PodScheduled time, and a terminal phase once reached", () => {
    const p = pod({});
    p.status = {
      phase: 'Succeeded',
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-21T06:49:58Z' },
        { type: 'example.com/gate', status: 'True', lastTransitionTime: '2026-11-21T06:49:59Z' },
      ],
    };
    const status = generate({ pod: p, podStatus: runtimeStatus([]) });
    assert.equal(status.phase, 'Succeeded', 'no way back from a terminal phase');
    assert.deepEqual(status.conditions?.[0], {
      type: 'example.com/gate',
      status: 'True',
      lastTransitionTime: '2026-11-21T06:49:59Z',
    });
    assert.equal(condition(status, 'PodScheduled')?.lastTransitionTime, '2026-11-21T06:49:58Z');
  });

  it('preserves the reason and message of an unchanged phase', () => {
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const old: PodStatus = { phase: 'Running', reason: 'Example', message: 'kept while Running' };
    const status = generate({ pod: pod({}), podStatus: runtimeStatus([app]), oldPodStatus: old });
    assert.equal(status.reason, 'Example');
    assert.equal(status.message, 'kept while Running');
  });

  it('infers a stop for a container that vanished from the runtime while running', () => {
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const first = generate({ pod: pod({}), podStatus: runtimeStatus([app]) });
    const status = generate({
      pod: pod({}),
      podStatus: runtimeStatus([]),
      oldPodStatus: first,
      nowMs: at(20),
    });
    assert.deepEqual(cs(status, 'app').lastState, {
      terminated: {
        exitCode: 137,
        reason: 'ContainerStatusUnknown',
        message:
          'The container could not be located when the pod was deleted.  The container used to be Running',
      },
    });
    assert.equal(cs(status, 'app').restartCount, 1);
    assert.equal(status.phase, 'Running', 'stopped, not waiting: the pod does not fall back to Pending');
  });

  it('reports a container the runtime lost track of after running as terminated, not waiting', () => {
    const running = container('app', { state: 'running', startedAtMs: at(2) });
    const first = generate({ pod: pod({}), podStatus: runtimeStatus([running]) });
    const lost = { ...running, state: 'unknown' as const };
    const status = generate({ pod: pod({}), podStatus: runtimeStatus([lost]), oldPodStatus: first });
    assert.deepEqual(cs(status, 'app').state, {
      terminated: {
        exitCode: 137,
        reason: 'ContainerStatusUnknown',
        message: 'The container could not be located when the pod was terminated',
      },
    });
    assert.equal(cs(status, 'app').restartCount, 1);
  });

  it('fills host IPs when given, and gives host-network pods the node addresses', () => {
    const app = container('app', { state: 'running', startedAtMs: at(2) });
    const hostNet = pod({ hostNetwork: true });
    const hostSandbox = sandbox('SANDBOX_READY', '');
    hostSandbox.linux = { namespaces: { options: { network: 'NODE', pid: 'CONTAINER', ipc: 'NODE' } } };
    const status = generate({
      pod: hostNet,
      podStatus: runtimeStatus([app], [hostSandbox]),
      hostIPs: ['192.168.1.10', 'fd00::10'],
    });
    assert.equal(status.hostIP, '192.168.1.10');
    assert.deepEqual(status.hostIPs, [{ ip: '192.168.1.10' }, { ip: 'fd00::10' }]);
    assert.deepEqual(status.podIPs, [{ ip: '192.168.1.10' }, { ip: 'fd00::10' }]);
    assert.equal(condition(status, 'PodReadyToStartContainers')?.status, 'True');
  });

  it('orders dual-stack pod IPs by the node primary family', () => {
    const app = container('app', { state: 'running' });
    const rs = runtimeStatus([app]);
    rs.ips = ['fd00:10:88::5', '10.88.0.5', '10.88.0.6'];
    assert.deepEqual(generate({ pod: pod({}), podStatus: rs }).podIPs, [
      { ip: '10.88.0.5' },
      { ip: 'fd00:10:88::5' },
    ]);
    assert.deepEqual(generate({ pod: pod({}), podStatus: rs, hostIPs: ['fd00::1'] }).podIPs, [
      { ip: 'fd00:10:88::5' },
      { ip: '10.88.0.5' },
    ]);
  });

  it('needs a new sandbox when the newest one has no IP or two are ready', () => {
    const noIp = sandbox('SANDBOX_READY', '');
    assert.equal(
      condition(generate({ pod: pod({}), podStatus: runtimeStatus([], [noIp]) }), 'PodReadyToStartContainers')
        ?.status,
      'False',
    );
    const two = [sandbox('SANDBOX_READY', '10.88.0.7', 1), sandbox('SANDBOX_READY', '10.88.0.5', 0)];
    assert.equal(
      condition(generate({ pod: pod({}), podStatus: runtimeStatus([], two) }), 'PodReadyToStartContainers')
        ?.status,
      'False',
    );
  });

  it('writes timestamps in whole seconds', () => {
    const app = container('app', { state: 'running', startedAtMs: T0 + 999 });
    const status = generate({ pod: pod({}), podStatus: runtimeStatus([app]), nowMs: T0 + 1999 });
    assert.equal(cs(status, 'app').state?.running?.startedAt, '2026-11-21T06:50:00Z');
    assert.equal(status.startTime, '2026-11-21T06:50:01Z');
  });
});

describe('getPhase with sidecars', () => {
  const p = pod({
    initContainers: [{ name: 'proxy', image: 'busybox:1.36', restartPolicy: 'Always' }],
  });
  const running = (name: string, started: boolean): ContainerStatus => ({
    name,
    state: { running: { startedAt: iso(1) } },
    ready: started,
    started,
    restartCount: 0,
    image: 'busybox:1.36',
    imageID: BUSYBOX_REF,
  });
  it('is Pending while the sidecar has not started and no regular container ran', () => {
    assert.equal(getPhase(p, [running('proxy', false)], false), 'Pending');
  });
  it('is Running once regular containers run, even if the sidecar restarts', () => {
    const restarting: ContainerStatus = {
      ...running('proxy', false),
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1 } },
    };
    assert.equal(getPhase(p, [restarting, running('app', true)], false), 'Running');
  });
  it('ignores a stopped sidecar once the regular containers have completed', () => {
    const never = pod({
      restartPolicy: 'Never',
      initContainers: [{ name: 'proxy', image: 'b', restartPolicy: 'Always' }],
    });
    const done: ContainerStatus = { ...running('app', false), state: { terminated: { exitCode: 0 } } };
    const proxy: ContainerStatus = { ...running('proxy', false), state: { terminated: { exitCode: 143 } } };
    assert.equal(getPhase(never, [proxy, done], true), 'Succeeded');
  });
});
