import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod, PodCondition } from '../../../src/api/core-v1.js';
import { needToReconcilePodReadiness } from '../../../src/status/pod-conditions.js';

const GATE = 'example.com/gate';

function pod(conditions: PodCondition[], gates = [GATE]): Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid: 'u' },
    spec: {
      containers: [{ name: 'c' }],
      readinessGates: gates.map((conditionType) => ({ conditionType })),
    },
    status: {
      phase: 'Running',
      conditions,
      containerStatuses: [
        { name: 'c', ready: true, restartCount: 0, image: 'i', imageID: '', state: { running: {} } },
      ],
    },
  } as Pod;
}

const notReadyNoGate: PodCondition = {
  type: 'Ready',
  status: 'False',
  reason: 'ReadinessGatesNotReady',
  message: `corresponding condition of pod readiness gate "${GATE}" does not exist.`,
};

test('upstream NeedToReconcilePodReadiness: a gate condition that changes what Ready should say calls for a sync', () => {
  // Ready agrees with the gates: nothing to do.
  assert.equal(needToReconcilePodReadiness(pod([notReadyNoGate])), false);
  // A controller set the gate True: Ready should turn True.
  assert.equal(needToReconcilePodReadiness(pod([notReadyNoGate, { type: GATE, status: 'True' }])), true);
  // The gate is there but False: the status agrees, the message does not.
  assert.equal(needToReconcilePodReadiness(pod([notReadyNoGate, { type: GATE, status: 'False' }])), true);
  // Ready True, and the gate went False: back to not ready.
  assert.equal(
    needToReconcilePodReadiness(
      pod([
        { type: 'Ready', status: 'True' },
        { type: GATE, status: 'False' },
      ]),
    ),
    true,
  );
  assert.equal(
    needToReconcilePodReadiness(
      pod([
        { type: 'Ready', status: 'True' },
        { type: GATE, status: 'True' },
      ]),
    ),
    false,
  );
  // No gates, or no Ready yet (the first sync makes it): never.
  assert.equal(needToReconcilePodReadiness(pod([{ type: 'Ready', status: 'False' }], [])), false);
  assert.equal(needToReconcilePodReadiness(pod([{ type: GATE, status: 'True' }])), false);
});
