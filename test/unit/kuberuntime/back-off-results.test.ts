import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BACK_OFF_EXPIRY_MARGIN_MS,
  backOffRequeueMs,
  hardFailures,
  leftRuntimeUnchanged,
} from '../../../src/kuberuntime/back-off-results.js';
import type { SyncResult } from '../../../src/kuberuntime/types.js';

const crashLoop = (target: string, retryAfterMs: number): SyncResult => ({
  action: 'StartContainer',
  target,
  reason: 'CrashLoopBackOff',
  retryAfterMs,
});

test('a sync that stopped only at back-offs is requeued when the earliest runs out, with the margin', () => {
  const results: SyncResult[] = [
    crashLoop('a', 40_000),
    { action: 'StartContainer', target: 'b', reason: 'ImagePullBackOff', retryAfterMs: 7_500 },
    { action: 'StartContainer', target: 'c' },
  ];
  assert.deepEqual(hardFailures(results), []);
  assert.equal(backOffRequeueMs(results), 7_500 + BACK_OFF_EXPIRY_MARGIN_MS);
});

test('other failures are hard, and a sync without back-offs has no back-off requeue', () => {
  const failed: SyncResult = { action: 'StartContainer', target: 'b', reason: 'ErrImagePull', message: 'x' };
  assert.deepEqual(hardFailures([crashLoop('a', 1_000), failed]), [failed]);
  assert.equal(backOffRequeueMs([failed, { action: 'StartContainer', target: 'c' }]), undefined);
  // A back-off that has just run out (or a clock that stepped) is never a negative delay.
  assert.equal(backOffRequeueMs([crashLoop('a', -5)]), BACK_OFF_EXPIRY_MARGIN_MS);
});

test('a sync left the runtime unchanged when nothing it started, stopped or created succeeded', () => {
  const config: SyncResult = { action: 'ConfigPodSandbox', target: 'sandbox-1' };
  assert.equal(leftRuntimeUnchanged([config, crashLoop('a', 10_000)]), true);
  assert.equal(leftRuntimeUnchanged([]), true);
  for (const action of ['StartContainer', 'KillContainer', 'CreatePodSandbox', 'KillPodSandbox'] as const)
    assert.equal(leftRuntimeUnchanged([crashLoop('a', 10_000), { action, target: 'b' }]), false, action);
});
