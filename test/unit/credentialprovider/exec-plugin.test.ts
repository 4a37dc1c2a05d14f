/**
 * Running a real plugin binary (a shell script in a temporary bin folder): the request on stdin in
 * upstream's encoding, args and env from the config, the response decoded (upstream
 * Test_encodeRequest, Test_decodeResponse), and failures (exit status, timeout, wrong apiVersion)
 * in upstream's words with the plugin's stderr.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ExecPlugin } from '../../../src/credentialprovider/exec-plugin.js';
import { decodeResponse, encodeRequest } from '../../../src/credentialprovider/plugin-api.js';

const V1 = 'credentialprovider.kubelet.k8s.io/v1';

describe('the request and response encodings', () => {
  for (const version of ['v1alpha1', 'v1beta1', 'v1'])
    test(`request in ${version}, as upstream's encoder writes it`, () =>
      assert.equal(
        encodeRequest(`credentialprovider.kubelet.k8s.io/${version}`, 'test.registry.io/foobar'),
        `{"kind":"CredentialProviderRequest","apiVersion":"credentialprovider.kubelet.k8s.io/${version}","image":"test.registry.io/foobar"}\n`,
      ));

  for (const version of ['v1', 'v1beta1', 'v1alpha1'])
    test(`response in ${version}`, () => {
      const apiVersion = `credentialprovider.kubelet.k8s.io/${version}`;
      const body = `{"kind":"CredentialProviderResponse","apiVersion":"${apiVersion}","cacheKeyType":"Registry","cacheDuration":"1m","auth":{"*.registry.io":{"username":"user","password":"password"}}}`;
      assert.deepEqual(decodeResponse(body, apiVersion), {
        cacheKeyType: 'Registry',
        cacheDurationMs: 60_000,
        auth: { '*.registry.io': { username: 'user', password: 'password' } },
      });
    });

  test('wrong kind, wrong group, wrong version, not JSON: refused without quoting the body', () => {
    const v1beta1 = 'credentialprovider.kubelet.k8s.io/v1beta1';
    assert.throws(
      () =>
        decodeResponse(
          `{"kind":"WrongKind","apiVersion":"${v1beta1}","auth":{"x":{"password":"secret"}}}`,
          v1beta1,
        ),
      { message: 'error decoding credential provider plugin response from stdout' },
    );
    assert.throws(
      () =>
        decodeResponse(
          '{"kind":"CredentialProviderResponse","apiVersion":"foobar.kubelet.k8s.io/v1beta1"}',
          v1beta1,
        ),
      {
        message: `apiVersion from credential plugin response did not match expected apiVersion:${v1beta1}, actual apiVersion:foobar.kubelet.k8s.io/v1beta1`,
      },
    );
    assert.throws(
      () => decodeResponse(`{"kind":"CredentialProviderResponse","apiVersion":"${V1}"}`, v1beta1),
      /did not match/,
    );
    assert.throws(
      () => decodeResponse('password=secret', V1),
      (err: Error) => /^error reading GVK from response/.test(err.message) && !err.message.includes('secret'),
    );
    assert.throws(
      () =>
        decodeResponse(
          `{"kind":"CredentialProviderResponse","apiVersion":"${V1}","cacheDuration":"soon"}`,
          V1,
        ),
      { message: 'error decoding credential provider plugin response from stdout' },
    );
  });

  test('no cacheDuration stays undefined (the default applies); an empty auth is no credentials', () => {
    assert.deepEqual(
      decodeResponse(`{"kind":"CredentialProviderResponse","apiVersion":"${V1}","cacheKeyType":"Image"}`, V1),
      {
        cacheKeyType: 'Image',
        cacheDurationMs: undefined,
        auth: {},
      },
    );
  });
});

describe('ExecPlugin runs the binary', () => {
  let binDir: string;
  before(async () => {
    binDir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-credprov-'));
    const script = (body: string) => `#!/bin/sh\n${body}\n`;
    const write = async (name: string, body: string) => {
      await writeFile(path.join(binDir, name), script(body));
      await chmod(path.join(binDir, name), 0o755);
    };
    // Echoes what it was given into the answer, so the test sees stdin, args and env.
    await write(
      'echo-plugin',
      `req=$(cat)
printf '%s' "$req" > "${'$'}{0}.request"
printf '{"kind":"CredentialProviderResponse","apiVersion":"${V1}","cacheKeyType":"Image","cacheDuration":"5m","auth":{"reg.io":{"username":"%s","password":"%s"}}}' "$1 $2" "$TOKEN"`,
    );
    await write('failing-plugin', 'cat >/dev/null; echo "no credentials for you" >&2; exit 3');
    await write('slow-plugin', 'exec sleep 30');
    await write(
      'old-plugin',
      `cat >/dev/null; echo '{"kind":"CredentialProviderResponse","apiVersion":"credentialprovider.kubelet.k8s.io/v1alpha1"}'`,
    );
  });
  after(() => rm(binDir, { recursive: true, force: true }));

  test('the request on stdin, args in order, env from the config over the kubelet environment', async () => {
    const plugin = new ExecPlugin({
      name: 'echo-plugin',
      binDir,
      apiVersion: V1,
      args: ['--region', 'eu'],
      env: [{ name: 'TOKEN', value: 'from-config' }],
      environ: () => ({ PATH: process.env.PATH, TOKEN: 'from-kubelet' }),
    });
    const response = await plugin.execPlugin('reg.io/team/app');
    assert.deepEqual(response, {
      cacheKeyType: 'Image',
      cacheDurationMs: 300_000,
      auth: { 'reg.io': { username: '--region eu', password: 'from-config' } },
    });
    assert.equal(
      await readFile(path.join(binDir, 'echo-plugin.request'), 'utf8'),
      `{"kind":"CredentialProviderRequest","apiVersion":"${V1}","image":"reg.io/team/app"}`,
    );
  });

  test('a plugin that exits non-zero: its exit status and stderr, and the observer hears of the failure', async () => {
    const runs: [string, boolean][] = [];
    const plugin = new ExecPlugin({
      name: 'failing-plugin',
      binDir,
      apiVersion: V1,
      observer: { ran: (name, _s, failed) => runs.push([name, failed]) },
    });
    await assert.rejects(plugin.execPlugin('reg.io/app'), {
      message:
        'error execing credential provider plugin failing-plugin for image reg.io/app: exit status 3: no credentials for you\n',
    });
    assert.deepEqual(runs, [['failing-plugin', true]]);
  });

  test('a plugin that runs past the timeout is killed', async () => {
    const plugin = new ExecPlugin({ name: 'slow-plugin', binDir, apiVersion: V1, timeoutMs: 200 });
    const start = Date.now();
    await assert.rejects(plugin.execPlugin('reg.io/app'), {
      message:
        'error execing credential provider plugin slow-plugin for image reg.io/app: context deadline exceeded: ',
    });
    assert.ok(Date.now() - start < 5000);
  });

  test('an answer in another apiVersion than the config names is refused', async () => {
    const plugin = new ExecPlugin({ name: 'old-plugin', binDir, apiVersion: V1 });
    await assert.rejects(
      plugin.execPlugin('reg.io/app'),
      /did not match expected apiVersion:credentialprovider.kubelet.k8s.io\/v1, actual apiVersion:credentialprovider.kubelet.k8s.io\/v1alpha1/,
    );
  });

  test('a binary that is not there', async () => {
    const plugin = new ExecPlugin({ name: 'missing', binDir, apiVersion: V1 });
    await assert.rejects(
      plugin.execPlugin('reg.io/app'),
      /error execing credential provider plugin missing for image reg.io\/app: .*ENOENT/,
    );
  });
});
