import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Container, Pod, RestartPolicy } from '../../../src/api/core-v1.js';
import type { PodSandboxStatus } from '../../../src/cri/types.js';
import {
  computePodActions,
  doBackOff,
  getStableKey,
  podSandboxChanged,
  type PodActions,
  type ProbeResults,
} from '../../../src/kuberuntime/compute-pod-actions.js';
import { hashContainer } from '../../../src/kuberuntime/container-hash.js';
import type {
  KubeContainerState,
  KubeContainerStatus,
  KubePodStatus,
} from '../../../src/kuberuntime/types.js';
import { Backoff } from '../../../src/lib/backoff.js';
import { FakeClock } from '../../../src/lib/clock.js';

function pod(
  containers: Container[],
  opts: { restartPolicy?: RestartPolicy; init?: Container[]; hostNetwork?: boolean } = {},
): Pod {
  return {
    metadata: { name: 'web', namespace: 'prod', uid: 'u-1' },
    spec: {
      containers,
      initContainers: opts.init,
      restartPolicy: opts.restartPolicy,
      hostNetwork: opts.hostNetwork,
    },
  };
}

const app: Container = { name: 'app', image: 'busybox:1' };
const side: Container = { name: 'side', image: 'busybox:1' };
const init1: Container = { name: 'init1', image: 'busybox:1' };
const init2: Container = { name: 'init2', image: 'busybox:1' };

