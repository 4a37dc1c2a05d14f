import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { RemoteImageService } from '../../../src/cri/remote-image.js';
import { FakeCriServer } from '../../../src/cri/testing/fake-cri-server.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import { fullSandboxConfig } from './cri-fixtures.js';

describe('RemoteImageService against the fake CRI server', () => {
  let server: FakeCriServer;
  let images: RemoteImageService;

  before(async () => {
    server = await FakeCriServer.start();
    images = new RemoteImageService(server.endpoint, {
      runtimeRequestTimeoutMs: 5000,
      imagePullTimeoutMs: 5000,
    });
  });

  after(async () => {
    images.close();
    await server.close();
  });

  test('ImageStatus finds a present image by short or full name and returns undefined for a missing one', async () => {
    const short = await images.imageStatus({ image: 'busybox' });
    const full = await images.imageStatus({ image: 'docker.io/library/busybox:latest' });
    assert.ok(short);
    assert.deepEqual(short, full);
    assert.match(short.id, /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(short.repoTags, ['docker.io/library/busybox:latest']);
    assert.ok(short.size > 0);
    assert.equal(await images.imageStatus({ image: 'example.com/missing:1.0' }), undefined);
  });

  test('ListImages lists everything, or the one image a filter names', async () => {
    const all = await images.listImages();
    assert.ok(all.some((i) => i.repoTags.includes('registry.k8s.io/pause:3.9')));
    assert.ok(all.length >= 2);
    const filtered = await images.listImages({ image: { image: 'registry.k8s.io/pause:3.9' } });
    assert.deepEqual(
      filtered.map((i) => i.repoTags[0]),
      ['registry.k8s.io/pause:3.9'],
    );
  });

  test('PullImage sends the auth and sandbox config and returns the image ref; RemoveImage removes it', async () => {
    const sandboxConfig = fullSandboxConfig('puller');
    const ref = await images.pullImage(
      { image: 'registry.local:5000/app:v1', annotations: { 'kubernetes.io/runtimehandler': 'runc' } },
      { username: 'me', password: 'secret', serverAddress: 'registry.local:5000' },
      sandboxConfig,
    );
    const sent = server.lastRequests.get('PullImage')!;
    assert.deepEqual((sent.auth as Record<string, unknown>).username, 'me');
    assert.deepEqual((sent.auth as Record<string, unknown>).password, 'secret');
    assert.deepEqual((sent.sandboxConfig as { metadata: unknown }).metadata, sandboxConfig.metadata);
    assert.deepEqual((sent.image as { annotations: unknown }).annotations, {
      'kubernetes.io/runtimehandler': 'runc',
    });
    const status = await images.imageStatus({ image: 'registry.local:5000/app:v1' });
    assert.equal(status?.id, ref);

    await images.removeImage({ image: ref });
    assert.equal(await images.imageStatus({ image: 'registry.local:5000/app:v1' }), undefined);
    await images.removeImage({ image: ref }); // removing an absent image is not an error
  });

  test('a failed pull keeps the runtime message', async () => {
    server.failNext(
      'PullImage',
      GrpcStatus.UNKNOWN,
      'failed to pull and unpack image "x": failed to resolve reference',
    );
    await assert.rejects(images.pullImage({ image: 'x' }, undefined, undefined), (err) => {
      assert.ok(isKubeletError(err, 'CRI_ERROR'));
      assert.match(err.message, /failed to resolve reference/);
      return true;
    });
  });

  test('ImageFsInfo reports the image filesystem', async () => {
    const [fs] = await images.imageFsInfo();
    assert.ok(fs);
    assert.ok(fs.timestamp > 0);
    assert.ok((fs.usedBytes?.value ?? 0) > 0);
    assert.equal(typeof fs.fsId?.mountpoint, 'string');
  });

  test('PullImage has its own deadline, separate from runtimeRequestTimeoutMs', async () => {
    const impatient = new RemoteImageService(server.endpoint, {
      runtimeRequestTimeoutMs: 5000,
      imagePullTimeoutMs: 100,
    });
    server.setDelay('PullImage', 500);
    server.setDelay('ListImages', 300);
    try {
      await assert.rejects(impatient.pullImage({ image: 'slow:1' }, undefined, undefined), (err) =>
        isKubeletError(err, 'CRI_DEADLINE_EXCEEDED'),
      );
      assert.ok((await impatient.listImages()).length > 0, 'other calls keep the longer deadline');
      assert.match(
        await impatient.pullImage({ image: 'slow:1' }, undefined, undefined, { timeoutMs: 5000 }),
        /^sha256:/,
      );
    } finally {
      server.setDelay('PullImage', 0);
      server.setDelay('ListImages', 0);
      impatient.close();
    }
  });
});
