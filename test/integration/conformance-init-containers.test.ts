/**
 * Init containers run one at a time, in order, before the app containers; a
 * failure is retried per the restart policy, and under Never fails the pod (upstream's node
 * conformance "InitContainer" cases, test/e2e/common/node/init_container.go). Restartable init
 * containers (sidecars) start in order, keep running beside the app containers, and stop after
 * them (test/e2e_node/container_lifecycle_test.go).
 *
 * The order is read from the runtime's own timestamps (nanoseconds), not from pod status (seconds).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { ContainerStatus as CriContainerStatus } from '../../src/cri/types.js';
import type { Pod } from '../../src/api/core-v1.js';
import {
  busybox,
  condition,
  containerStatus,
  initContainerStatus,
  makePod,
  StandaloneNode,
} from '../helpers/conformance.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-conf-init-${process.pid}`;
const RUN_FOREVER = 'trap "exit 0" TERM; while true; do sleep 0.2; done';

describe('conformance: init containers and sidecars', () => {
  let node: StandaloneNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  /** Every attempt of every container of the pod, as the runtime has them, by container name (oldest first). */
  async function runtimeStatuses(
    n: StandaloneNode,
    name: string,
  ): Promise<Map<string, CriContainerStatus[]>> {
    const out = new Map<string, CriContainerStatus[]>();
    const list = await n.cri.podContainers(ns, `${name}-${n.kubelet.nodeName}`);
    for (const c of list.reverse()) {
      const { status } = await n.cri.conn.runtime.containerStatus(c.id, false);
      const all = out.get(c.metadata.name) ?? [];
      all.push(status);
      out.set(c.metadata.name, all);
    }
    return out;
  }

  function first(statuses: Map<string, CriContainerStatus[]>, name: string): CriContainerStatus {
    const s = statuses.get(name)?.[0];
    assert.ok(s, `${name} ran`);
    return s;
  }

  test('init containers run one at a time, in order, before the app containers (Never and Always)', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const initThenApp = (name: string, restartPolicy: Pod['spec']['restartPolicy'], app: string): Pod =>
      makePod(ns, name, {
        restartPolicy,
        initContainers: [busybox('init1', 'sleep 1; echo init1'), busybox('init2', 'sleep 1; echo init2')],
        containers: [busybox('run1', app)],
      });
    await n.createPod(initThenApp('init-never', 'Never', 'echo run1'));
    await n.createPod(initThenApp('init-always', 'Always', RUN_FOREVER));

    const done = await n.waitPod('init-never', 'Succeeded', (p) => p.status?.phase === 'Succeeded');
    const running = await n.waitPod('init-always', 'Running', (p) => p.status?.phase === 'Running');
    for (const [name, p] of [
      ['init-never', done],
      ['init-always', running],
    ] as const) {
      assert.equal(condition(p, 'Initialized')?.status, 'True', name);
      for (const init of ['init1', 'init2']) {
        const s = initContainerStatus(p, init);
        assert.equal(s?.state?.terminated?.exitCode, 0, `${name} ${init}`);
        assert.equal(s?.state?.terminated?.reason, 'Completed', `${name} ${init}`);
        assert.equal(s?.ready, true, `${name} ${init}`);
        assert.equal(s?.restartCount, 0, `${name} ${init}`);
      }
      // One at a time, in order: each starts only after the one before it has finished.
      const rt = await runtimeStatuses(n, name);
      const init1 = first(rt, 'init1');
      const init2 = first(rt, 'init2');
      const run1 = first(rt, 'run1');
      assert.ok(init2.startedAt >= init1.finishedAt, `${name}: init2 started after init1 finished`);
      assert.ok(run1.startedAt >= init2.finishedAt, `${name}: run1 started after init2 finished`);
    }
    assert.equal(containerStatus(done, 'run1')?.state?.terminated?.reason, 'Completed');
    assert.equal(await n.logs(done, 'init1'), 'init1\n');
    assert.equal(condition(running, 'Ready')?.status, 'True');
  });

  test('a failing init container is retried under Always and the app waits; under Never the pod fails', async () => {
    const n = (node = await StandaloneNode.start(ns));
    await n.createPod(
      makePod(ns, 'fail-always', {
        restartPolicy: 'Always',
        initContainers: [busybox('init1', 'exit 1'), busybox('init2', 'exit 0')],
        containers: [busybox('run1', RUN_FOREVER)],
      }),
    );
    await n.createPod(
      makePod(ns, 'fail-never', {
        restartPolicy: 'Never',
        initContainers: [busybox('init1', 'exit 0'), busybox('init2', 'exit 1')],
        containers: [busybox('run1', RUN_FOREVER)],
      }),
    );

    const failed = await n.waitPod('fail-never', 'Failed', (p) => p.status?.phase === 'Failed');
    const init2 = initContainerStatus(failed, 'init2');
    assert.equal(init2?.state?.terminated?.exitCode, 1);
    assert.equal(init2?.state?.terminated?.reason, 'Error');
    assert.equal(init2?.restartCount, 0);
    assert.equal(initContainerStatus(failed, 'init1')?.state?.terminated?.reason, 'Completed');
    assert.equal(containerStatus(failed, 'run1')?.state?.waiting?.reason, 'PodInitializing');
    const initialized = condition(failed, 'Initialized');
    assert.equal(initialized?.status, 'False');
    assert.equal(initialized?.reason, 'ContainersNotInitialized');
    assert.equal(initialized?.message, 'containers with incomplete status: [init2]');
    assert.equal(
      (await n.cri.podContainers(ns, `fail-never-${n.kubelet.nodeName}`)).length,
      2,
      'run1 never ran',
    );

    // Restarted with back-off: 10 s after the first failure, then 20 s.
    const retried = await n.waitPod(
      'fail-always',
      'init1 retried twice',
      // Seen between its runs: with containerd's events the kubelet also sees the instant it runs.
      (p) =>
        (initContainerStatus(p, 'init1')?.restartCount ?? 0) >= 2 &&
        !initContainerStatus(p, 'init1')?.state?.running,
      60_000,
    );
    assert.equal(retried.status?.phase, 'Pending');
    const init1 = initContainerStatus(retried, 'init1');
    assert.ok(
      init1?.state?.waiting?.reason === 'CrashLoopBackOff' || init1?.state?.terminated?.exitCode === 1,
    );
    assert.equal(init1?.lastState?.terminated?.exitCode, 1);
    assert.equal(initContainerStatus(retried, 'init2')?.state?.waiting?.reason, 'PodInitializing');
    assert.equal(containerStatus(retried, 'run1')?.state?.waiting?.reason, 'PodInitializing');
    const cond = condition(retried, 'Initialized');
    assert.equal(cond?.status, 'False');
    assert.equal(cond?.message, 'containers with incomplete status: [init1 init2]');
    const rt = await runtimeStatuses(n, 'fail-always');
    assert.deepEqual([...rt.keys()], ['init1'], 'only init1 ever ran');
  });

  test('sidecars start in order, run beside the app containers, and stop after them', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const sidecar = (name: string) =>
      busybox(name, `echo ${name} up; ${RUN_FOREVER}`, { restartPolicy: 'Always' });
    await n.createPod(
      makePod(ns, 'sidecars', {
        restartPolicy: 'Never',
        initContainers: [sidecar('sidecar1'), busybox('init', 'echo init'), sidecar('sidecar2')],
        containers: [busybox('app', 'sleep 3; echo app done')],
      }),
    );
    const running = await n.waitPod(
      'sidecars',
      'app running',
      (p) => !!containerStatus(p, 'app')?.state?.running,
    );
    for (const s of ['sidecar1', 'sidecar2']) {
      const st = initContainerStatus(running, s);
      assert.ok(st?.state?.running, `${s} runs beside the app`);
      assert.equal(st?.started, true, s);
    }
    assert.equal(running.status?.phase, 'Running');
    assert.equal(condition(running, 'Initialized')?.status, 'True');

    // The app's end ends the pod: the sidecars are stopped, and do not count against success.
    const done = await n.waitPod('sidecars', 'Succeeded', (p) => p.status?.phase === 'Succeeded', 60_000);
    assert.equal(containerStatus(done, 'app')?.state?.terminated?.exitCode, 0);
    const rt = await runtimeStatuses(n, 'sidecars');
    const [s1, init, s2, app] = ['sidecar1', 'init', 'sidecar2', 'app'].map((c) => first(rt, c));
    assert.ok(init!.startedAt >= s1!.startedAt, 'init after sidecar1');
    assert.ok(s2!.startedAt >= init!.finishedAt, 'sidecar2 after init finished');
    assert.ok(app!.startedAt >= s2!.startedAt, 'the app after sidecar2');
    for (const s of [s1!, s2!]) {
      assert.equal(s.state, 'CONTAINER_EXITED');
      assert.ok(s.finishedAt >= app!.finishedAt, `${s.metadata.name} stopped after the app`);
    }
    assert.ok(s1!.finishedAt >= s2!.finishedAt, 'sidecar1 (declared first) stopped last');
  });

  test('on deletion the app containers stop first, then the sidecars in reverse order; a sidecar that exits is restarted', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const slowStop = (msg: string) =>
      `trap "sleep 1; echo ${msg}; exit 0" TERM; while true; do sleep 0.2; done`;
    await n.createPod(
      makePod(ns, 'ordered', {
        terminationGracePeriodSeconds: 30,
        initContainers: [
          busybox('sidecar1', slowStop('sidecar1 stopping'), { restartPolicy: 'Always' }),
          busybox('sidecar2', slowStop('sidecar2 stopping'), { restartPolicy: 'Always' }),
          // Exits after a moment: a sidecar is restarted whatever the pod's restart policy.
          busybox('flaky', 'sleep 1; exit 2', { restartPolicy: 'Always' }),
        ],
        containers: [busybox('app', slowStop('app stopping'))],
      }),
    );
    await n.waitPod(
      'ordered',
      'the flaky sidecar restarted while the app runs',
      (p) =>
        !!containerStatus(p, 'app')?.state?.running &&
        (initContainerStatus(p, 'flaky')?.restartCount ?? 0) >= 1,
      60_000,
    );
    await n.deletePod('ordered');
    const finished = await waitFor(
      'every container to stop',
      async () => {
        const rt = await runtimeStatuses(n, 'ordered');
        const newest = ['sidecar1', 'sidecar2', 'app'].map((c) => rt.get(c)?.at(-1));
        return newest.every((s) => s?.state === 'CONTAINER_EXITED') ? newest : undefined;
      },
      60_000,
      200,
    );
    const [s1, s2, app] = finished as CriContainerStatus[];
    assert.ok(s2!.finishedAt >= app!.finishedAt, 'sidecar2 stopped after the app');
    assert.ok(s1!.finishedAt >= s2!.finishedAt, 'sidecar1 stopped after sidecar2');
    // Each took its 1 s to stop, so the stops did not overlap.
    assert.ok(
      s1!.finishedAt - app!.finishedAt >= 1.5e9,
      'the sidecars waited for the app to finish stopping',
    );
  });
});