function sandbox(
  id: string,
  state: PodSandboxStatus['state'] = 'SANDBOX_READY',
  attempt = 0,
  over: Partial<PodSandboxStatus> = {},
): PodSandboxStatus {
  return {
    id,
    metadata: { name: 'web', namespace: 'prod', uid: 'u-1', attempt },
    state,
    createdAt: 1,
    network: { ip: '10.0.0.2', additionalIps: [] },
    linux: { namespaces: { options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
    labels: {},
    annotations: {},
    runtimeHandler: '',
    ...over,
  };
}

let seq = 0;
function cs(
  c: Container,
  state: KubeContainerState,
  over: Partial<KubeContainerStatus> = {},
): KubeContainerStatus {
  seq++;
  const id = over.id ?? `c-${c.name}-${seq}`;
  return {
    containerID: `containerd://${id}`,
    id,
    name: c.name,
    state,
    createdAtMs: 1000 + seq,
    startedAtMs: 1000 + seq,
    finishedAtMs: state === 'exited' ? 2000 + seq : 0,
    exitCode: 0,
    image: c.image ?? '',
    imageRef: 'sha256:x',
    hash: hashContainer(c),
    restartCount: 0,
    reason: '',
    message: '',
    podSandboxId: 's1',
    ...over,
  };
}

function status(sandboxes: PodSandboxStatus[], containers: KubeContainerStatus[]): KubePodStatus {
  // Newest first, as getPodStatus returns them.
  const sorted = [...containers].sort((a, b) => b.createdAtMs - a.createdAtMs);
  return {
    uid: 'u-1',
    name: 'web',
    namespace: 'prod',
    ips: ['10.0.0.2'],
    sandboxStatuses: sandboxes,
    containerStatuses: sorted,
    timestampMs: 0,
  };
}

function summary(a: PodActions) {
  return {
    killPod: a.killPod,
    createSandbox: a.createSandbox,
    sandboxId: a.sandboxId,
    attempt: a.attempt,
    initStart: a.initContainersToStart,
    start: a.containersToStart,
    kill: [...a.containersToKill.values()].map((k) => `${k.name}: ${k.message}`),
  };
}

describe('computePodActions', () => {
  test('a new pod: create the sandbox and start every container', () => {
    assert.deepEqual(summary(computePodActions(pod([app, side]), status([], []))), {
      killPod: true,
      createSandbox: true,
      sandboxId: '',
      attempt: 0,
      initStart: [],
      start: [0, 1],
      kill: [],
    });
  });

  test('a running pod that matches its spec: nothing to do', () => {
    const s = status([sandbox('s1')], [cs(app, 'running'), cs(side, 'running')]);
    assert.deepEqual(summary(computePodActions(pod([app, side]), s)), {
      killPod: false,
      createSandbox: false,
      sandboxId: 's1',
      attempt: 0,
      initStart: [],
      start: [],
      kill: [],
    });
  });

  test('a changed spec hash restarts that container only, whatever the restart policy', () => {
    for (const restartPolicy of ['Always', 'OnFailure', 'Never'] as const) {
      const running = cs(app, 'running');
      const s = status([sandbox('s1')], [running, cs(side, 'running')]);
      const changed = { ...app, image: 'busybox:2' };
      const a = computePodActions(pod([changed, side], { restartPolicy }), s);
      assert.deepEqual(summary(a).start, [0], restartPolicy);
      assert.deepEqual(summary(a).kill, ['app: Container app definition changed, will be restarted']);
      assert.equal(a.containersToKill.get(running.id)?.reason, '');
      assert.equal(a.killPod, false);
    }
  });

  test('an exited container under each restart policy', () => {
    const cases: [RestartPolicy, number, number[], boolean][] = [
      ['Always', 0, [0], false],
      ['Always', 1, [0], false],
      ['OnFailure', 0, [], false],
      ['OnFailure', 2, [0], false],
      ['Never', 0, [], false],
      ['Never', 137, [], false],
    ];
    for (const [restartPolicy, exitCode, start, killPod] of cases) {
      const s = status([sandbox('s1')], [cs(app, 'exited', { exitCode }), cs(side, 'running')]);
      const a = computePodActions(pod([app, side], { restartPolicy }), s);
      assert.deepEqual(a.containersToStart, start, `${restartPolicy} exit ${exitCode}`);
      assert.equal(a.killPod, killPod);
      assert.equal(a.containersToKill.size, 0);
    }
  });

  test('all containers done and none to restart: kill the pod (stop its sandbox), create nothing', () => {
    const s = status([sandbox('s1')], [cs(app, 'exited', { exitCode: 0 })]);
    const a = computePodActions(pod([app], { restartPolicy: 'OnFailure' }), s);
    assert.equal(a.killPod, true);
    assert.equal(a.createSandbox, false);
    assert.deepEqual(a.containersToStart, []);
  });

  test('the newest attempt decides: an old failure does not restart a container whose newest attempt succeeded', () => {
    const s = status(
      [sandbox('s1')],
      [cs(app, 'exited', { exitCode: 1 }), cs(app, 'exited', { exitCode: 0 }), cs(side, 'running')],
    );
    assert.deepEqual(
      computePodActions(pod([app, side], { restartPolicy: 'OnFailure' }), s).containersToStart,
      [],
    );
  });

  test('a container in unknown state is killed before it is started again', () => {
    const unknown = cs(app, 'unknown');
    const s = status([sandbox('s1')], [unknown, cs(side, 'running')]);
    const a = computePodActions(pod([app, side]), s);
    assert.deepEqual(a.containersToStart, [0]);
    assert.equal(
      a.containersToKill.get(unknown.id)?.message,
      'Container is in "unknown" state, try killing it before restart',
    );
    assert.equal(a.containersToKill.get(unknown.id)?.reason, 'Unknown');
  });

  test('a created but never started container is started again', () => {
    const s = status([sandbox('s1')], [cs(app, 'created'), cs(side, 'running')]);
    assert.deepEqual(
      computePodActions(pod([app, side], { restartPolicy: 'Never' }), s).containersToStart,
      [0],
    );
  });

  test('liveness and startup probe failures kill, and restart unless the policy is Never', () => {
    const running = cs(app, 'running');
    const s = status([sandbox('s1')], [running, cs(side, 'running')]);
    const probes: ProbeResults = {
      liveness: (id) => (id === running.id ? 'Failure' : 'Success'),
      startup: () => undefined,
    };
    const a = computePodActions(pod([app, side]), s, probes);
    assert.deepEqual(summary(a).kill, ['app: Container app failed liveness probe, will be restarted']);
    assert.equal(a.containersToKill.get(running.id)?.reason, 'LivenessProbe');
    assert.deepEqual(a.containersToStart, [0]);
    const never = computePodActions(pod([app, side], { restartPolicy: 'Never' }), s, probes);
    assert.deepEqual(summary(never).kill, ['app: Container app failed liveness probe']);
    assert.deepEqual(never.containersToStart, []);
    const startup = computePodActions(pod([app, side]), s, {
      liveness: () => 'Success',
      startup: (id) => (id === running.id ? 'Failure' : undefined),
    });
    assert.equal(startup.containersToKill.get(running.id)?.reason, 'StartupProbe');
  });

  test('a pod marked for deletion restarts nothing', () => {
    const p = pod([app]);
    p.metadata.deletionTimestamp = '2024-01-01T00:00:00Z';
    const s = status([sandbox('s1')], [cs(app, 'exited', { exitCode: 1 })]);
    const a = computePodActions(p, s);
    assert.deepEqual(a.containersToStart, []);
    assert.equal(a.killPod, true);
  });
});

describe('sandbox changes', () => {
  test('not ready: kill and create with the next attempt, keeping the old ID for the kill', () => {
    const s = status(
      [sandbox('s2', 'SANDBOX_NOTREADY', 1), sandbox('s1', 'SANDBOX_NOTREADY', 0)],
      [cs(app, 'exited', { exitCode: 0 })],
    );
    const a = computePodActions(pod([app]), s);
    assert.deepEqual(summary(a), {
      killPod: true,
      createSandbox: true,
      sandboxId: 's2',
      attempt: 2,
      initStart: [],
      start: [0],
      kill: [],
    });
  });

  test('more than one ready sandbox is reconciled into a new one', () => {
    const s = status([sandbox('s2', 'SANDBOX_READY', 1), sandbox('s1', 'SANDBOX_READY', 0)], []);
    assert.deepEqual(podSandboxChanged(pod([app]), s), { changed: true, attempt: 2, sandboxId: 's2' });
  });

  test('network namespace mode changed, or no IP', () => {
    const s = status([sandbox('s1')], [cs(app, 'running')]);
    assert.deepEqual(podSandboxChanged(pod([app], { hostNetwork: true }), s), {
      changed: true,
      attempt: 1,
      sandboxId: '',
    });
    const noIp = status([sandbox('s1', 'SANDBOX_READY', 0, { network: { ip: '', additionalIps: [] } })], []);
    assert.deepEqual(podSandboxChanged(pod([app]), noIp), { changed: true, attempt: 1, sandboxId: 's1' });
    const hostNet = status(
      [
        sandbox('s1', 'SANDBOX_READY', 0, {
          network: { ip: '', additionalIps: [] },
          linux: { namespaces: { options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
        }),
      ],
      [],
    );
    assert.equal(podSandboxChanged(pod([app], { hostNetwork: true }), hostNet).changed, false);
  });

  test('a dead sandbox of a Never pod that already ran is not recreated', () => {
    const s = status([sandbox('s1', 'SANDBOX_NOTREADY', 0)], [cs(app, 'exited', { exitCode: 0 })]);
    const a = computePodActions(pod([app], { restartPolicy: 'Never' }), s);
    assert.equal(a.killPod, true);
    assert.equal(a.createSandbox, false);
  });

  test('OnFailure: a new sandbox starts only the containers that have not succeeded', () => {
    const s = status(
      [sandbox('s1', 'SANDBOX_NOTREADY', 0)],
      [cs(app, 'exited', { exitCode: 0 }), cs(side, 'exited', { exitCode: 1 })],
    );
    const a = computePodActions(pod([app, side], { restartPolicy: 'OnFailure' }), s);
    assert.equal(a.createSandbox, true);
    assert.deepEqual(a.containersToStart, [1]);
    const done = status([sandbox('s1', 'SANDBOX_NOTREADY', 0)], [cs(app, 'exited', { exitCode: 0 })]);
    assert.equal(computePodActions(pod([app], { restartPolicy: 'OnFailure' }), done).createSandbox, false);
  });
});

describe('init containers', () => {
  const p = (restartPolicy?: RestartPolicy) => pod([app], { init: [init1, init2], restartPolicy });

  test('a new pod starts the first init container only', () => {
    const a = computePodActions(p(), status([], []));
    assert.equal(a.createSandbox, true);
    assert.deepEqual(a.initContainersToStart, [0]);
    assert.deepEqual(a.containersToStart, []);
  });

  test('one at a time, in order; app containers after the last one succeeded', () => {
    const running = status([sandbox('s1')], [cs(init1, 'running')]);
    assert.deepEqual(computePodActions(p(), running).initContainersToStart, []);
    assert.deepEqual(computePodActions(p(), running).containersToStart, []);
    const firstDone = status([sandbox('s1')], [cs(init1, 'exited')]);
    assert.deepEqual(computePodActions(p(), firstDone).initContainersToStart, [1]);
    const allDone = status([sandbox('s1')], [cs(init1, 'exited'), cs(init2, 'exited')]);
    const a = computePodActions(p(), allDone);
    assert.deepEqual(a.initContainersToStart, []);
    assert.deepEqual(a.containersToStart, [0]);
    // The first one's record may be gone: the last one with a record counts.
    assert.deepEqual(
      computePodActions(p(), status([sandbox('s1')], [cs(init2, 'exited')])).containersToStart,
      [0],
    );
  });

  test('a failed init container runs again, or kills the pod under Never', () => {
    const failed = status([sandbox('s1')], [cs(init1, 'exited', { exitCode: 1 })]);
    assert.deepEqual(computePodActions(p(), failed).initContainersToStart, [0]);
    const never = computePodActions(p('Never'), failed);
    assert.equal(never.killPod, true);
    assert.deepEqual(never.initContainersToStart, []);
    const oom = status([sandbox('s1')], [cs(init1, 'exited', { exitCode: 0, reason: 'OOMKilled' })]);
    assert.deepEqual(computePodActions(p(), oom).initContainersToStart, [0]);
    const unknown = cs(init1, 'unknown');
    const u = computePodActions(p(), status([sandbox('s1')], [unknown]));
    assert.deepEqual(u.initContainersToStart, [0]);
    assert.equal(
      u.containersToKill.get(unknown.id)?.message,
      'Init container is in "unknown" state, try killing it before restart',
    );
    const created = computePodActions(
      p(),
      status([sandbox('s1')], [cs(init1, 'exited'), cs(init2, 'created')]),
    );
    assert.deepEqual(created.initContainersToStart, [1], 'a container stuck in created is started again');
  });

  test('a running app container means initialization is done, even with the init records gone', () => {
    const a = computePodActions(p(), status([sandbox('s1')], [cs(app, 'running')]));
    assert.deepEqual(a.initContainersToStart, []);
    assert.equal(a.killPod, false);
  });
});

describe('sidecars (restartable init containers)', () => {
  const sidecar: Container = { name: 'proxy', image: 'busybox:1', restartPolicy: 'Always' };
  const p = (restartPolicy?: RestartPolicy, probe = false) =>
    pod([app], {
      init: [probe ? { ...sidecar, startupProbe: { exec: { command: ['true'] } } } : sidecar, init1],
      restartPolicy,
    });

  test('a running sidecar lets the next init container start, and the app after it', () => {
    const s1 = status([sandbox('s1')], [cs(sidecar, 'running')]);
    assert.deepEqual(computePodActions(p(), s1).initContainersToStart, [1]);
    const s2 = status([sandbox('s1')], [cs(sidecar, 'running'), cs(init1, 'exited')]);
    const a = computePodActions(p(), s2);
    assert.deepEqual(a.initContainersToStart, []);
    assert.deepEqual(a.containersToStart, [0]);
  });

  test('with a startup probe, the next one waits for its success; a failure restarts the sidecar', () => {
    const running = cs(sidecar, 'running', {
      hash: hashContainer({ ...sidecar, startupProbe: { exec: { command: ['true'] } } }),
    });
    const s = status([sandbox('s1')], [running]);
    assert.deepEqual(computePodActions(p('Always', true), s).initContainersToStart, []);
    const ok: ProbeResults = { liveness: () => undefined, startup: () => 'Success' };
    assert.deepEqual(computePodActions(p('Always', true), s, ok).initContainersToStart, [1]);
    const bad: ProbeResults = { liveness: () => undefined, startup: () => 'Failure' };
    const a = computePodActions(p('Always', true), s, bad);
    assert.deepEqual(a.initContainersToStart, [0]);
    assert.equal(a.containersToKill.get(running.id)?.reason, 'StartupProbe');
  });

  test('an exited sidecar is restarted after initialization, beside the running app; even under Never', () => {
    const s = status(
      [sandbox('s1')],
      [cs(sidecar, 'exited', { exitCode: 1 }), cs(init1, 'exited'), cs(app, 'running')],
    );
    for (const policy of ['Always', 'Never'] as const) {
      const a = computePodActions(p(policy), s);
      assert.deepEqual(a.initContainersToStart, [0], policy);
      assert.equal(a.killPod, false);
      assert.deepEqual(a.containersToStart, []);
    }
  });

  test('a sidecar does not keep a pod alive whose app containers are done', () => {
    const s = status(
      [sandbox('s1')],
      [cs(sidecar, 'exited', { exitCode: 1 }), cs(init1, 'exited'), cs(app, 'exited', { exitCode: 0 })],
    );
    const a = computePodActions(p('OnFailure'), s);
    assert.equal(a.killPod, true);
    assert.deepEqual(a.initContainersToStart, []);
  });
});

describe('crash-loop back-off', () => {
  test('10 s doubling to 300 s from the newest exit, with upstream message; a new spec starts afresh', () => {
    const clock = new FakeClock(1_000_000);
    const backoff = new Backoff(clock, 10_000, 300_000);
    const p = pod([app]);
    const exitedAt = (ms: number) =>
      status([sandbox('s1')], [cs(app, 'exited', { exitCode: 1, finishedAtMs: ms, createdAtMs: ms - 1 })]);

    // First failure: no wait; the attempt is counted.
    assert.deepEqual(doBackOff(p, app, exitedAt(clock.now()), backoff), { inBackOff: false });
    // It fails again at once: 10 s.
    clock.advance(1000);
    let s = exitedAt(clock.now());
    assert.deepEqual(doBackOff(p, app, s, backoff), {
      inBackOff: true,
      reason: 'CrashLoopBackOff',
      message: 'back-off 10s restarting failed container=app pod=web_prod(u-1)',
      retryAfterMs: 10_000,
    });
    // What is left of it, for the pod's next sync.
    clock.advance(4_000);
    const later = doBackOff(p, app, s, backoff);
    assert.equal(later.inBackOff && later.retryAfterMs, 6_000);
    clock.advance(6_000);
    assert.deepEqual(doBackOff(p, app, s, backoff), { inBackOff: false });
    const delays: string[] = [];
    for (let i = 0; i < 6; i++) {
      clock.advance(500);
      s = exitedAt(clock.now());
      const d = doBackOff(p, app, s, backoff);
      assert.equal(d.inBackOff, true);
      delays.push(d.inBackOff ? d.message.split(' ')[1]! : '');
      clock.advance(backoff.get(getStableKey(p, app)));
      assert.equal(doBackOff(p, app, s, backoff).inBackOff, false);
    }
    assert.deepEqual(delays, ['20s', '40s', '1m20s', '2m40s', '5m0s', '5m0s']);

    // A changed image is a new key: no back-off.
    const changed = { ...app, image: 'busybox:2' };
    assert.notEqual(getStableKey(p, changed), getStableKey(p, app));
    clock.advance(100);
    assert.deepEqual(doBackOff(pod([changed]), changed, exitedAt(clock.now()), backoff), {
      inBackOff: false,
    });
  });

  test('a container that never exited is not in back-off', () => {
    const backoff = new Backoff(new FakeClock(), 10_000, 300_000);
    assert.deepEqual(doBackOff(pod([app]), app, status([sandbox('s1')], [cs(app, 'running')]), backoff), {
      inBackOff: false,
    });
    assert.deepEqual(doBackOff(pod([app]), app, status([], []), backoff), { inBackOff: false });
  });
});

describe('computePodActions: ephemeral containers', () => {
  const debug = { name: 'debug', image: 'busybox:1', targetContainerName: 'app' };
  const withDebug = (): Pod => {
    const p = pod([app]);
    p.spec.ephemeralContainers = [debug];
    return p;
  };

  test('one not yet started is started beside a running pod, which is left alone', () => {
    const a = computePodActions(withDebug(), status([sandbox('s1')], [cs(app, 'running')]));
    assert.deepEqual(a.ephemeralContainersToStart, [0]);
    assert.equal(a.killPod, false);
    assert.deepEqual(a.containersToStart, []);
  });

  test('one that ran is never started again, whatever its exit code and the restart policy', () => {
    for (const exitCode of [0, 1]) {
      const s = status([sandbox('s1')], [cs(app, 'running'), cs(debug, 'exited', { exitCode })]);
      const a = computePodActions(withDebug(), s);
      assert.deepEqual(a.ephemeralContainersToStart, []);
      assert.equal(a.killPod, false);
    }
  });

  test('it may start while an init container still runs', () => {
    const p = pod([app], { init: [init1] });
    p.spec.ephemeralContainers = [debug];
    const a = computePodActions(p, status([sandbox('s1')], [cs(init1, 'running')]));
    assert.deepEqual(a.ephemeralContainersToStart, [0]);
  });

  test('a new sandbox starts none: they belonged to the old one', () => {
    const a = computePodActions(withDebug(), status([], []));
    assert.equal(a.createSandbox, true);
    assert.deepEqual(a.ephemeralContainersToStart, []);
  });
});
