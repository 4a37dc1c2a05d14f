import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestApiServer } from '../../apiserver/test-api-server.js';

async function qosAfterStatusWithout(minor: string): Promise<unknown> {
  const server = await startTestApiServer({
    plainHttp: true,
    version: { major: '1', minor, gitVersion: `v1.${minor}.0` },
  });
  try {
    const pod = server.store.create(
      'pods',
      { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
      'default',
    );
    assert.equal((pod.status as { qosClass?: string }).qosClass, 'BestEffort');
    server.store.patch(
      'pods',
      'p',
      'default',
      'merge',
      { status: { phase: 'Failed', qosClass: null } },
      {
        subresource: 'status',
      },
    );
    return (server.store.get('pods', 'p', 'default').status as { qosClass?: string }).qosClass;
  } finally {
    await server.stop();
  }
}

test("a pods/status write that drops qosClass: v1.28's strategy lets it, v1.29 and later backfill it", async () => {
  assert.equal(await qosAfterStatusWithout('28'), undefined);
  assert.equal(await qosAfterStatusWithout('29'), 'BestEffort');
  assert.equal(await qosAfterStatusWithout('32'), 'BestEffort');
});
