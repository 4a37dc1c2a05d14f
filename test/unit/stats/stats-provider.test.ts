import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { realCgroupFs } from '../../../src/cm/cgroup-fs.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import type { ContainerStats as CriContainerStats, PodSandboxConfig } from '../../../src/cri/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { CgroupStatsReader } from '../../../src/stats/cgroup-stats.js';
import { CpuUsageCache } from '../../../src/stats/cpu-usage-cache.js';
import { diskUsage } from '../../../src/stats/fs-info.js';
import { FsResourceAnalyzer, isLocalEphemeralVolume } from '../../../src/stats/fs-resource-analyzer.js';
import { StatsProvider } from '../../../src/stats/stats-provider.js';
import { summaryJson } from '../../../src/stats/summary-types.js';

const MiB = 1024 * 1024;

function sandboxConfig(name: string, uid: string): PodSandboxConfig {
  return {
    metadata: { name, namespace: 'ns', uid, attempt: 0 },
    hostname: name,
    logDirectory: '',
    labels: {
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': 'ns',
      'io.kubernetes.pod.uid': uid,
    },
    annotations: {},
  } as unknown as PodSandboxConfig;
}

describe('StatsProvider', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'stats-test-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A provider over the fake runtime and these pods, with a volume analyzer under dir. */
  function providerOver(clock: FakeClock, fake: FakeRuntime, pods: Pod[]) {
    const analyzer = new FsResourceAnalyzer({
      rootDir: path.join(dir, 'root'),
      clock,
      periodMs: 60_000,
      pods: () => pods,
    });
    const provider = new StatsProvider({
      runtime: fake,
      images: fake,
      clock,
      nodeName: 'n1',
      rootDir: dir,
      podLogsDir: path.join(dir, 'logs'),
      runtimeRequestTimeoutMs: 1000,
      pods: () => pods,
      fsResourceAnalyzer: analyzer,
    });
    return { provider, analyzer };
  }

  async function setUp() {
    const clock = new FakeClock();
    const fake = new FakeRuntime(clock);
    fake.addImage('busybox', { size: 5 * MiB });
    const uid = 'uid-1';
    const sb = await fake.runPodSandbox(sandboxConfig('web', uid), '');
    const config = {
      metadata: { name: 'app', attempt: 0 },
      image: { image: 'busybox' },
      labels: {},
      annotations: {},
    } as never;
    const old = await fake.createContainer(sb, config, sandboxConfig('web', uid));
    const live = await fake.createContainer(
      sb,
      { ...(config as object), metadata: { name: 'app', attempt: 1 } } as never,
      sandboxConfig('web', uid),
    );
    await fake.startContainer(live);
    let cpuNs = 1e9;
    fake.listContainerStats = async () =>
      [...fake.containers.values()].map((c): CriContainerStats => ({
        attributes: { id: c.id, metadata: c.config.metadata, labels: {}, annotations: {} },
        cpu: { timestamp: clock.now() * 1e6, usageCoreNanoSeconds: { value: cpuNs } },
        memory: {
          timestamp: clock.now() * 1e6,
          workingSetBytes: { value: 3 * MiB },
          usageBytes: { value: 4 * MiB },
        },
        writableLayer: { timestamp: clock.now() * 1e6, usedBytes: { value: 8192 }, inodesUsed: { value: 2 } },
      }));
    const pod: Pod = {
      metadata: { name: 'web', namespace: 'ns', uid },
      spec: { containers: [{ name: 'app', image: 'busybox' }], volumes: [{ name: 'scratch', emptyDir: {} }] },
    };
    const logDir = path.join(dir, 'logs', `ns_web_${uid}`, 'app');
    await mkdir(logDir, { recursive: true });
    await writeFile(path.join(logDir, '1.log'), Buffer.alloc(64 * 1024, 'x'));
    const volDir = path.join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    await mkdir(volDir, { recursive: true });
    await writeFile(path.join(volDir, 'data'), Buffer.alloc(128 * 1024, 'y'));
    const { provider, analyzer } = providerOver(clock, fake, [pod]);
    return { clock, provider, analyzer, old, live, bump: (ns: number) => (cpuNs += ns) };
  }

  test('one entry per pod, the running attempt of each container, sums without a pod cgroup', async () => {
    const { provider, analyzer, clock, bump } = await setUp();
    await analyzer.refresh();
    const first = await provider.getSummary();
    assert.equal(first.node.nodeName, 'n1');
    assert.equal(first.pods.length, 1);
    const pod = first.pods[0]!;
    assert.deepEqual(pod.podRef, { name: 'web', namespace: 'ns', uid: 'uid-1' });
    assert.equal(pod.containers.length, 1, 'the exited attempt is left out while one runs');
    const c = pod.containers[0]!;
    assert.equal(c.memory?.workingSetBytes, 3 * MiB);
    assert.equal(pod.memory?.workingSetBytes, 3 * MiB);
    assert.equal(c.cpu?.usageNanoCores, undefined, 'no rate before a second reading');
    assert.ok((c.logs?.usedBytes ?? 0) >= 64 * 1024);
    assert.equal(pod.volume?.[0]?.name, 'scratch');
    assert.ok((pod.volume?.[0]?.usedBytes ?? 0) >= 128 * 1024);
    // rootfs + logs + the emptyDir
    const eph = pod['ephemeral-storage']!;
    assert.equal(eph.usedBytes, 8192 + (c.logs?.usedBytes ?? 0) + (pod.volume?.[0]?.usedBytes ?? 0));
    assert.ok(first.node.fs?.capacityBytes);
    assert.equal(first.node.runtime?.imageFs?.usedBytes, 5 * MiB);

    clock.advance(10_000);
    bump(5e9); // half a core over 10 s
    const second = await provider.getCPUAndMemorySummary();
    assert.equal(second.pods[0]!.containers[0]!.cpu?.usageNanoCores, 5e8);
    assert.equal(second.pods[0]!.containers[0]!.logs, undefined, 'cpu and memory only');
    assert.equal(second.node.fs, undefined);
  });

  test('a pass over many new pods under one signal raises no listener-leak warning, and leaves the check on', async () => {
    const clock = new FakeClock();
    const fake = new FakeRuntime(clock);
    fake.addImage('busybox', { size: MiB });
    const pods: Pod[] = [];
    for (let i = 0; i < 12; i++) {
      const uid = `uid-${i}`;
      const sb = await fake.runPodSandbox(sandboxConfig(`p${i}`, uid), '');
      const config = {
        metadata: { name: 'app', attempt: 0 },
        image: { image: 'busybox' },
        labels: {},
        annotations: {},
      };
      await fake.startContainer(await fake.createContainer(sb, config as never, sandboxConfig(`p${i}`, uid)));
      pods.push({
        metadata: { name: `p${i}`, namespace: 'ns', uid },
        spec: { containers: [{ name: 'app', image: 'busybox' }] },
      });
    }
    // As the real CRI client does: each call listens on the signal it is given until it is answered.
    const podSandboxStatus = fake.podSandboxStatus.bind(fake);
    let listening = 0;
    fake.podSandboxStatus = async (id, verbose, opts) => {
      const onAbort = (): void => undefined;
      opts?.signal?.addEventListener('abort', onAbort);
      listening++;
      await new Promise((resolve) => setImmediate(resolve));
      opts?.signal?.removeEventListener('abort', onAbort);
      return podSandboxStatus(id, verbose, opts);
    };
    const { provider } = providerOver(clock, fake, pods);
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    const callers = new AbortController();
    process.on('warning', onWarning);
    try {
      const summary = await provider.getSummary(callers.signal);
      assert.equal(summary.pods.length, 12);
      // Node emits its warnings on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(warnings.length, 0, 'no warning from the pass');
      // The caller's own signal (the eviction manager's lives as long as the kubelet) keeps Node's
      // check for a real leak.
      for (let i = 0; i < 11; i++) callers.signal.addEventListener('abort', () => undefined);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.equal(listening, 12, 'every new sandbox was read under the signal');
    assert.deepEqual(
      warnings.map((w) => w.name),
      ['MaxListenersExceededWarning'],
      "only the caller's eleven listeners of its own were warned of",
    );
  });

  test('JSON times are metav1.Time: RFC 3339, whole seconds', async () => {
    const { provider } = await setUp();
    const json = JSON.parse(summaryJson(await provider.getCPUAndMemorySummary())) as {
      pods: { startTime: string; containers: { cpu: { time: string } }[] }[];
    };
    assert.match(json.pods[0]!.startTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(json.pods[0]!.containers[0]!.cpu.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});

describe('CgroupStatsReader', () => {
  test('v1: working set is usage minus total_inactive_file; cpu from cpuacct.usage', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'cg-v1-'));
    try {
      for (const m of ['memory', 'cpuacct', 'pids'])
        await mkdir(path.join(root, m, 'kubepods', 'podx'), { recursive: true });
      const pod = (m: string, f: string) => path.join(root, m, 'kubepods', 'podx', f);
      await writeFile(pod('memory', 'memory.usage_in_bytes'), '1000000\n');
      await writeFile(
        pod('memory', 'memory.stat'),
        'cache 5\ntotal_inactive_file 400000\ntotal_rss 300000\ntotal_pgfault 7\ntotal_pgmajfault 1\n',
      );
      await writeFile(pod('cpuacct', 'cpuacct.usage'), '123456789\n');
      await writeFile(pod('pids', 'pids.current'), '4\n');
      const reader = new CgroupStatsReader(realCgroupFs(), {
        version: 'v1',
        root,
        hierarchies: ['memory', 'cpuacct', 'pids'].map((m) => ({
          mountPoint: path.join(root, m),
          subsystems: [m],
        })),
      });
      const s = await reader.read('/kubepods/podx', 5);
      assert.deepEqual(s, {
        timeMs: 5,
        cpuUsageNanoSeconds: 123456789,
        memoryUsageBytes: 1000000,
        memoryWorkingSetBytes: 600000,
        memoryRssBytes: 300000,
        pageFaults: 7,
        majorPageFaults: 1,
        pids: 4,
      });
      assert.equal(await reader.read('/kubepods/gone', 5), undefined);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test('v2: memory.current minus inactive_file; cpu.stat usage_usec in ns', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'cg-v2-'));
    try {
      const d = path.join(root, 'kubepods', 'podx');
      await mkdir(d, { recursive: true });
      await writeFile(path.join(d, 'memory.current'), '2000\n');
      await writeFile(path.join(d, 'memory.stat'), 'anon 1500\ninactive_file 500\npgfault 3\npgmajfault 0\n');
      await writeFile(path.join(d, 'cpu.stat'), 'usage_usec 42\nuser_usec 40\n');
      const reader = new CgroupStatsReader(realCgroupFs(), {
        version: 'v2',
        root,
        controllers: ['memory', 'cpu'],
      });
      const s = await reader.read('/kubepods/podx', 1);
      assert.equal(s?.memoryWorkingSetBytes, 1500);
      assert.equal(s?.cpuUsageNanoSeconds, 42_000);
      assert.equal(s?.memoryRssBytes, 1500);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('helpers', () => {
  test('CpuUsageCache gives nanocores between two readings and forgets the gone', () => {
    const c = new CpuUsageCache();
    assert.equal(c.update('a', 1000, 0), undefined);
    assert.equal(c.update('a', 3000, 1e9), 5e8);
    c.retain(new Set());
    assert.equal(c.update('a', 4000, 2e9), undefined);
  });

  test('isLocalEphemeralVolume follows upstream: disk emptyDir, configMap, downwardAPI, gitRepo', () => {
    assert.equal(isLocalEphemeralVolume({ name: 'a', emptyDir: {} }), true);
    assert.equal(isLocalEphemeralVolume({ name: 'a', emptyDir: { medium: 'Memory' } }), false);
    assert.equal(isLocalEphemeralVolume({ name: 'a', configMap: { name: 'x' } }), true);
    assert.equal(isLocalEphemeralVolume({ name: 'a', secret: { secretName: 'x' } }), false);
    assert.equal(isLocalEphemeralVolume({ name: 'a', hostPath: { path: '/' } }), false);
  });

  test('diskUsage counts allocated blocks and inodes, a hard link once', async () => {
    const d = await mkdtemp(path.join(tmpdir(), 'du-'));
    try {
      await writeFile(path.join(d, 'a'), Buffer.alloc(10_000, 'a'));
      const { link } = await import('node:fs/promises');
      await link(path.join(d, 'a'), path.join(d, 'b'));
      const u = await diskUsage(d);
      assert.equal(u.inodesUsed, 2);
      assert.ok(u.usedBytes >= 12_288);
      assert.deepEqual(await diskUsage(path.join(d, 'missing')), { usedBytes: 0, inodesUsed: 0 });
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});
