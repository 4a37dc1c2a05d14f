/**
 * Safe by default and no silent settings: standalone without a config file (loopback, no anonymous
 * requests, no read-only port), the README's first command (scripts/run-example.sh) serving no API,
 * the warning for an open API (loopback included),
 * the one warning line naming settings that are parsed but not acted on, logging and cloud-provider
 * validation worded as upstream, and --max-parallel-pod-starts' own check.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { loadKubeletConfig, type LoadedKubeletConfig } from '../../../src/cmd/load-kubelet-config.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import type { Logger } from '../../../src/lib/log.js';
import { pingCheck } from '../../../src/server/healthz.js';
import { startKubeletServer } from '../../../src/server/kubelet-server.js';

const HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
const REPO = join(import.meta.dirname, '..', '..', '..');

describe('safe defaults', () => {
  let dir: string;
  let warnings: string[];
  const log: Logger = {
    info: () => undefined,
    warn: (msg) => warnings.push(msg),
    error: () => undefined,
    v: () => undefined,
    enabled: () => false,
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'safe-defaults-'));
    warnings = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function run(argv: string[]): Promise<Extract<LoadedKubeletConfig, { action: 'run' }>> {
    const loaded = await loadKubeletConfig(argv, { hostname: () => 'node-1', cwd: dir, log });
    assert.equal(loaded.action, 'run');
    return loaded as Extract<LoadedKubeletConfig, { action: 'run' }>;
  }
  async function failure(argv: string[]): Promise<string> {
    try {
      await loadKubeletConfig(argv, { hostname: () => 'node-1', cwd: dir, log });
    } catch (err) {
      assert.ok(isKubeletError(err, 'INVALID_CONFIG'), String(err));
      return err.message;
    }
    assert.fail(`expected ${argv.join(' ')} to fail`);
  }

  test('standalone without a config file: loopback, no anonymous requests, no read-only port; the API is not served and the log says why', async () => {
    const { config } = await run(['--pod-manifest-path', dir]);
    assert.equal(config.address, '127.0.0.1');
    assert.equal(config.authentication.anonymous.enabled, false);
    assert.equal(config.authorization.mode, 'AlwaysAllow');
    assert.equal(config.readOnlyPort, 0);
    assert.equal(warnings.filter((w) => w.includes('lets anonymous')).length, 0);
    assert.ok(
      warnings.some(
        (w) => w.includes('127.0.0.1:10250) is not served') && w.includes('--anonymous-auth=true'),
      ),
      warnings.join('\n'),
    );
    // Upstream's own check refuses to serve it with no authentication method.
    await assert.rejects(
      startKubeletServer(
        {
          getPods: () => [],
          getRunningPods: async () => [],
          healthChecks: () => [pingCheck],
          runtime: new FakeRuntime(),
        },
        { config: { ...config, port: 0 }, nodeName: 'node-1', certDirectory: dir },
      ),
      /No authentication method configured/,
    );
  });

  test('standalone: a client CA serves the API to certificate holders; --anonymous-auth=true opens it on purpose, with a warning even on loopback', async () => {
    const ca = await run(['--client-ca-file', join(dir, 'ca.crt')]);
    assert.equal(ca.config.authentication.anonymous.enabled, false);
    assert.equal(warnings.filter((w) => /not served|lets anonymous/.test(w)).length, 0, warnings.join('\n'));

    const open = await run(['--anonymous-auth=true', '--read-only-port=10255']);
    assert.equal(open.config.address, '127.0.0.1');
    assert.equal(open.config.authentication.anonymous.enabled, true);
    assert.equal(open.config.readOnlyPort, 10255);
    assert.ok(
      warnings.some(
        (w) =>
          w.includes('127.0.0.1:10250 lets anonymous requests do anything') &&
          w.includes('every user and process on this machine'),
      ),
      warnings.join('\n'),
    );
    warnings = [];
    const wide = await run(['--anonymous-auth=true', '--address', '0.0.0.0']);
    assert.equal(wide.config.address, '0.0.0.0');
    assert.ok(warnings.some((w) => w.includes('0.0.0.0:10250 lets anonymous requests do anything')));
  });

  test('standalone: what --config-dir drop-ins say about anonymous requests and the read-only port stays theirs', async () => {
    const dropins = join(dir, 'conf.d');
    mkdirSync(dropins);
    writeFileSync(
      join(dropins, '10-open.conf'),
      HEADER + 'readOnlyPort: 10266\nauthentication:\n  anonymous:\n    enabled: true\n',
    );
    const { config } = await run([`--config-dir=${dropins}`]);
    assert.equal(config.readOnlyPort, 10266);
    assert.equal(config.authentication.anonymous.enabled, true);
  });

  test('cluster mode and config files keep upstream defaults; the open legacy defaults are warned about', async () => {
    assert.equal((await run(['--kubeconfig', join(dir, 'k')])).config.address, '0.0.0.0');
    assert.equal(warnings.filter((w) => w.includes('lets anonymous')).length, 1);
    warnings = [];
    writeFileSync(join(dir, 'c.yaml'), HEADER);
    assert.equal((await run(['--config', join(dir, 'c.yaml')])).config.address, '0.0.0.0');
    assert.equal(warnings.filter((w) => w.includes('lets anonymous')).length, 0);
  });

  test("the README's first command serves no kubelet API and no read-only port, so no local user reaches /run or /exec", async () => {
    const script = readFileSync(join(REPO, 'scripts', 'run-example.sh'), 'utf8');
    assert.match(script, /--config="\$PWD\/scripts\/example-kubelet-config.yaml"/);
    assert.doesNotMatch(script, /--address|--read-only-port|--anonymous-auth|--enable-server/);
    const { config } = await run([
      `--config=${join(REPO, 'scripts', 'example-kubelet-config.yaml')}`,
      '--container-runtime-endpoint=unix:///nonexistent.sock',
      `--root-dir=${dir}`,
    ]);
    assert.equal(config.enableServer, false);
    assert.equal(config.readOnlyPort, 0);
    assert.equal(config.healthzBindAddress, '127.0.0.1');
    assert.equal(config.address, '127.0.0.1');
    assert.equal(config.authentication.anonymous.enabled, false);
    assert.equal(warnings.filter((w) => w.includes('lets anonymous')).length, 0);
    // Turned on as its comment says, only a client certificate gets in (upstream's check).
    await assert.rejects(
      startKubeletServer(
        {
          getPods: () => [],
          getRunningPods: async () => [],
          healthChecks: () => [pingCheck],
          runtime: new FakeRuntime(),
        },
        { config: { ...config, port: 0 }, nodeName: 'node-1', certDirectory: dir },
      ),
      /No authentication method configured/,
    );
  });

  test('makeIPTablesUtilChains is named when true (upstream makes the chains; tskubelet does not), not when false', async () => {
    writeFileSync(join(dir, 'ipt.yaml'), HEADER + 'makeIPTablesUtilChains: false\n');
    await run(['--config', join(dir, 'ipt.yaml')]);
    assert.ok(
      !warnings.some((w) => /parsed but not acted on.*makeIPTablesUtilChains/.test(w)),
      warnings.join('\n'),
    );
    warnings = [];
    writeFileSync(join(dir, 'ipt.yaml'), HEADER + 'makeIPTablesUtilChains: true\n');
    await run(['--config', join(dir, 'ipt.yaml')]);
    assert.ok(
      warnings.some((w) => /parsed but not acted on.*makeIPTablesUtilChains=true/.test(w)),
      warnings.join('\n'),
    );
  });

  test('one warning line names every setting parsed but not acted on, with its value', async () => {
    writeFileSync(
      join(dir, 'c.yaml'),
      HEADER +
        'memoryManagerPolicy: Static\ncpuManagerPolicy: static\nshutdownGracePeriod: 30s\nmaxPods: 50\n' +
        'enableContentionProfiling: true\n' +
        'featureGates:\n  EventedPLEG: false\n  InPlacePodVerticalScaling: true\n',
    );
    await run(['--config', join(dir, 'c.yaml'), '--lock-file=/run/kubelet.lock']);
    const lines = warnings.filter((w) => w.includes('parsed but not acted on'));
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /enableContentionProfiling=true/);
    // The CPU and memory managers act on them now.
    assert.doesNotMatch(lines[0]!, /memoryManagerPolicy/);
    assert.doesNotMatch(lines[0]!, /cpuManagerPolicy/);
    assert.match(lines[0]!, /featureGates\.InPlacePodVerticalScaling=true/);
    assert.doesNotMatch(lines[0]!, /EventedPLEG/);
    // Graceful node shutdown acts on it now.
    assert.doesNotMatch(lines[0]!, /shutdownGracePeriod/);
    // The lock file is acted on now.
    assert.doesNotMatch(lines[0]!, /--lock-file/);
    assert.doesNotMatch(lines[0]!, /maxPods/);
  });

  test('an unknown --logging-format fails with upstream words; json and --vmodule are accepted', async () => {
    assert.equal(
      await failure(['--logging-format=xml']),
      'initialize logging: logging.format: Invalid value: "xml": Unsupported log format',
    );
    assert.equal((await run(['--logging-format=json'])).config.logging.format, 'json');
    assert.deepEqual((await run(['--vmodule=prober=4,k8s=2'])).config.logging.vmodule, [
      { filePattern: 'prober', verbosity: 4 },
      { filePattern: 'k8s', verbosity: 2 },
    ]);
    assert.match(
      await failure(['--logging-format=json', '--vmodule=prober=4']),
      /logging.vmodule: Forbidden: Only supported for text log format/,
    );
    assert.match(await failure(['--vmodule=prober']), /"prober" does not have the pattern=N format/);
  });

  test('--cloud-provider accepts external and empty, refuses in-tree providers as upstream', async () => {
    assert.equal((await run(['--cloud-provider=external'])).flags.cloudProvider, 'external');
    assert.equal((await run(['--cloud-provider='])).flags.cloudProvider, '');
    assert.equal(
      await failure(['--cloud-provider=aws']),
      'cloud provider "aws" was specified, but built-in cloud providers are disabled. Please set --cloud-provider=external and migrate to an external cloud provider',
    );
  });

  test('--max-parallel-pod-starts: unset means the default, 0 no bound, a negative value is refused', async () => {
    assert.equal((await run([])).flags.maxParallelPodStarts, undefined);
    assert.equal((await run(['--max-parallel-pod-starts=0'])).flags.maxParallelPodStarts, 0);
    assert.equal((await run(['--max-parallel-pod-starts', '3'])).flags.maxParallelPodStarts, 3);
    assert.equal(
      await failure(['--max-parallel-pod-starts=-1']),
      '--max-parallel-pod-starts must be 0 (no bound) or more, got -1',
    );
  });

  test('--max-connections-per-listener and --max-streaming-sessions: unset means the default, 0 no bound, negative refused', async () => {
    const unset = (await run([])).flags;
    assert.equal(unset.maxConnectionsPerListener, undefined);
    assert.equal(unset.maxStreamingSessions, undefined);
    const set = (await run(['--max-connections-per-listener=0', '--max-streaming-sessions', '16'])).flags;
    assert.equal(set.maxConnectionsPerListener, 0);
    assert.equal(set.maxStreamingSessions, 16);
    assert.equal(
      await failure(['--max-connections-per-listener=-1']),
      '--max-connections-per-listener must be 0 (no bound) or more, got -1',
    );
    assert.equal(
      await failure(['--max-streaming-sessions=-5']),
      '--max-streaming-sessions must be 0 (no bound) or more, got -5',
    );
  });
});
