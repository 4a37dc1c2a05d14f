import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';

import {
  buildBootstrap,
  buildKubelet,
  type BuildOptions,
  type ConnectedRuntime,
  type RunConfig,
} from '../../../src/cmd/build-kubelet.js';
import { loadKubeletConfig } from '../../../src/cmd/load-kubelet-config.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { ComponentRunner } from '../../../src/lib/component-runner.js';
import type { Logger } from '../../../src/lib/log.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { freePort } from '../../helpers/ports.js';

const NODE = 'node-1';
const quiet: Logger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  v: () => undefined,
  enabled: () => false,
};

describe('buildBootstrap and buildKubelet', () => {
  let dir: string;
  let fake: FakeRuntime;
  let options: BuildOptions;
  let apiServer: TestApiServer;
  let kubeconfig: string;

  before(async () => {
    apiServer = await startTestApiServer({ nodeName: NODE });
  });
  after(() => apiServer.stop());

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'build-kubelet-'));
    mkdirSync(join(dir, 'manifests'));
    kubeconfig = join(dir, 'kubelet.kubeconfig');
    await apiServer.writeKubeconfig(kubeconfig, apiServer.nodeUser);
    writeFileSync(
      join(dir, 'config.yaml'),
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n' +
        `podLogsDir: ${join(dir, 'pods-logs')}\ncgroupsPerQOS: false\nenforceNodeAllocatable: []\n`,
    );
    fake = new FakeRuntime();
    const connection: ConnectedRuntime = {
      runtime: fake,
      images: fake,
      version: {
        version: '0.1.0',
        runtimeName: 'containerd',
        runtimeVersion: 'v1.6',
        runtimeApiVersion: 'v1',
      },
      close: () => undefined,
    };
    options = {
      connectRuntime: async () => connection,
      legacyContainerLogsDir: join(dir, 'containers'),
      makeRootDirShared: false,
    };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function load(...flags: string[]): Promise<RunConfig> {
    const loaded = await loadKubeletConfig(
      [`--config=${join(dir, 'config.yaml')}`, `--root-dir=${join(dir, 'root')}`, ...flags],
      { hostname: () => NODE, cwd: dir, log: quiet },
    );
    assert.equal(loaded.action, 'run');
    return loaded as RunConfig;
  }

  /** The component names in start order: the bootstrap's, then the rest (after a start of the bootstrap). */
  async function names(cfg: RunConfig): Promise<string[]> {
    const boot = await buildBootstrap(cfg, options);
    const runner = new ComponentRunner();
    // Only the runtime must run for buildKubelet: it reads the runtime's name.
    await runner.startAll(boot.components.filter((c) => c.name === 'runtime'));
    const graph = await buildKubelet(cfg, boot, new AbortController().signal, options);
    await runner.stop(1000);
    await boot.cluster?.close();
    return [...boot.components, ...graph.components].map((c) => c.name);
  }

  test('standalone, with the defaults: no API clients, the manifest folder, /healthz and the kubelet API', async () => {
    assert.deepEqual(await names(await load(`--pod-manifest-path=${join(dir, 'manifests')}`)), [
      'nodepagesocket',
      'healthz',
      'runtime',
      'containermanager',
      'volumemanager',
      'devicemanager',
      'memorymanager',
      'podresources',
      'pluginmanager',
      'prober',
      'podworkers',
      'pleg',
      'syncloop',
      'fsresourceanalyzer',
      'imagegcmanager',
      'pullprogress',
      'evictionmanager',
      'containerlogmanager',
      'podconfig',
      'heaptrim',
      'nodepage',
      'filesource',
      'kubeletserver',
    ]);
  });

  test('each optional part is there only when configured', async () => {
    const none = await names(await load('--healthz-port=0', '--enable-server=false'));
    assert.deepEqual(none, [
      'nodepagesocket',
      'runtime',
      'containermanager',
      'volumemanager',
      'devicemanager',
      'memorymanager',
      'podresources',
      'pluginmanager',
      'prober',
      'podworkers',
      'pleg',
      'syncloop',
      'fsresourceanalyzer',
      'imagegcmanager',
      'pullprogress',
      'evictionmanager',
      'containerlogmanager',
      'podconfig',
      'heaptrim',
      'nodepage',
    ]);
    const all = await names(
      await load(
        `--pod-manifest-path=${join(dir, 'manifests')}`,
        '--manifest-url=http://127.0.0.1:1/pods',
        '--read-only-port=10255',
      ),
    );
    for (const name of ['filesource', 'httpsource', 'readonlyserver', 'healthz', 'kubeletserver'])
      assert.ok(all.includes(name), `${name} missing from ${all.join(',')}`);
    assert.deepEqual(all.slice(-4), ['filesource', 'httpsource', 'kubeletserver', 'readonlyserver']);
  });

  test('cluster mode adds the API clients, events, status manager, RuntimeClass manager, node and services informers, node status, Lease and API source', async () => {
    assert.deepEqual(await names(await load(`--kubeconfig=${kubeconfig}`)), [
      'apiclients',
      'events',
      'nodepagesocket',
      'healthz',
      'runtime',
      'containermanager',
      'volumemanager',
      'devicemanager',
      'memorymanager',
      'podresources',
      'pluginmanager',
      'statusmanager',
      'runtimeclassmanager',
      'nodeinformer',
      'serviceinformer',
      'nodestatus',
      'nodelease',
      'oomwatcher',
      'prober',
      'podworkers',
      'pleg',
      'syncloop',
      'fsresourceanalyzer',
      'imagegcmanager',
      'pullprogress',
      'evictionmanager',
      'containerlogmanager',
      'podconfig',
      'heaptrim',
      'nodepage',
      'apisource',
      'kubeletserver',
    ]);
  });

  test("docs/architecture.md's component table has every component, in start order", async () => {
    const documented = documentedComponents();
    for (const cfg of [
      await load(
        `--pod-manifest-path=${join(dir, 'manifests')}`,
        '--manifest-url=http://127.0.0.1:1/pods',
        '--read-only-port=10255',
      ),
      await load(`--kubeconfig=${kubeconfig}`),
    ]) {
      const actual = await names(cfg);
      assert.deepEqual(
        actual.filter((n) => !documented.includes(n)),
        [],
        'components missing from the table',
      );
      const positions = actual.map((n) => documented.indexOf(n));
      assert.deepEqual(
        positions,
        [...positions].sort((a, b) => a - b),
        `started as ${actual.join(', ')}`,
      );
    }
  });

  for (const mode of ['standalone', 'cluster'] as const) {
    test(`${mode}: runs, lists every component on /healthz?verbose, and stops all of them in order`, async () => {
      const healthzPort = await freePort();
      const cfg = await load(
        `--pod-manifest-path=${join(dir, 'manifests')}`,
        `--healthz-port=${healthzPort}`,
        '--enable-server=false',
        ...(mode === 'cluster' ? [`--kubeconfig=${kubeconfig}`] : []),
      );
      const runner = new ComponentRunner();
      const opts = { ...options, componentStatuses: () => runner.statuses() };
      const boot = await buildBootstrap(cfg, opts);
      assert.equal(await runner.startAll(boot.components), true);
      const graph = await buildKubelet(cfg, boot, new AbortController().signal, opts);
      assert.equal(await runner.startAll(graph.components), true);

      const res = await fetch(`http://127.0.0.1:${healthzPort}/healthz?verbose`);
      const body = await res.text();
      for (const check of ['[+]ping ok', '[+]log ok', '[+]syncloop ok'])
        assert.ok(body.includes(check), `${check} missing:\n${body}`);
      for (const c of graph.components)
        assert.ok(body.includes(`component ${c.name}: RUNNING`), `${c.name} missing:\n${body}`);
      assert.equal(await fetch(`http://127.0.0.1:${healthzPort}/healthz`).then((r) => r.text()), 'ok');
      if (mode === 'cluster') {
        // The node status component registers the node.
        const registered = () => apiServer.store.list('nodes').items.some((n) => n.metadata.name === NODE);
        for (let i = 0; i < 50 && !registered(); i++) await new Promise((r) => setTimeout(r, 100));
        assert.ok(registered(), 'the node was not registered');
      }

      const report = await runner.stop(5000);
      assert.deepEqual(report.leftBehind, []);
      assert.deepEqual(
        runner
          .statuses()
          .filter((s) => s.state !== 'STOPPED')
          .map((s) => `${s.name} ${s.state}`),
        [],
      );
      await assert.rejects(fetch(`http://127.0.0.1:${healthzPort}/healthz`));
    });
  }
});

/** The names in docs/architecture.md's "Start and stop" table (rows `| <n> | \`name\`, … |`), in its order. */
function documentedComponents(): string[] {
  const doc = readFileSync(new URL('../../../docs/architecture.md', import.meta.url), 'utf8');
  const names: string[] = [];
  for (const line of doc.split('\n')) {
    const cell = /^\| \d+[a-z]? \| ([^|]+) \|/.exec(line)?.[1];
    for (const m of cell?.matchAll(/`([a-z]+)`/g) ?? []) names.push(m[1]!);
  }
  return names;
}
