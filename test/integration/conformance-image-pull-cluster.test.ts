/**
 * Through the API: imagePullSecrets (a docker config JSON secret) sent to the
 * runtime as the pull's credentials, a missing secret reported (FailedToRetrieveImagePullSecret) and
 * the pull tried without it; and pulls in parallel when serializeImagePulls is off. The registry is
 * Debian's docker-registry on loopback, with basic auth (scripts/registry.sh).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { ClusterNode, containerStatus, makePod } from '../helpers/conformance.js';
import { PullRecorder, TestRegistry } from '../helpers/conformance-registry.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { freePort } from '../helpers/ports.js';

const ns = `it-conf-pullc-${process.pid}`;

describe('conformance: image pulls through the API', () => {
  let authRegistry: TestRegistry;
  let registry: TestRegistry;
  let recorder: PullRecorder;
  let node: ClusterNode | undefined;
  const pulled: string[] = [];

  before(async () => {
    authRegistry = await TestRegistry.start(await freePort(), 'puller:s3cret');
    await authRegistry.push('busybox', 'docker.io/library/busybox:latest', 'tsk/private', 'v1');
    registry = await TestRegistry.start(await freePort());
    recorder = await PullRecorder.start(registry, 1500);
    for (const i of [1, 2, 3])
      await registry.push('busybox', 'docker.io/library/busybox:latest', `tsk/parallel-${i}`, 'v1', {
        Labels: { i: String(i) },
      });
  });

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  after(async () => {
    const cri = await CriInspector.connect();
    for (const image of pulled) await cri.conn.images.removeImage({ image }).catch(() => undefined);
    cri.close();
    await recorder.close();
    await registry.stop();
    await authRegistry.stop();
  });

  function imagePod(name: string, image: string, extra: Partial<Pod['spec']> = {}): Pod {
    pulled.push(image);
    return makePod(ns, name, {
      ...extra,
      containers: [{ name: 'c', image, imagePullPolicy: 'Always', command: ['sh', '-c', 'exec sleep 3600'] }],
    });
  }

  test('imagePullSecrets: the docker config credentials go with the pull; a missing secret is reported', async () => {
    const n = (node = await ClusterNode.start(ns));
    const dockerconfig = JSON.stringify({
      auths: { [authRegistry.host]: { auth: Buffer.from('puller:s3cret').toString('base64') } },
    });
    n.create('secrets', {
      metadata: { name: 'regcred', namespace: ns },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': Buffer.from(dockerconfig).toString('base64') },
    });
    const image = `${authRegistry.host}/tsk/private:v1`;
    await n.createPod(imagePod('with-secret', image, { imagePullSecrets: [{ name: 'regcred' }] }));
    await n.createPod(imagePod('missing-secret', image, { imagePullSecrets: [{ name: 'not-there' }] }));

    const running = await n.waitPod('with-secret', 'Running', (p) => p.status?.phase === 'Running', 60_000);
    assert.equal(containerStatus(running, 'c')?.image, image);
    const pulledEvent = await n.waitEvent('with-secret', 'Pulled', 'spec.containers{c}');
    assert.match(
      pulledEvent.message ?? '',
      new RegExp(`^Successfully pulled image "${image.replace(/[.:/]/g, '\\$&')}" in `),
    );

    const refused = await n.waitPod(
      'missing-secret',
      'ErrImagePull or ImagePullBackOff',
      (p) =>
        ['ErrImagePull', 'ImagePullBackOff'].includes(containerStatus(p, 'c')?.state?.waiting?.reason ?? ''),
      60_000,
    );
    assert.equal(refused.status?.phase, 'Pending');
    const warning = await n.waitEvent('missing-secret', 'FailedToRetrieveImagePullSecret');
    assert.equal(
      warning.message,
      'Unable to retrieve some image pull secrets (not-there); attempting to pull the image may not succeed.',
    );
    const failed = await n.waitEvent('missing-secret', 'Failed', 'spec.containers{c}');
    assert.match(failed.message ?? '', /401 Unauthorized/);
  });

  test('serializeImagePulls=false: pulls run side by side', async () => {
    const n = (node = await ClusterNode.start(ns, ['--serialize-image-pulls=false']));
    for (const i of [1, 2, 3])
      await n.createPod(imagePod(`parallel-${i}`, `${recorder.host}/tsk/parallel-${i}:v1`));
    for (const i of [1, 2, 3])
      await n.waitPod(`parallel-${i}`, 'Running', (p) => p.status?.phase === 'Running', 90_000);
    assert.ok(recorder.maxConcurrentPulls() >= 2, JSON.stringify([...recorder.spans()]));
  });
});
