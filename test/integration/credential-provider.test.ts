/**
 * Credential provider plugins through the built kubelet and real containerd. A
 * registry on loopback asks for basic auth (Debian's docker-registry with htpasswd,
 * scripts/registry.sh); a small shell plugin in the --image-credential-provider-bin-dir answers
 * with its credentials and counts its runs in a file. The pull works with them; a second pull from
 * the same registry within the answer's cacheDuration does not run the plugin again; a plugin that
 * fails is logged and the pull goes on without credentials (and is refused by the registry).
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { containerStatus, makePod, StandaloneNode } from '../helpers/conformance.js';
import { TestRegistry } from '../helpers/conformance-registry.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { freePort } from '../helpers/ports.js';

const ns = `it-credprov-${process.pid}`;
const V1 = 'credentialprovider.kubelet.k8s.io/v1';

describe('credential provider plugins', () => {
  let registry: TestRegistry;
  let dir: string;
  let node: StandaloneNode | undefined;
  const pulled: string[] = [];
  const callsFile = () => path.join(dir, 'calls');
  const calls = async () =>
    (await readFile(callsFile(), 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');

  before(async () => {
    registry = await TestRegistry.start(await freePort(), 'puller:s3cret');
    for (const repo of ['tsk/cp-a', 'tsk/cp-b', 'tsk/cp-fail'])
      await registry.push('busybox', 'docker.io/library/busybox:latest', repo, 'v1', { Labels: { repo } });
    dir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-credprov-it-'));
    const binDir = path.join(dir, 'bin');
    await mkdir(binDir);
    // Each run appends the request it read to the calls file; images under tsk/cp-fail fail.
    const plugin = path.join(binDir, 'test-registry-login');
    await writeFile(
      plugin,
      `#!/bin/sh
req=$(cat)
printf '%s\\n' "$req" >> "$CALLS_FILE"
case "$req" in *tsk/cp-fail*) echo "no credentials for this one" >&2; exit 1;; esac
printf '{"kind":"CredentialProviderResponse","apiVersion":"${V1}","cacheKeyType":"Registry","cacheDuration":"10m","auth":{"%s":{"username":"%s","password":"%s"}}}' "$REGISTRY" "$1" "$PASSWORD"
`,
    );
    await chmod(plugin, 0o755);
    await writeFile(
      path.join(dir, 'credential-provider.yaml'),
      [
        'apiVersion: kubelet.config.k8s.io/v1',
        'kind: CredentialProviderConfig',
        'providers:',
        '  - name: test-registry-login',
        `    matchImages: ["${registry.host}"]`,
        '    defaultCacheDuration: 1m',
        `    apiVersion: ${V1}`,
        '    args: [puller]',
        '    env:',
        `      - {name: CALLS_FILE, value: ${callsFile()}}`,
        `      - {name: REGISTRY, value: "${registry.host}"}`,
        '      - {name: PASSWORD, value: s3cret}',
        '',
      ].join('\n'),
    );
  });

  after(async () => {
    await node?.dispose();
    const cri = await CriInspector.connect();
    for (const image of pulled) await cri.conn.images.removeImage({ image }).catch(() => undefined);
    cri.close();
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function imagePod(name: string, image: string): Pod {
    pulled.push(image);
    return makePod(ns, name, {
      containers: [{ name: 'c', image, imagePullPolicy: 'Always', command: ['sh', '-c', 'exec sleep 3600'] }],
    });
  }

  test('the plugin supplies the credentials, its Registry answer is cached, a failing run leaves the pull anonymous', async () => {
    const n = (node = await StandaloneNode.start(ns, [
      `--image-credential-provider-config=${path.join(dir, 'credential-provider.yaml')}`,
      `--image-credential-provider-bin-dir=${path.join(dir, 'bin')}`,
    ]));
    const logs = await n.kubelet.logs();
    assert.doesNotMatch(logs, /not acted on.*credential-provider/, 'the flags are no longer warned about');

    // A failed run: logged, and the pull goes on without credentials, which the registry refuses.
    await n.createPod(imagePod('fail', `${registry.host}/tsk/cp-fail:v1`));
    const failed = await n.waitPod(
      'fail',
      'ErrImagePull',
      (p) => containerStatus(p, 'c')?.state?.waiting?.reason === 'ErrImagePull',
      60_000,
    );
    assert.match(containerStatus(failed, 'c')?.state?.waiting?.message ?? '', /401 Unauthorized/);
    await n.deletePod('fail');
    assert.match(
      await n.kubelet.logs(),
      /Failed getting credential from external registry credential provider.*exit status 1: no credentials for this one/,
    );
    assert.deepEqual(await calls(), [
      `{"kind":"CredentialProviderRequest","apiVersion":"${V1}","image":"${registry.host}/tsk/cp-fail"}`,
    ]);

    const before = (await calls()).length;
    await n.createPod(imagePod('a', `${registry.host}/tsk/cp-a:v1`));
    const a = await n.waitPod('a', 'Running', (p) => p.status?.phase === 'Running', 90_000);
    assert.equal(containerStatus(a, 'c')?.image, `${registry.host}/tsk/cp-a:v1`);
    const afterA = await calls();
    assert.equal(afterA.length, before + 1, 'one run for the first pull');
    assert.equal(
      afterA.at(-1),
      `{"kind":"CredentialProviderRequest","apiVersion":"${V1}","image":"${registry.host}/tsk/cp-a"}`,
    );

    // Another image of the same registry, within the 10m cacheDuration: no run.
    await n.createPod(imagePod('b', `${registry.host}/tsk/cp-b:v1`));
    await n.waitPod('b', 'Running', (p) => p.status?.phase === 'Running', 90_000);
    assert.equal((await calls()).length, before + 1, 'the cached answer served the second pull');
    assert.ok((await registry.log()).includes('puller'), "the registry saw the plugin's user");
  });
});
