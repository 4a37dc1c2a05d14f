/**
 * Images pulled from a real registry on loopback (Debian's docker-registry,
 * started by scripts/registry.sh) as upstream's node conformance "Container Runtime ... when
 * running a container with a new image" cases (test/e2e/common/node/runtime.go) pull them: the pull
 * policies, ErrImagePull then ImagePullBackOff for an image that is not there, a registry that asks
 * for credentials, and serializeImagePulls (the default): one pull at a time on the node.
 *
 * A recording proxy in front of the registry holds each manifest request a moment, so that pulls
 * take long enough to be seen overlapping, or not.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { containerStatus, makePod, StandaloneNode } from '../helpers/conformance.js';
import { PullRecorder, TestRegistry } from '../helpers/conformance-registry.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { freePort } from '../helpers/ports.js';

const ns = `it-conf-pull-${process.pid}`;
const MANIFEST_DELAY_MS = 1500;

describe('conformance: image pulls', () => {
  let registry: TestRegistry;
  let authRegistry: TestRegistry;
  let recorder: PullRecorder;
  let node: StandaloneNode | undefined;
  const digests = new Map<string, string>();
  const pulled: string[] = [];

  before(async () => {
    registry = await TestRegistry.start(await freePort());
    authRegistry = await TestRegistry.start(await freePort(), 'puller:s3cret');
    recorder = await PullRecorder.start(registry, MANIFEST_DELAY_MS);
    for (const repo of ['tsk/app', 'tsk/serial-1', 'tsk/serial-2', 'tsk/serial-3']) {
      // A config of its own makes each a distinct image, so every one is pulled for real.
      const { digest } = await registry.push('busybox', 'docker.io/library/busybox:latest', repo, 'v1', {
        Labels: { repo },
      });
      digests.set(repo, digest);
    }
    await authRegistry.push('busybox', 'docker.io/library/busybox:latest', 'tsk/private', 'v1');
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

  function imagePod(name: string, image: string, imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never'): Pod {
    pulled.push(image);
    return makePod(ns, name, {
      containers: [{ name: 'c', image, imagePullPolicy, command: ['sh', '-c', 'exec sleep 3600'] }],
    });
  }

  test('an image from the registry: pulled, run, and reported by its digest', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const image = `${recorder.host}/tsk/app:v1`;
    await n.createPod(imagePod('from-registry', image, 'Always'));
    const p = await n.waitPod('from-registry', 'Running', (x) => x.status?.phase === 'Running', 60_000);
    const cs = containerStatus(p, 'c');
    assert.equal(cs?.image, image);
    assert.equal(cs?.imageID, `${recorder.host}/tsk/app@${digests.get('tsk/app')}`);
    assert.ok(recorder.requests.some((r) => r.repo === 'tsk/app' && r.status === 200));
  });

  test('an image that is not there: ErrImagePull, then ImagePullBackOff until the back-off runs out; Never does not pull', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const missing = `${recorder.host}/tsk/missing:v1`;
    await n.createPod(imagePod('missing', missing, 'IfNotPresent'));
    await n.createPod(imagePod('never', `${recorder.host}/tsk/never-pulled:v1`, 'Never'));

    const waiting = (p: Pod) => containerStatus(p, 'c')?.state?.waiting;
    const first = await n.waitPod(
      'missing',
      'ErrImagePull',
      (p) => waiting(p)?.reason === 'ErrImagePull',
      60_000,
    );
    const firstAt = Date.now();
    assert.equal(first.status?.phase, 'Pending');
    assert.match(
      waiting(first)?.message ?? '',
      new RegExp(`failed to pull and unpack image "${missing.replace(/[.:/]/g, '\\$&')}".*not found`),
    );
    const backOff = await n.waitPod(
      'missing',
      'ImagePullBackOff',
      (p) => waiting(p)?.reason === 'ImagePullBackOff',
    );
    assert.equal(waiting(backOff)?.message, `Back-off pulling image "${missing}"`);
    await n.waitPod(
      'missing',
      'ErrImagePull again after the back-off',
      (p) => waiting(p)?.reason === 'ErrImagePull',
      60_000,
    );
    const retryMs = Date.now() - firstAt;
    assert.ok(retryMs >= 8_000, `the second pull waited out the 10 s back-off (${retryMs} ms)`);

    const never = await n.waitPod(
      'never',
      'ErrImageNeverPull',
      (p) => waiting(p)?.reason === 'ErrImageNeverPull',
    );
    assert.equal(
      waiting(never)?.message,
      `Container image "${recorder.host}/tsk/never-pulled:v1" is not present with pull policy of Never`,
    );
    assert.ok(!recorder.requests.some((r) => r.repo === 'tsk/never-pulled'), 'Never made no request');
  });

  test('a registry that asks for credentials refuses a pull without them', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const image = `${authRegistry.host}/tsk/private:v1`;
    await n.createPod(imagePod('private', image, 'IfNotPresent'));
    const p = await n.waitPod(
      'private',
      'ErrImagePull',
      (x) => containerStatus(x, 'c')?.state?.waiting?.reason === 'ErrImagePull',
      60_000,
    );
    assert.match(containerStatus(p, 'c')?.state?.waiting?.message ?? '', /401 Unauthorized/);
  });

  test('serializeImagePulls (the default): one pull at a time', async () => {
    const n = (node = await StandaloneNode.start(ns));
    for (const i of [1, 2, 3])
      await n.createPod(imagePod(`serial-${i}`, `${recorder.host}/tsk/serial-${i}:v1`, 'Always'));
    for (const i of [1, 2, 3])
      await n.waitPod(`serial-${i}`, 'Running', (p) => p.status?.phase === 'Running', 90_000);
    const spans = recorder.spans();
    for (const i of [1, 2, 3]) assert.ok(spans.has(`tsk/serial-${i}`), `serial-${i} was pulled`);
    assert.equal(recorder.maxConcurrentPulls(), 1, JSON.stringify([...spans]));
  });
});
