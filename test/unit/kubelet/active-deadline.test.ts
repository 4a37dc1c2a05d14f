import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod, PodStatus } from '../../../src/api/core-v1.js';
import { ActiveDeadlineHandler } from '../../../src/kubelet/active-deadline.js';
import { FakeClock } from '../../../src/lib/clock.js';

test('a pod is past its deadline once activeDeadlineSeconds have passed since its startTime', () => {
  const clock = new FakeClock();
  const statuses = new Map<string, PodStatus>();
  const events: string[] = [];
  const handler = new ActiveDeadlineHandler(
    clock,
    (uid) => statuses.get(uid),
    (pod, reason, message) => events.push(`${pod.metadata.name} ${reason}: ${message}`),
  );
  const pod: Pod = { metadata: { name: 'p', uid: 'u' }, spec: { containers: [], activeDeadlineSeconds: 5 } };

  // Not started: no deadline runs.
  assert.equal(handler.shouldSync(pod), false);
  statuses.set('u', { startTime: new Date(clock.now()).toISOString() });
  clock.advance(4_999);
  assert.equal(handler.shouldSync(pod), false);
  assert.deepEqual(handler.shouldEvict(pod), { evict: false });
  clock.advance(1);
  assert.equal(handler.shouldSync(pod), true);
  assert.deepEqual(handler.shouldEvict(pod), {
    evict: true,
    reason: 'DeadlineExceeded',
    message: 'Pod was active on the node longer than the specified deadline',
  });
  assert.deepEqual(events, [
    'p DeadlineExceeded: Pod was active on the node longer than the specified deadline',
  ]);

  // Without a deadline, never; without the kubelet's status, the pod's own startTime counts.
  assert.equal(handler.shouldSync({ ...pod, spec: { containers: [] } }), false);
  const fromApi: Pod = {
    metadata: { name: 'q', uid: 'v' },
    spec: { containers: [], activeDeadlineSeconds: 1 },
    status: { startTime: new Date(clock.now() - 2_000).toISOString() },
  };
  assert.equal(handler.shouldSync(fromApi), true);
});
