import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';

import {
  loadKubeletConfig,
  type LoadedKubeletConfig,
  type LoadKubeletConfigOptions,
} from '../../../src/cmd/load-kubelet-config.js';
import { KUBELET_VERSION, TSKUBELET_VERSION, versionText } from '../../../src/cmd/version.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import type { Logger } from '../../../src/lib/log.js';

const HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

describe('loadKubeletConfig', () => {
  let dir: string;
  let warnings: string[];
  let options: LoadKubeletConfigOptions;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kubelet-config-'));
    warnings = [];
    const log: Logger = {
      info: () => undefined,
      warn: (msg) => warnings.push(msg),
      error: () => undefined,
      v: () => undefined,
      enabled: () => false,
    };
    options = { hostname: () => 'Node-1.Example.COM', cwd: dir, log };
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function run(argv: string[]): Promise<Extract<LoadedKubeletConfig, { action: 'run' }>> {
    const loaded = await loadKubeletConfig(argv, options);
    assert.equal(loaded.action, 'run');
    return loaded as Extract<LoadedKubeletConfig, { action: 'run' }>;
  }

  function writeConfig(body: string, name = 'kubelet.yaml'): string {
    const file = join(dir, name);
    writeFileSync(file, body);
    return file;
  }

  async function failure(argv: string[]): Promise<string> {
    try {
      await loadKubeletConfig(argv, options);
    } catch (err) {
      assert.ok(isKubeletError(err, 'INVALID_CONFIG'), String(err));
      return err.message;
    }
    assert.fail(`expected ${argv.join(' ')} to fail`);
  }

  test('enableSystemLogQuery needs NodeLogQuery and enableSystemLogHandler (upstream texts), and is acted on', async () => {
    const message = await failure([
      '--config',
      writeConfig(`${HEADER}enableSystemLogQuery: true\nenableSystemLogHandler: false\n`, 'no-gate.yaml'),
    ]);
    assert.match(
      message,
      /enableSystemLogQuery: NodeLogQuery feature gate is required for enableSystemLogHandler/,
    );
    assert.match(
      message,
      /enableSystemLogQuery: enableSystemLogHandler is required for enableSystemLogQuery/,
    );
    const loaded = await run([
      '--config',
      writeConfig(`${HEADER}enableSystemLogQuery: true\nfeatureGates: {NodeLogQuery: true}\n`, 'ok.yaml'),
    ]);
    assert.equal(loaded.config.enableSystemLogQuery, true);
    assert.ok(
      !warnings.some((w) => w.includes('not acted on') && /enableSystemLogQuery|NodeLogQuery/.test(w)),
      warnings.join('\n'),
    );
  });

  test('memorySwap.swapBehavior: NoSwap or LimitedSwap with NodeSwap (on by default), nothing without it', async () => {
    assert.match(
      await failure([
        '--config',
        writeConfig(`${HEADER}memorySwap: {swapBehavior: UnlimitedSwap}\n`, 'bad.yaml'),
      ]),
      /memorySwap.swapBehavior: "UnlimitedSwap" must be one of: "", "LimitedSwap" or "NoSwap"/,
    );
    assert.match(
      await failure([
        '--config',
        writeConfig(
          `${HEADER}featureGates: {NodeSwap: false}\nmemorySwap: {swapBehavior: NoSwap}\n`,
          'off.yaml',
        ),
      ]),
      /memorySwap.swapBehavior: cannot be set when NodeSwap feature flag is disabled/,
    );
    const loaded = await run([
      '--config',
      writeConfig(`${HEADER}failSwapOn: false\nmemorySwap: {swapBehavior: LimitedSwap}\n`, 'ok.yaml'),
    ]);
    assert.equal(loaded.config.memorySwap.swapBehavior, 'LimitedSwap');
    assert.ok(
      !warnings.some((w) => w.includes('not acted on') && w.includes('memorySwap')),
      warnings.join('\n'),
    );
  });

  test("reservedSystemCPUs: a list that parses, and no reserved cgroups beside it (upstream's words)", async () => {
    const message = await failure([
      '--config',
      writeConfig(`${HEADER}reservedSystemCPUs: "0-x"\nsystemReservedCgroup: /system.slice\n`, 'rs.yaml'),
    ]);
    assert.match(message, /can't use reservedSystemCPUs \(--reserved-cpus\) with systemReservedCgroup/);
    assert.match(message, /unable to parse reservedSystemCPUs \(--reserved-cpus\) 0-x, error: /);
  });

  test("reservedMemory from the file, replaced by --reserved-memory; upstream's validation texts", async () => {
    const file = writeConfig(
      `${HEADER}memoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 0\n  limits: {memory: 1Gi, hugepages-2Mi: 4194304}\n`,
    );
    const { config } = await run(['--config', file]);
    assert.equal(config.memoryManagerPolicy, 'Static');
    assert.deepEqual(config.reservedMemory, [
      { numaNode: 0, limits: { memory: '1Gi', 'hugepages-2Mi': '4194304' } },
    ]);
    const flagged = await run(['--config', file, '--reserved-memory=1:memory=2Gi']);
    assert.deepEqual(flagged.config.reservedMemory, [{ numaNode: 1, limits: { memory: '2Gi' } }]);
    const message = await failure([
      '--config',
      writeConfig(
        `${HEADER}reservedMemory:\n- numaNode: 0\n  limits: {cpu: '1', memory: '0'}\n- numaNode: 0\n  limits: {memory: 1Gi}\n`,
      ),
    ]);
    assert.match(
      message,
      /reservedMemory \(--reserved-memory\): the limit type "cpu" for NUMA node 0 is not supported, only \[memory hugepages-<HugePageSize>\] is accepted/,
    );
    assert.match(message, /reserved memory may not be zero for NUMA node 0 and resource "memory"/);
    assert.match(message, /the reserved memory has a duplicate value for NUMA node 0 and resource "memory"/);
    assert.match(
      await failure(['--config', writeConfig(`${HEADER}reservedMemory: [{numaNode: a}]\n`)]),
      /reservedMemory: \[0\]\.numaNode: expected an integer/,
    );
  });

  test('hairpinMode is not named as not acted on (upstream reads it nowhere); memoryThrottlingFactor only with MemoryQoS', async () => {
    await run([
      '--config',
      writeConfig(
        `${HEADER}hairpinMode: hairpin-veth\nmemoryThrottlingFactor: 0.5\nprotectKernelDefaults: true\nfailCgroupV1: true\n`,
        'h.yaml',
      ),
    ]);
    const unused = warnings.filter((w) => w.includes('not acted on')).join('\n');
    assert.ok(!/hairpinMode|protectKernelDefaults|failCgroupV1/.test(unused), unused);
    assert.ok(!unused.includes('memoryThrottlingFactor'), unused);
    warnings.length = 0;
    await run([
      '--config',
      writeConfig(`${HEADER}featureGates: {MemoryQoS: true}\nmemoryThrottlingFactor: 0.5\n`, 'q.yaml'),
    ]);
    const withGate = warnings.filter((w) => w.includes('not acted on')).join('\n');
    assert.match(withGate, /memoryThrottlingFactor=0.5/);
    assert.match(withGate, /featureGates.MemoryQoS=true/);
  });

  test('enforcing system-reserved or kube-reserved needs the cgroup named, as upstream validates', async () => {
    const message = await failure([
      '--config',
      writeConfig(`${HEADER}enforceNodeAllocatable: [pods, system-reserved, kube-reserved]\n`),
    ]);
    assert.match(
      message,
      /systemReservedCgroup \(--system-reserved-cgroup\): must be specified when "system-reserved"/,
    );
    assert.match(
      message,
      /kubeReservedCgroup \(--kube-reserved-cgroup\): must be specified when "kube-reserved"/,
    );
    const { config } = await run([
      '--config',
      writeConfig(
        `${HEADER}enforceNodeAllocatable: [pods, kube-reserved]\nkubeReservedCgroup: /kube.slice\n`,
      ),
    ]);
    assert.equal(config.kubeReservedCgroup, '/kube.slice');
  });

  test('upstream v1beta1 defaults with an empty config file', async () => {
    const { config } = await run(['--config', writeConfig(HEADER)]);
    assert.equal(config.syncFrequencyMs, 60_000);
    assert.equal(config.fileCheckFrequencyMs, 20_000);
    assert.equal(config.httpCheckFrequencyMs, 20_000);
    assert.equal(config.address, '0.0.0.0');
    assert.equal(config.port, 10250);
    assert.equal(config.readOnlyPort, 0);
    assert.equal(config.healthzPort, 10248);
    assert.equal(config.healthzBindAddress, '127.0.0.1');
    assert.equal(config.podLogsDir, '/var/log/pods');
    assert.equal(config.maxPods, 110);
    assert.equal(config.podPidsLimit, -1);
    assert.equal(config.runtimeRequestTimeoutMs, 120_000);
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/containerd/containerd.sock');
    assert.equal(config.imageServiceEndpoint, 'unix:///run/containerd/containerd.sock');
    assert.equal(config.cgroupDriver, 'cgroupfs');
    assert.equal(config.cgroupsPerQOS, true);
    assert.equal(config.resolvConf, '/etc/resolv.conf');
    assert.equal(config.serializeImagePulls, true);
    assert.equal(config.imageGCHighThresholdPercent, 85);
    assert.equal(config.imageGCLowThresholdPercent, 80);
    assert.equal(config.imageMinimumGCAgeMs, 120_000);
    assert.deepEqual(config.evictionHard, {
      'memory.available': '100Mi',
      'nodefs.available': '10%',
      'nodefs.inodesFree': '5%',
      'imagefs.available': '15%',
    });
    assert.equal(config.nodeStatusUpdateFrequencyMs, 10_000);
    assert.equal(config.nodeStatusReportFrequencyMs, 300_000);
    assert.equal(config.nodeLeaseDurationSeconds, 40);
    assert.equal(config.kubeAPIQPS, 50);
    assert.equal(config.kubeAPIBurst, 100);
    assert.equal(config.registerNode, true);
    assert.equal(config.failSwapOn, true);
    assert.equal(config.hairpinMode, 'promiscuous-bridge');
    assert.equal(config.containerLogMaxSize, '10Mi');
    assert.equal(config.containerLogMaxSizeBytes, 10 * 1024 * 1024);
    assert.equal(config.containerLogMaxFiles, 5);
    assert.equal(config.enableDebuggingHandlers, true);
    assert.equal(config.streamingConnectionIdleTimeoutMs, 4 * 3_600_000);
    assert.equal(config.volumeStatsAggPeriodMs, 60_000);
    assert.equal(config.shutdownGracePeriodMs, 0);
    assert.deepEqual(config.authentication, {
      x509: { clientCAFile: '' },
      webhook: { enabled: true, cacheTTLMs: 120_000 },
      anonymous: { enabled: false },
    });
    assert.deepEqual(config.authorization, {
      mode: 'Webhook',
      webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
    });
  });

  test('without --config, the legacy flag defaults: read-only port open, anonymous auth, AlwaysAllow', async () => {
    // On a cluster node, as upstream; standalone takes safe defaults (safe-defaults.test.ts).
    const { config, configFile } = await run(['--kubeconfig=/nonexistent/kubeconfig']);
    assert.equal(configFile, '');
    assert.equal(config.readOnlyPort, 10255);
    assert.equal(config.authentication.anonymous.enabled, true);
    assert.equal(config.authentication.webhook.enabled, false);
    assert.equal(config.authorization.mode, 'AlwaysAllow');
    assert.equal(config.maxPods, 110);
  });

  test('the file overrides defaults and flags override the file', async () => {
    const file = writeConfig(
      HEADER +
        'staticPodPath: /etc/kubernetes/manifests\nmaxPods: 50\nsyncFrequency: 30s\nclusterDNS: [10.96.0.10]\n' +
        'authentication:\n  anonymous:\n    enabled: true\n',
    );
    const { config } = await run([
      '--config',
      file,
      '--max-pods=20',
      '--anonymous-auth=false',
      '--cluster-dns',
      '10.0.0.2',
    ]);
    assert.equal(config.staticPodPath, '/etc/kubernetes/manifests');
    assert.equal(config.syncFrequencyMs, 30_000);
    assert.equal(config.maxPods, 20);
    assert.equal(config.authentication.anonymous.enabled, false);
    assert.equal(config.authentication.webhook.enabled, true);
    assert.deepEqual(config.clusterDNS, ['10.0.0.2']);
  });

  test('JSON config files are read too', async () => {
    const file = writeConfig(
      JSON.stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        port: 11250,
      }),
      'kubelet.json',
    );
    const { config } = await run(['--config', file]);
    assert.equal(config.port, 11250);
  });

  test('the file is read as YAML 1.1, as upstream reads it: yes/off booleans, octal numbers', async () => {
    const file = writeConfig(`${HEADER}cpuCFSQuota: off\nserializeImagePulls: no\nport: 011250\n`);
    const { config } = await run(['--config', file]);
    assert.equal(config.cpuCFSQuota, false);
    assert.equal(config.serializeImagePulls, false);
    assert.equal(config.port, 0o11250);
  });

  test('relative --config resolves from cwd; relative paths in the file resolve from its folder', async () => {
    writeConfig(
      HEADER +
        'staticPodPath: manifests\ntlsCertFile: pki/kubelet.crt\ntlsPrivateKeyFile: /abs/kubelet.key\n',
    );
    const { config, configFile } = await run(['--config=kubelet.yaml']);
    assert.equal(configFile, join(dir, 'kubelet.yaml'));
    assert.equal(config.staticPodPath, join(dir, 'manifests'));
    assert.equal(config.tlsCertFile, join(dir, 'pki/kubelet.crt'));
    assert.equal(config.tlsPrivateKeyFile, '/abs/kubelet.key');
  });

  test("a drop-in keeps the file's paths it does not name; its own relative paths resolve from its folder", async () => {
    const file = writeConfig(
      HEADER +
        'staticPodPath: manifests\ntlsCertFile: pki/kubelet.crt\ntlsPrivateKeyFile: pki/kubelet.key\n' +
        'resolvConf: /etc/resolv.conf\npodLogsDir: /var/log/pods\nauthentication: { x509: { clientCAFile: ca.crt } }\n',
    );
    mkdirSync(join(dir, 'kubelet.conf.d'));
    writeFileSync(join(dir, 'kubelet.conf.d', '10-runtime.conf'), HEADER + 'maxPods: 20\n');
    writeFileSync(join(dir, 'kubelet.conf.d', '20-tls.conf'), HEADER + 'tlsCertFile: other.crt\n');
    const { config } = await run(['--config', file, '--config-dir', 'kubelet.conf.d']);
    assert.equal(config.maxPods, 20);
    assert.equal(config.staticPodPath, join(dir, 'manifests'));
    assert.equal(config.tlsCertFile, join(dir, 'kubelet.conf.d', 'other.crt'));
    assert.equal(config.tlsPrivateKeyFile, join(dir, 'pki/kubelet.key'));
    assert.equal(config.resolvConf, '/etc/resolv.conf');
    assert.equal(config.podLogsDir, '/var/log/pods');
    assert.equal(config.authentication.x509.clientCAFile, join(dir, 'ca.crt'));
  });

  test('--config-dir drop-ins apply in lexical order over the file; maps merge, lists replace', async () => {
    const file = writeConfig(
      HEADER + 'maxPods: 50\nclusterDNS: [10.0.0.1, 10.0.0.2]\nkubeReserved: { cpu: 100m }\nport: 11000\n',
    );
    mkdirSync(join(dir, 'kubelet.conf.d'));
    writeFileSync(join(dir, 'kubelet.conf.d', '20-late.conf'), HEADER + 'maxPods: 30\n');
    writeFileSync(
      join(dir, 'kubelet.conf.d', '10-early.conf'),
      HEADER + 'maxPods: 20\nclusterDNS: [10.0.0.9]\nkubeReserved: { memory: 1Gi }\n',
    );
    writeFileSync(join(dir, 'kubelet.conf.d', 'ignored.yaml'), 'not even yaml: [');
    const { config } = await run(['--config', file, '--config-dir', 'kubelet.conf.d']);
    assert.equal(config.maxPods, 30);
    assert.deepEqual(config.clusterDNS, ['10.0.0.9']);
    assert.deepEqual(config.kubeReserved, { cpu: '100m', memory: '1Gi' });
    assert.equal(config.port, 11000);
    const withFlag = await run(['--config', file, '--config-dir', 'kubelet.conf.d', '--max-pods=5']);
    assert.equal(withFlag.config.maxPods, 5, 'flags still win');
    writeFileSync(join(dir, 'kubelet.conf.d', '30-bad.conf'), 'kind: KubeletConfiguration\n');
    assert.match(
      await failure(['--config', file, '--config-dir', 'kubelet.conf.d']),
      /30-bad\.conf: expected kind/,
    );
    assert.match(
      await failure(['--config-dir', 'nope']),
      /failed to read drop-in directory .*nope \(--config-dir\)/,
    );
  });

  test("graceful node shutdown settings: by priority, and upstream's rules with their gates", async () => {
    const byPriority = writeConfig(
      HEADER +
        'shutdownGracePeriodByPodPriority:\n' +
        '- {priority: 100000, shutdownGracePeriodSeconds: 10}\n' +
        '- {priority: 0, shutdownGracePeriodSeconds: 20}\n',
    );
    assert.deepEqual((await run(['--config', byPriority])).config.shutdownGracePeriodByPodPriority, [
      { priority: 100000, shutdownGracePeriodSeconds: 10 },
      { priority: 0, shutdownGracePeriodSeconds: 20 },
    ]);
    const both = writeConfig(
      HEADER +
        'shutdownGracePeriod: 30s\nshutdownGracePeriodByPodPriority:\n- {priority: 0, shutdownGracePeriodSeconds: 5}\n',
      'both.yaml',
    );
    assert.match(
      await failure(['--config', both]),
      /shutdownGracePeriodByPodPriority: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time/,
    );
    const gateOff = writeConfig(
      HEADER +
        'featureGates: {GracefulNodeShutdownBasedOnPodPriority: false}\n' +
        'shutdownGracePeriodByPodPriority:\n- {priority: 0, shutdownGracePeriodSeconds: 5}\n',
      'gate-off.yaml',
    );
    assert.match(
      await failure(['--config', gateOff]),
      /Specifying shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority/,
    );
    const noGate = writeConfig(
      HEADER + 'featureGates: {GracefulNodeShutdown: false}\nshutdownGracePeriod: 30s\n',
      'no-gate.yaml',
    );
    assert.match(await failure(['--config', noGate]), /requires feature gate GracefulNodeShutdown/);
    const subSecond = writeConfig(HEADER + 'shutdownGracePeriod: 500ms\n', 'sub.yaml');
    assert.match(
      await failure(['--config', subSecond]),
      /shutdownGracePeriod: must be either zero or otherwise >= 1 sec/,
    );
    const badEntry = writeConfig(
      HEADER + 'shutdownGracePeriodByPodPriority:\n- {priority: high, shutdownGracePeriodSeconds: 5}\n',
      'bad.yaml',
    );
    assert.match(
      await failure(['--config', badEntry]),
      /shutdownGracePeriodByPodPriority\[0\]\.priority: expected an integer/,
    );
  });

  test('an explicit nodeStatusUpdateFrequency also sets the report frequency', async () => {
    const { config } = await run(['--config', writeConfig(HEADER + 'nodeStatusUpdateFrequency: 20s\n')]);
    assert.equal(config.nodeStatusUpdateFrequencyMs, 20_000);
    assert.equal(config.nodeStatusReportFrequencyMs, 20_000);
  });

  test('maxParallelImagePulls > 1 turns serializeImagePulls off by default', async () => {
    const { config } = await run(['--config', writeConfig(HEADER + 'maxParallelImagePulls: 3\n')]);
    assert.equal(config.serializeImagePulls, false);
    assert.equal(config.maxParallelImagePulls, 3);
    const msg = await failure([
      '--config',
      writeConfig(HEADER + 'maxParallelImagePulls: 3\nserializeImagePulls: true\n'),
    ]);
    assert.match(
      msg,
      /KubeletConfiguration\.maxParallelImagePulls: must not be greater than 1 unless serializeImagePulls is false/,
    );
  });

  test('imageServiceEndpoint follows containerRuntimeEndpoint unless set', async () => {
    const a = await run(['--container-runtime-endpoint=unix:///tmp/c.sock']);
    assert.equal(a.config.imageServiceEndpoint, 'unix:///tmp/c.sock');
    const b = await run([
      '--container-runtime-endpoint=unix:///tmp/c.sock',
      '--image-service-endpoint=unix:///tmp/i.sock',
    ]);
    assert.equal(b.config.imageServiceEndpoint, 'unix:///tmp/i.sock');
  });

  test('node name: --hostname-override or the hostname, lower-cased', async () => {
    assert.equal((await run([])).nodeName, 'node-1.example.com');
    assert.equal((await run(['--hostname-override', ' Worker-7 '])).nodeName, 'worker-7');
    assert.match(
      await failure(['--hostname-override=bad_name']),
      /invalid node name "bad_name" \(from --hostname-override\)/,
    );
  });

  test('-v and the file’s logging.verbosity', async () => {
    assert.equal((await run(['-v', '4'])).config.logging.verbosity, 4);
    const file = writeConfig(HEADER + 'logging:\n  verbosity: 2\n');
    assert.equal((await run(['--config', file])).config.logging.verbosity, 2);
    assert.equal((await run(['--config', file, '--v=5'])).config.logging.verbosity, 5);
  });

  test('an invalid value names the flag and the field', async () => {
    assert.equal(
      await failure(['--max-pods=-1']),
      'invalid configuration: KubeletConfiguration.maxPods (--max-pods): must be >= 0, got -1',
    );
    assert.match(
      await failure(['--port=70000']),
      /KubeletConfiguration\.port \(--port\): must be between 1 and 65535, got 70000/,
    );
    assert.match(
      await failure(['--cgroup-driver=docker']),
      /KubeletConfiguration\.cgroupDriver \(--cgroup-driver\): must be one of "cgroupfs", "systemd"/,
    );
    assert.match(
      await failure([
        '--config',
        writeConfig(`${HEADER}configMapAndSecretChangeDetectionStrategy: Poll\n`, 'strategy.yaml'),
      ]),
      /configMapAndSecretChangeDetectionStrategy: must be one of "Get", "Cache", "Watch", got "Poll"/,
    );
    assert.match(
      await failure(['--cluster-dns=not-an-ip']),
      /KubeletConfiguration\.clusterDNS\[0\] \(--cluster-dns\): must be an IP address, got "not-an-ip"/,
    );
    assert.match(
      await failure(['--container-log-max-files=1']),
      /containerLogMaxFiles \(--container-log-max-files\): must be >= 2/,
    );
    assert.match(
      await failure(['--image-gc-low-threshold=90']),
      /imageGCLowThresholdPercent \(--image-gc-low-threshold\): \(90\) must be <= imageGCHighThresholdPercent \(85\)/,
    );
    assert.match(
      await failure(['--manifest-url=ftp://x/pods']),
      /staticPodURL \(--manifest-url\): must be an http or https URL/,
    );
    assert.match(
      await failure(['--eviction-hard=memory.free<1Gi']),
      /KubeletConfiguration\.evictionHard\.memory\.free \(--eviction-hard\): must be one of "memory\.available"/,
    );
    assert.match(
      await failure(['--container-runtime-endpoint=/run/containerd.sock']),
      /containerRuntimeEndpoint \(--container-runtime-endpoint\): must be a unix:\/\/ or tcp:\/\/ URL/,
    );
  });

  test('several invalid fields are reported together', async () => {
    const msg = await failure(['--max-pods=-1', '--healthz-port=-5']);
    assert.match(msg, /maxPods/);
    assert.match(msg, /healthzPort/);
  });

  test('an invalid file value names the field', async () => {
    const a = await failure(['--config', writeConfig(HEADER + 'syncFrequency: 10\n')]);
    assert.match(
      a,
      /KubeletConfiguration\.syncFrequency: expected a duration string such as "1m30s", got 10/,
    );
    assert.match(a, /kubelet\.yaml/);
    const b = await failure(['--config', writeConfig(HEADER + 'syncFrequency: soon\n')]);
    assert.match(b, /KubeletConfiguration\.syncFrequency: time: invalid duration "soon"/);
    const c = await failure(['--config', writeConfig(HEADER + 'maxPods: many\n')]);
    assert.match(c, /KubeletConfiguration\.maxPods: expected an integer, got "many"/);
    const d = await failure([
      '--config',
      writeConfig(HEADER + 'authentication:\n  anonymous:\n    enabled: "yes"\n'),
    ]);
    assert.match(d, /KubeletConfiguration\.authentication\.anonymous\.enabled: expected true or false/);
    const e = await failure(['--config', writeConfig(HEADER + 'maxPods: -3\n')]);
    assert.match(e, /KubeletConfiguration\.maxPods \(--max-pods\): must be >= 0, got -3/);
  });

  test('the file must be a v1beta1 KubeletConfiguration', async () => {
    assert.match(
      await failure(['--config', writeConfig('kind: KubeletConfiguration\n')]),
      /expected kind "KubeletConfiguration" and apiVersion "kubelet.config.k8s.io\/v1beta1"/,
    );
    assert.match(
      await failure([
        '--config',
        writeConfig('apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n'),
      ]),
      /got kind "KubeletConfiguration" and apiVersion "kubelet.config.k8s.io\/v1"/,
    );
    assert.match(await failure(['--config', writeConfig('')]), /the file is empty/);
    assert.match(
      await failure(['--config', writeConfig(HEADER + 'maxPods: [\n')]),
      /failed to load Kubelet config file/,
    );
    assert.match(
      await failure(['--config', writeConfig(HEADER + 'maxPods: 1\nmaxPods: 2\n')]),
      /failed to load Kubelet config file .*kubelet\.yaml: Map keys must be unique/,
    );
    assert.match(
      await failure(['--config', join(dir, 'missing.yaml')]),
      /failed to load Kubelet config file .*missing\.yaml: .*ENOENT/,
    );
  });

  test('unknown fields are warned about by name, not fatal', async () => {
    const { warnings: returned } = await run([
      '--config',
      writeConfig(HEADER + 'maxPodz: 3\nauthentication:\n  anonymus: {}\n'),
    ]);
    // The other warning is the default makeIPTablesUtilChains=true, named as not acted on.
    assert.equal(returned.filter((w) => !w.includes('parsed but not acted on')).length, 2);
    assert.ok(warnings.some((w) => w.includes('"maxPodz"')));
    assert.ok(warnings.some((w) => w.includes('"authentication.anonymus"')));
  });

  test('restricted node labels are refused, allowed ones pass', async () => {
    const ok = await run([
      '--node-labels=node.kubernetes.io/role=edge,example.com/tier=1,kubernetes.io/arch=amd64',
    ]);
    assert.deepEqual(ok.flags.nodeLabels, {
      'node.kubernetes.io/role': 'edge',
      'example.com/tier': '1',
      'kubernetes.io/arch': 'amd64',
    });
    assert.match(
      await failure(['--node-labels=kubernetes.io/role=master']),
      /unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: \[kubernetes.io\/role\]/,
    );
    assert.match(await failure(['--node-labels=bad key=1']), /invalid node labels \(--node-labels\)/);
  });

  test('--help and --version do not read the config file', async () => {
    const help = await loadKubeletConfig(['--config', join(dir, 'missing.yaml'), '--help'], options);
    assert.equal(help.action, 'help');
    assert.match((help as { text: string }).text, /Usage:/);
    const version = await loadKubeletConfig(['--version'], options);
    assert.deepEqual(version, { action: 'version', text: 'Kubernetes v1.30.0+tskubelet.0.1.0\n' });
    const raw = await loadKubeletConfig(['--version=raw'], options);
    assert.equal(JSON.parse((raw as { text: string }).text).gitVersion, KUBELET_VERSION);
  });

  test('deprecated config flags are logged', async () => {
    await run(['--max-pods=3']);
    assert.ok(warnings.some((w) => w.startsWith('Flag --max-pods has been deprecated')));
  });
});

describe('version', () => {
  test('matches package.json', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    assert.equal(TSKUBELET_VERSION, pkg.version);
    assert.equal(versionText(), `Kubernetes v1.30.0+tskubelet.${pkg.version}`);
  });
});
