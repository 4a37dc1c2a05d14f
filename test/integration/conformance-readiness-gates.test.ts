/**
 * `[sig-node] Pods should support pod readiness gates` (test/e2e/common/node/pods.go).
 * A controller sets the gates' conditions with a pods/status patch; the kubelet, which owns Ready,
 * must count them as soon as the API tells it (upstream HandlePodReconcile syncs the pod when
 * NeedToReconcilePodReadiness), not at its next periodic sync a minute later.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { busybox, ClusterNode, condition, containerStatus, makePod } from '../helpers/conformance.js';

const ns = `it-conf-gates-${process.pid}`;
const GATE_1 = 'k8s.io/test-condition1';
const GATE_2 = 'k8s.io/test-condition2';
// Well under the periodic resync (60 s), which alone would also get there in the end.
const REACT_MS = 15_000;

describe('conformance: pod readiness gates', () => {
  let node: ClusterNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  test('Ready follows the gates a pods/status patch sets, within seconds', async () => {
    const n = (node = await ClusterNode.start(ns));
    const pod: Pod = makePod(ns, 'pod-ready', {
      containers: [busybox('pod-readiness-gate', 'echo container is alive; sleep 10000')],
      readinessGates: [{ conditionType: GATE_1 }, { conditionType: GATE_2 }],
    });
    await n.createPod(pod);
    const running = await n.waitPod(
      'pod-ready',
      'Running with its container ready',
      (p) => p.status?.phase === 'Running' && containerStatus(p, 'pod-readiness-gate')?.ready === true,
    );
    assert.equal(condition(running, 'Ready')?.status, 'False');
    assert.equal(condition(running, 'Ready')?.reason, 'ReadinessGatesNotReady');

    const patchGate = (type: string, status: string) =>
      n.server.store.patch(
        'pods',
        'pod-ready',
        ns,
        'strategic',
        { status: { conditions: [{ type, status }] } },
        { subresource: 'status' },
      );

    patchGate(GATE_1, 'True');
    const oneGate = await n.waitPod(
      'pod-ready',
      'Ready to name only the second gate',
      (p) => !(condition(p, 'Ready')?.message ?? GATE_1).includes(GATE_1),
      REACT_MS,
    );
    assert.equal(condition(oneGate, 'Ready')?.status, 'False');
    assert.equal(
      condition(oneGate, 'Ready')?.message,
      `corresponding condition of pod readiness gate "${GATE_2}" does not exist.`,
    );

    patchGate(GATE_2, 'True');
    const ready = await n.waitPod(
      'pod-ready',
      'Ready',
      (p) => condition(p, 'Ready')?.status === 'True',
      REACT_MS,
    );
    // The gates' conditions are the API's, kept beside the kubelet's own.
    assert.equal(condition(ready, GATE_1)?.status, 'True');
    assert.equal(condition(ready, GATE_2)?.status, 'True');

    patchGate(GATE_1, 'False');
    const notReady = await n.waitPod(
      'pod-ready',
      'not Ready again',
      (p) => condition(p, 'Ready')?.status === 'False',
      REACT_MS,
    );
    assert.equal(
      condition(notReady, 'Ready')?.message,
      `the status of pod readiness gate "${GATE_1}" is not "True", but False`,
    );
  });
});
