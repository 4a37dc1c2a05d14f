/**
 * The CredentialProviderConfig file: decoded (upstream Test_readCredentialProviderConfigFile),
 * validated (Test_validateCredentialProviderConfig) with upstream's messages, and registered as
 * RegisterCredentialProviderPlugins does: the bin folder and each binary must exist, providers
 * asked in the order of their names. Through loadKubeletConfig, a bad file stops the start.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadKubeletConfig } from '../../../src/cmd/load-kubelet-config.js';
import {
  decodeCredentialProviderConfig,
  validateCredentialProviderConfig,
  type CredentialProvider,
} from '../../../src/credentialprovider/provider-config.js';
import { loadCredentialProviderPlugins } from '../../../src/credentialprovider/register-plugins.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import type { Logger } from '../../../src/lib/log.js';

const provider = (name: string, version: string, matchImage: string, extra = ''): string =>
  `  - name: ${name}
    matchImages:
    - "${matchImage}"
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/${version}
${extra}`;
const ARGS_ENV = `    args:
    - --v=5
    env:
    - name: FOO
      value: BAR
`;

describe('decoding (upstream Test_readCredentialProviderConfigFile)', () => {
  const expected = (
    name: string,
    version: string,
    matchImages: string[],
    withArgs: boolean,
  ): CredentialProvider => ({
    name,
    matchImages,
    defaultCacheDurationMs: 600_000,
    apiVersion: `credentialprovider.kubelet.k8s.io/${version}`,
    args: withArgs ? ['--v=5'] : [],
    env: withArgs ? [{ name: 'FOO', value: 'BAR' }] : [],
  });
  for (const [name, fileVersion, body, providers] of [
    [
      'config with 1 plugin and 1 image matcher',
      'v1alpha1',
      provider('test', 'v1alpha1', 'registry.io/foobar', ARGS_ENV),
      [expected('test', 'v1alpha1', ['registry.io/foobar'], true)],
    ],
    [
      'config with 1 plugin and a wildcard image match',
      'v1alpha1',
      provider('test', 'v1alpha1', 'registry.io/*', ARGS_ENV),
      [expected('test', 'v1alpha1', ['registry.io/*'], true)],
    ],
    [
      'config with 1 plugin and multiple image matchers',
      'v1alpha1',
      `  - name: test\n    matchImages:\n    - "registry.io/*"\n    - "foobar.registry.io/*"\n    defaultCacheDuration: 10m\n    apiVersion: credentialprovider.kubelet.k8s.io/v1alpha1\n${ARGS_ENV}`,
      [expected('test', 'v1alpha1', ['registry.io/*', 'foobar.registry.io/*'], true)],
    ],
    ...(['v1alpha1', 'v1beta1', 'v1'] as const).map(
      (v) =>
        [
          `${v} config with multiple providers`,
          v,
          provider('test1', v, 'registry.io/one') + provider('test2', v, 'registry.io/two', ARGS_ENV),
          [expected('test1', v, ['registry.io/one'], false), expected('test2', v, ['registry.io/two'], true)],
        ] as const,
    ),
  ] as const)
    test(name, () => {
      const text = `---\nkind: CredentialProviderConfig\napiVersion: kubelet.config.k8s.io/${fileVersion}\nproviders:\n${body}`;
      assert.deepEqual(decodeCredentialProviderConfig(text), { config: { providers }, unknownFields: [] });
    });

  test('config with wrong Kind, or wrong apiversion: refused', () => {
    const body = provider('test', 'v1alpha1', 'registry.io/foobar', ARGS_ENV);
    assert.throws(
      () =>
        decodeCredentialProviderConfig(
          `kind: WrongKind\napiVersion: kubelet.config.k8s.io/v1alpha1\nproviders:\n${body}`,
        ),
      {
        message: 'no kind "WrongKind" is registered for version "kubelet.config.k8s.io/v1alpha1"',
      },
    );
    assert.throws(
      () =>
        decodeCredentialProviderConfig(
          `kind: CredentialProviderConfig\napiVersion: foobar/v1alpha1\nproviders:\n${body}`,
        ),
      {
        message: 'no kind "CredentialProviderConfig" is registered for version "foobar/v1alpha1"',
      },
    );
    assert.throws(
      () => decodeCredentialProviderConfig('apiVersion: kubelet.config.k8s.io/v1\n'),
      /Object 'Kind' is missing/,
    );
  });

  test('a field of the wrong type is an error; an unknown field is named', () => {
    assert.throws(
      () =>
        decodeCredentialProviderConfig(
          'kind: CredentialProviderConfig\napiVersion: kubelet.config.k8s.io/v1\nproviders:\n  - name: x\n    matchImages: gcr.io\n',
        ),
      { message: 'providers[0].matchImages: expected a list, got a string' },
    );
    assert.throws(
      () =>
        decodeCredentialProviderConfig(
          'kind: CredentialProviderConfig\napiVersion: kubelet.config.k8s.io/v1\nproviders:\n  - name: x\n    defaultCacheDuration: soon\n',
        ),
      /time: invalid duration "soon"/,
    );
    const decoded = decodeCredentialProviderConfig(
      `kind: CredentialProviderConfig\napiVersion: kubelet.config.k8s.io/v1\nproviders:\n${provider('a', 'v1', 'x.io', '    cacheDuration: 1m\n')}`,
    );
    assert.deepEqual(decoded.unknownFields, ['providers[0].cacheDuration']);
  });
});

describe('validation (upstream Test_validateCredentialProviderConfig)', () => {
  const valid: CredentialProvider = {
    name: 'foobar',
    matchImages: ['foobar.registry.io'],
    defaultCacheDurationMs: 60_000,
    apiVersion: 'credentialprovider.kubelet.k8s.io/v1alpha1',
    args: [],
    env: [],
  };
  const cases: [string, Partial<CredentialProvider> | undefined, string[]][] = [
    [
      'no providers provided',
      undefined,
      ['providers: Required value: at least 1 item in plugins is required'],
    ],
    [
      'no matchImages provided',
      { matchImages: [] },
      ['providers.matchImages: Required value: at least 1 item in matchImages is required'],
    ],
    [
      'no default cache duration provided',
      { defaultCacheDurationMs: undefined },
      ['providers.defaultCacheDuration: Required value: defaultCacheDuration is required'],
    ],
    [
      "name contains '/'",
      { name: 'foo/../bar' },
      [`providers.name: Invalid value: "foo/../bar": provider name cannot contain '/'`],
    ],
    ["name is '.'", { name: '.' }, [`providers.name: Invalid value: ".": provider name cannot be '.'`]],
    ["name is '..'", { name: '..' }, [`providers.name: Invalid value: "..": provider name cannot be '..'`]],
    [
      'name contains spaces',
      { name: 'foo bar' },
      ['providers.name: Invalid value: "foo bar": provider name cannot contain spaces'],
    ],
    ['no apiVersion', { apiVersion: '' }, ['providers.apiVersion: Required value: apiVersion is required']],
    [
      'invalid apiVersion',
      { apiVersion: 'credentialprovider.kubelet.k8s.io/v1alpha0' },
      [
        'providers.apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/v1alpha0": supported values: "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1alpha1", "credentialprovider.kubelet.k8s.io/v1beta1"',
      ],
    ],
    [
      'negative default cache duration',
      { defaultCacheDurationMs: -60_000 },
      [
        'providers.defaultCacheDuration: Invalid value: -1m0s: defaultCacheDuration must be greater than or equal to 0',
      ],
    ],
    [
      'invalid match image',
      { matchImages: ['%invalid%'] },
      [
        'providers.matchImages: Invalid value: "%invalid%": match image is invalid: parse "https://%invalid%": invalid URL escape "%in"',
      ],
    ],
    ['valid config', {}, []],
  ];
  for (const [name, change, errs] of cases)
    test(name, () => {
      const providers = change === undefined ? [] : [{ ...valid, ...change }];
      assert.deepEqual(validateCredentialProviderConfig({ providers }), errs);
    });
});

describe('registering the plugins at start', () => {
  let dir: string;
  let binDir: string;
  const configFile = () => join(dir, 'credential-provider.yaml');
  const writeConfig = (providers: string) =>
    writeFileSync(
      configFile(),
      `apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n${providers}`,
    );
  const bin = (name: string) => {
    writeFileSync(join(binDir, name), '#!/bin/sh\n');
    chmodSync(join(binDir, name), 0o755);
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'credprov-config-'));
    binDir = join(dir, 'bin');
    mkdirSync(binDir);
    bin('zeta');
    bin('alpha');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('providers come back in the order of their names, with their settings', async () => {
    writeConfig(provider('zeta', 'v1', 'z.io', ARGS_ENV) + provider('alpha', 'v1', '*.a.io'));
    const loaded = await loadCredentialProviderPlugins(configFile(), binDir);
    assert.deepEqual(
      loaded.providers.map((p) => [p.name, p.matchImages, p.defaultCacheDurationMs, p.args]),
      [
        ['alpha', ['*.a.io'], 600_000, []],
        ['zeta', ['z.io'], 600_000, ['--v=5']],
      ],
    );
    assert.equal(loaded.binDir, binDir);
  });

  test("what stops the start, in upstream's words", async () => {
    writeConfig(provider('alpha', 'v1', 'a.io'));
    await assert.rejects(loadCredentialProviderPlugins(configFile(), join(dir, 'nope')), {
      message: `plugin binary directory ${join(dir, 'nope')} did not exist`,
    });
    await assert.rejects(loadCredentialProviderPlugins('', binDir), {
      message: 'credential provider config path is empty',
    });
    await assert.rejects(
      loadCredentialProviderPlugins(join(dir, 'missing.yaml'), binDir),
      /^Error: unable to read external registry credential provider configuration from ".*missing.yaml": .*ENOENT/,
    );
    writeConfig(provider('beta', 'v1', 'b.io'));
    await assert.rejects(loadCredentialProviderPlugins(configFile(), binDir), {
      message: `plugin binary executable ${join(binDir, 'beta')} did not exist`,
    });
    writeConfig(provider('alpha', 'v1', 'a.io') + provider('alpha', 'v1', 'b.io'));
    await assert.rejects(loadCredentialProviderPlugins(configFile(), binDir), {
      message: 'Credential provider "alpha" was registered twice',
    });
    writeConfig(provider('../alpha', 'v9', '%x'));
    await assert.rejects(loadCredentialProviderPlugins(configFile(), binDir), {
      message:
        `failed to validate credential provider config: [providers.name: Invalid value: "../alpha": provider name cannot contain '/', ` +
        'providers.apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/v9": supported values: "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1alpha1", "credentialprovider.kubelet.k8s.io/v1beta1", ' +
        'providers.matchImages: Invalid value: "%x": match image is invalid: parse "https://%x": invalid URL escape "%x"]',
    });
  });

  test('loadKubeletConfig: a bad file is a clear error at start; a good one is loaded and no longer called unused', async () => {
    const warnings: string[] = [];
    const log: Logger = {
      info: () => undefined,
      warn: (m) => warnings.push(m),
      error: () => undefined,
      v: () => undefined,
      enabled: () => false,
    };
    const options = { hostname: () => 'node-1', cwd: dir, log };
    writeConfig(provider('beta', 'v1', 'b.io'));
    const err = await loadKubeletConfig(
      [`--image-credential-provider-config=${configFile()}`, `--image-credential-provider-bin-dir=${binDir}`],
      options,
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(isKubeletError(err, 'INVALID_CONFIG'));
    assert.equal(
      err.message,
      `Failed to register CRI auth plugins: plugin binary executable ${join(binDir, 'beta')} did not exist`,
    );
    // Only the bin folder set: upstream registers, and the empty config path fails.
    await assert.rejects(loadKubeletConfig([`--image-credential-provider-bin-dir=${binDir}`], options), {
      message: 'Failed to register CRI auth plugins: credential provider config path is empty',
    });

    writeConfig(provider('alpha', 'v1', 'a.io', '    unknownField: 1\n'));
    const loaded = await loadKubeletConfig(
      [
        '--image-credential-provider-config=credential-provider.yaml',
        '--image-credential-provider-bin-dir=bin',
      ],
      options,
    );
    assert.equal(loaded.action, 'run');
    if (loaded.action !== 'run') return;
    assert.deepEqual(
      loaded.credentialProviders?.providers.map((p) => p.name),
      ['alpha'],
    );
    assert.equal(loaded.credentialProviders?.binDir, binDir, 'relative to the working folder');
    assert.ok(warnings.some((w) => w.includes('providers[0].unknownField')));
    assert.ok(
      !warnings.some((w) => w.includes('parsed but not acted on') && w.includes('credential')),
      warnings.join('\n'),
    );
  });
});
