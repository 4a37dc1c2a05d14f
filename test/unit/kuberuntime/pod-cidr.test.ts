import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { RemoteRuntimeService } from '../../../src/cri/remote-runtime.js';
import { FakeCriServer } from '../../../src/cri/testing/fake-cri-server.js';
import { PodCIDRUpdater } from '../../../src/kuberuntime/pod-cidr.js';

describe('PodCIDRUpdater hands the pod CIDR to the runtime through CRI UpdateRuntimeConfig', () => {
  let server: FakeCriServer;
  let runtime: RemoteRuntimeService;

  before(async () => {
    server = await FakeCriServer.start();
    runtime = new RemoteRuntimeService(server.endpoint, { runtimeRequestTimeoutMs: 5000 });
  });

  after(async () => {
    runtime.close();
    await server.close();
  });

  const calls = () => server.callCounts.get('UpdateRuntimeConfig') ?? 0;

  test('the configured CIDR goes over the wire once; the same CIDR again makes no call', async () => {
    const updater = new PodCIDRUpdater(runtime);
    await updater.updateFromConfig('10.244.86.0/24');
    assert.equal(calls(), 1);
    assert.deepEqual(server.lastRequests.get('UpdateRuntimeConfig'), {
      runtimeConfig: { networkConfig: { podCidr: '10.244.86.0/24' } },
    });
    assert.equal(updater.podCIDR, '10.244.86.0/24');
    assert.equal(await updater.update('10.244.86.0/24'), false);
    assert.equal(calls(), 1);
    assert.equal(await updater.update('10.244.87.0/24,fd00:10::/64'), true);
    assert.equal(calls(), 2);
  });

  test('an empty podCIDR (upstream default) makes no call', async () => {
    const before = calls();
    await new PodCIDRUpdater(runtime).updateFromConfig('');
    assert.equal(calls(), before);
  });

  test("a runtime error is upstream's 'failed to update pod CIDR' and keeps the old CIDR", async () => {
    const updater = new PodCIDRUpdater(runtime);
    server.failNext('UpdateRuntimeConfig', GrpcStatus.UNAVAILABLE, 'network plugin down');
    await assert.rejects(updater.update('10.0.0.0/24'), /failed to update pod CIDR: .*network plugin down/);
    assert.equal(updater.podCIDR, '');
    // updateFromConfig logs the same failure instead of failing the start.
    server.failNext('UpdateRuntimeConfig', GrpcStatus.UNAVAILABLE, 'network plugin down');
    await updater.updateFromConfig('10.0.0.0/24');
    assert.equal(updater.podCIDR, '');
  });
});
