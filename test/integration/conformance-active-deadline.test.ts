/**
 * With the sync loop's active deadline handler: spec.activeDeadlineSeconds fails
 * the pod with reason DeadlineExceeded once it has been active that long, counted from its
 * startTime (upstream: pkg/kubelet/active_deadline.go; e2e "Pods should allow activeDeadlineSeconds
 * to be updated", test/e2e/common/node/pods.go). Its containers are stopped; the pod stays Failed.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import {
  busybox,
  ClusterNode,
  condition,
  containerStatus,
  makePod,
  StandaloneNode,
  type TestNode,
} from '../helpers/conformance.js';

const ns = `it-conf-deadline-${process.pid}`;
const MESSAGE = 'Pod was active on the node longer than the specified deadline';

describe('conformance: activeDeadlineSeconds', () => {
  let node: TestNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  test('a pod past its deadline fails with DeadlineExceeded; its containers are stopped', async () => {
    const n = (node = await StandaloneNode.start(ns));
    await n.createPod(
      makePod(ns, 'deadline', { activeDeadlineSeconds: 5, containers: [busybox('c', 'exec sleep 3600')] }),
    );
    // A crash-looping pod under OnFailure meets its deadline too.
    await n.createPod(
      makePod(ns, 'deadline-crashing', {
        activeDeadlineSeconds: 5,
        restartPolicy: 'OnFailure',
        containers: [busybox('c', 'sleep 1; exit 1')],
      }),
    );
    const running = await n.waitPod('deadline', 'Running', (p) => p.status?.phase === 'Running');
    const failed = await n.waitPod('deadline', 'Failed', (p) => p.status?.phase === 'Failed', 30_000);
    assert.equal(failed.status?.reason, 'DeadlineExceeded');
    assert.equal(failed.status?.message, MESSAGE);
    const activeMs = Date.now() - Date.parse(running.status?.startTime ?? '');
    assert.ok(activeMs >= 5_000, `failed only after its 5 s (${activeMs} ms)`);
    const stopped = await n.waitPod(
      'deadline',
      'its container stopped',
      (p) => !!containerStatus(p, 'c')?.state?.terminated,
      30_000,
    );
    assert.equal(stopped.status?.phase, 'Failed');
    assert.equal(stopped.status?.reason, 'DeadlineExceeded');
    assert.equal(containerStatus(stopped, 'c')?.state?.terminated?.exitCode, 137);
    assert.equal(condition(stopped, 'Ready')?.status, 'False');

    const crashing = await n.waitPod(
      'deadline-crashing',
      'Failed',
      (p) => p.status?.phase === 'Failed',
      30_000,
    );
    assert.equal(crashing.status?.reason, 'DeadlineExceeded');
  });

  test('a deadline set on a running pod applies: DeadlineExceeded, with its event', async () => {
    const n = (node = await ClusterNode.start(ns));
    await n.createPod(makePod(ns, 'updated', { containers: [busybox('c', 'exec sleep 3600')] }));
    await n.waitPod('updated', 'Running', (p) => p.status?.phase === 'Running');
    n.server.store.patch('pods', 'updated', ns, 'strategic', { spec: { activeDeadlineSeconds: 5 } });
    const failed = await n.waitPod('updated', 'Failed', (p) => p.status?.phase === 'Failed', 30_000);
    assert.equal(failed.status?.reason, 'DeadlineExceeded');
    assert.equal(failed.status?.message, MESSAGE);
    const event = await n.waitEvent('updated', 'DeadlineExceeded');
    assert.equal(event.type, 'Normal');
    assert.equal(event.message, MESSAGE);
    await n.waitPod(
      'updated',
      'its container stopped',
      (p) => !!containerStatus(p, 'c')?.state?.terminated,
      30_000,
    );
  });
});
