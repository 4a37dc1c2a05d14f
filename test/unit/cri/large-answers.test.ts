/**
 * Runtime answers that grow with what pods carry: a ListPodSandbox answer well over upstream's 16 MiB
 * (sandboxes with big annotations) is still taken in, so one pod cannot blind the node.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DEFAULT_MAX_RECEIVE_MESSAGE_BYTES } from '../../../src/cri/grpc-connection.js';
import { RemoteRuntimeService } from '../../../src/cri/remote-runtime.js';
import { FakeCriServer } from '../../../src/cri/testing/fake-cri-server.js';
import { fullSandboxConfig } from './cri-fixtures.js';

const MiB = 1024 * 1024;
let server: FakeCriServer;
let runtime: RemoteRuntimeService;

before(async () => {
  server = await FakeCriServer.start();
  runtime = new RemoteRuntimeService(server.endpoint, { runtimeRequestTimeoutMs: 20_000 });
});

after(async () => {
  runtime.close();
  await server.close();
});

test('the receive limit has a margin over upstream 16 MiB', () => {
  assert.ok(DEFAULT_MAX_RECEIVE_MESSAGE_BYTES >= 4 * 16 * MiB);
});

test('a ListPodSandbox answer of about 21 MiB is received', async () => {
  // Each request stays under the fake server's own 4 MiB receive limit; the listing holds them all.
  const count = 7;
  for (let i = 0; i < count; i++) {
    const config = fullSandboxConfig(`big-${i}`);
    config.annotations = { ...config.annotations, 'example.com/blob': 'x'.repeat(3 * MiB) };
    await runtime.runPodSandbox(config, 'runc');
  }
  const sandboxes = await runtime.listPodSandbox();
  assert.equal(sandboxes.filter((s) => s.metadata.name.startsWith('big-')).length, count);
  const bytes = sandboxes.reduce((n, s) => n + (s.annotations['example.com/blob']?.length ?? 0), 0);
  assert.ok(bytes > 16 * MiB, `${bytes} bytes of annotations listed`);
});
