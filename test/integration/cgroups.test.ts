/**
 * The container manager against the machine's real cgroups and the project's private containerd
 * (scripts/runtime-stack.sh up): the QoS tiers and a pod cgroup with limits, read back from the
 * kernel's files, a real sandbox and container made inside that pod cgroup, and everything removed
 * afterwards. All of it lives under a cgroupRoot of its own, /tskubelet-test-<pid>, so nothing of
 * the machine's cgroups is touched; after() removes that root whatever happened. (On a cgroup v2
 * machine, a controller the root does not hand down yet is enabled there, as the kubelet does.)
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { CgroupManager } from '../../src/cm/cgroup-manager.js';
import { realCgroupFs } from '../../src/cm/cgroup-fs.js';
import { parseCgroupfsToCgroupName } from '../../src/cm/cgroup-name.js';
import {
  detectCgroupSubsystems,
  v1MountPoints,
  type CgroupSubsystems,
} from '../../src/cm/cgroup-subsystems.js';
import { createContainerManager, type ContainerManager } from '../../src/cm/container-manager.js';
import { detectSwapSettings } from '../../src/cm/swap.js';
import { connectRuntime, type RuntimeConnection } from '../../src/cri/connect-runtime.js';
import type { ContainerConfig, PodSandboxConfig } from '../../src/cri/types.js';
import { generateLinuxContainerResources } from '../../src/kuberuntime/container-resources.js';
import { waitFor } from '../helpers/wait.js';

const endpoint = process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock';
const BUSYBOX = 'docker.io/library/busybox:latest';
const CALL_TIMEOUT_MS = 60_000;
const MiB = 1024 * 1024;
/** The kernel rounds memory limits down to its page size (4 KiB, or up to 64 KiB on some arm64 kernels). */
const MAX_PAGE_BYTES = 64 * 1024;
const TEST_ROOT = `/tskubelet-test-${process.pid}`;
const NAMESPACE = 'tskubelet-cgroups-test';

/** Why this machine cannot run the test, or undefined when it can. */
async function cannotRun(): Promise<string | undefined> {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'needs root to make cgroups';
  const fs = realCgroupFs();
  const mounted =
    (await fs.exists('/sys/fs/cgroup/cgroup.procs')) || (await fs.exists('/sys/fs/cgroup/cpu/cgroup.procs'));
  if (!mounted) return 'no cgroup file system at /sys/fs/cgroup';
  return undefined;
}

const skipReason = await cannotRun();

/** The machine's memory as the kernel stored it: at most a page less. */
function assertAbout(text: string, bytes: number): void {
  const v = Number(text);
  assert.ok(v <= bytes && v > bytes - MAX_PAGE_BYTES, `${text} is not ${bytes} rounded to a page`);
}

describe('cgroups on this machine, with a sandbox from containerd', { skip: skipReason }, () => {
  const fs = realCgroupFs();
  let subsystems: CgroupSubsystems;
  /** Where each controller's files are: the v1 mount, or the v2 root. */
  let dirOf: (controller: string) => string;
  let rootManager: CgroupManager;
  let cm: ContainerManager;
  let connection: RuntimeConnection | undefined;
  let logDir: string;
  const active: Pod[] = [];
  const sandboxIds: string[] = [];

  const uid = randomUUID();
  const pod: Pod = {
    metadata: { name: `cgroups-${uid.slice(0, 8)}`, namespace: NAMESPACE, uid },
    spec: {
      containers: [
        {
          name: 'sleeper',
          image: BUSYBOX,
          resources: { requests: { cpu: '250m', memory: '32Mi' }, limits: { cpu: '500m', memory: '64Mi' } },
        },
      ],
    },
  };
  const podDir = `${TEST_ROOT}/kubepods/burstable/pod${uid}`;

  async function read(controller: string, relative: string): Promise<string> {
    return (await readFile(path.join(dirOf(controller), relative), 'utf8')).trim();
  }

  before(async () => {
    subsystems = await detectCgroupSubsystems(fs);
    const mounts = v1MountPoints(subsystems);
    dirOf = (c) =>
      subsystems.version === 'v2' ? subsystems.root : (mounts.get(c) ?? assert.fail(`no ${c} mount`));
    // The test's cgroupRoot, made as an administrator would before starting the kubelet with it.
    rootManager = new CgroupManager({ subsystems, driver: 'cgroupfs', fs });
    await rootManager.create(parseCgroupfsToCgroupName(TEST_ROOT));
    cm = await createContainerManager({
      config: {
        cgroupDriver: 'cgroupfs',
        cgroupRoot: TEST_ROOT,
        cgroupsPerQOS: true,
        cpuCFSQuota: true,
        cpuCFSQuotaPeriodMs: 100,
        podPidsLimit: 100,
        enforceNodeAllocatable: ['pods'],
        systemReserved: { cpu: '100m' },
        kubeReserved: {},
        failSwapOn: false,
        systemReservedCgroup: '',
        kubeReservedCgroup: '',
      },
      fs,
    });
    logDir = await mkdtemp(path.join(os.tmpdir(), 'cgroups-it-logs-'));
  });

  after(async () => {
    cm?.stop();
    if (connection) {
      for (const id of sandboxIds) {
        await connection.runtime.stopPodSandbox(id, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
        await connection.runtime.removePodSandbox(id, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
      }
      connection.close();
    }
    if (rootManager) {
      const root = parseCgroupfsToCgroupName(TEST_ROOT);
      // The runtime removes its container cgroups as the tasks go; wait for that before removing ours.
      const left = await waitFor(
        `${TEST_ROOT} to be removed`,
        async () => ((await rootManager.destroy(root)).removed ? true : undefined),
        15_000,
        200,
      ).catch((err: unknown) => err);
      assert.equal(left, true, `cgroups left under ${TEST_ROOT}: ${String(left)}`);
      assert.equal(await rootManager.existsAnywhere(root), false);
    }
    if (logDir) await rm(logDir, { recursive: true, force: true });
  });

  test('start makes kubepods and the QoS tiers with their limits', async () => {
    await cm.start(() => active);
    const status = cm.status();
    assert.equal(status.nodeAllocatableCgroup, `${TEST_ROOT}/kubepods`);
    assert.ok(
      status.controllers.filter((c) => c.state !== 'ok').every((c) => c.name === 'hugetlb'),
      JSON.stringify(status.controllers),
    );
    const cpuMilli = os.cpus().length * 1000 - 100;
    if (subsystems.version === 'v1') {
      assert.equal(
        await read('cpu', `${TEST_ROOT}/kubepods/cpu.shares`),
        String(Math.floor((cpuMilli * 1024) / 1000)),
      );
      assertAbout(await read('memory', `${TEST_ROOT}/kubepods/memory.limit_in_bytes`), os.totalmem());
      assert.equal(await read('cpu', `${TEST_ROOT}/kubepods/besteffort/cpu.shares`), '2');
      assert.equal(await read('cpu', `${TEST_ROOT}/kubepods/burstable/cpu.shares`), '2');
      // cpuset: the new levels took the CPUs of the machine's root.
      assert.equal(
        await read('cpuset', `${TEST_ROOT}/kubepods/burstable/cpuset.cpus`),
        await read('cpuset', 'cpuset.cpus'),
      );
    } else {
      assertAbout(await read('memory', `${TEST_ROOT}/kubepods/memory.max`), os.totalmem());
      assert.equal(await read('cpu', `${TEST_ROOT}/kubepods/besteffort/cpu.weight`), '1');
    }
  });

  test('a Burstable pod cgroup gets its limits, and its tier counts its request', async () => {
    assert.equal(cm.podCgroupParent(pod), podDir);
    active.push(pod);
    await cm.ensurePodCgroup(pod);
    assert.equal(await cm.exists(pod), true);
    if (subsystems.version === 'v1') {
      assert.equal(await read('cpu', `${podDir}/cpu.shares`), '256');
      assert.equal(await read('cpu', `${podDir}/cpu.cfs_quota_us`), '50000');
      assert.equal(await read('cpu', `${podDir}/cpu.cfs_period_us`), '100000');
      assert.equal(await read('memory', `${podDir}/memory.limit_in_bytes`), String(64 * MiB));
      assert.equal(await read('pids', `${podDir}/pids.max`), '100');
      assert.equal(await read('cpu', `${TEST_ROOT}/kubepods/burstable/cpu.shares`), '256');
    } else {
      assert.equal(await read('cpu', `${podDir}/cpu.max`), '50000 100000');
      assert.equal(await read('memory', `${podDir}/memory.max`), String(64 * MiB));
      assert.equal(await read('pids', `${podDir}/pids.max`), '100');
    }
  });

  test("containerd puts the sandbox and the container's process under the pod cgroup", async () => {
    connection = await connectRuntime(endpoint, {
      signal: AbortSignal.timeout(30_000),
      retryInitialDelayMs: 500,
      retryMaxDelayMs: 2000,
    }).catch((err: unknown) => {
      throw new Error(`no CRI runtime at ${endpoint}: is the stack up (scripts/runtime-stack.sh up)?`, {
        cause: err,
      });
    });
    const { name, namespace } = pod.metadata as { name: string; namespace: string };
    const sandboxConfig: PodSandboxConfig = {
      metadata: { name, uid, namespace, attempt: 0 },
      hostname: name,
      logDirectory: path.join(logDir, `${namespace}_${name}_${uid}`),
      portMappings: [],
      labels: {
        'io.kubernetes.pod.name': name,
        'io.kubernetes.pod.namespace': namespace,
        'io.kubernetes.pod.uid': uid,
      },
      annotations: { 'kubernetes.io/config.source': 'cgroups-integration-test' },
      linux: {
        cgroupParent: cm.podCgroupParent(pod),
        securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
        sysctls: {},
      },
    };
    const sandboxId = await connection.runtime.runPodSandbox(sandboxConfig, '', {
      timeoutMs: 4 * CALL_TIMEOUT_MS,
    });
    sandboxIds.push(sandboxId);
    const container = pod.spec.containers[0]!;
    // memorySwap.swapBehavior left unset: NoSwap, as upstream v1.30 reads the machine for it.
    const swap = await detectSwapSettings({
      failSwapOn: false,
      memorySwap: { swapBehavior: '' },
      featureGates: {},
    });
    const config: ContainerConfig = {
      metadata: { name: container.name, attempt: 0 },
      image: { image: BUSYBOX },
      command: ['sleep', '3600'],
      args: [],
      workingDir: '',
      envs: [],
      mounts: [],
      labels: { ...sandboxConfig.labels, 'io.kubernetes.container.name': container.name },
      annotations: {},
      logPath: `${container.name}/0.log`,
      stdin: false,
      stdinOnce: false,
      tty: false,
      linux: {
        resources: generateLinuxContainerResources(pod, container, {
          memoryCapacityBytes: os.totalmem(),
          cpuCFSQuota: true,
          cpuCFSQuotaPeriodUs: 100_000,
          swap,
        }),
      },
    };
    const containerId = await connection.runtime.createContainer(sandboxId, config, sandboxConfig, {
      timeoutMs: CALL_TIMEOUT_MS,
    });
    await connection.runtime.startContainer(containerId, { timeoutMs: CALL_TIMEOUT_MS });

    const { info } = await connection.runtime.containerStatus(containerId, true);
    const pid = (JSON.parse(info.info ?? '{}') as { pid?: number }).pid;
    assert.ok(pid && pid > 0, `no pid in the verbose status: ${JSON.stringify(info).slice(0, 300)}`);
    const lines = (await readFile(`/proc/${pid}/cgroup`, 'utf8')).trim().split('\n');
    const want = `${podDir}/${containerId}`;
    if (subsystems.version === 'v1') {
      for (const controller of ['cpu', 'memory', 'pids', 'cpuset']) {
        const line = lines.find((l) => l.split(':')[1]!.split(',').includes(controller));
        assert.equal(line?.split(':')[2], want, `${controller}: ${lines.join(' | ')}`);
      }
      // The kernel's own list of the cgroup's tasks agrees.
      const procs = (await read('cpu', `${want}/cgroup.procs`)).split('\n');
      assert.ok(procs.includes(String(pid)), `cgroup.procs: ${procs.join(',')}`);
      // NoSwap on v1: memory+swap held to the memory limit, where the kernel accounts swap.
      if (swap.controllerAvailable)
        assert.equal(await read('memory', `${want}/memory.memsw.limit_in_bytes`), String(64 * MiB));
      // The sandbox's pause process is in the pod cgroup too.
      assert.ok(await fs.exists(path.join(dirOf('memory'), podDir, sandboxId)));
    } else {
      assert.ok(lines.includes(`0::${want}`), lines.join(' | '));
      if (swap.controllerAvailable) assert.equal(await read('memory', `${want}/memory.swap.max`), '0');
    }

    // Stop the pod the kubelet's way (the runtime's stop, not removePodCgroup's kill of leftovers).
    await connection.runtime.stopContainer(containerId, 1, { timeoutMs: CALL_TIMEOUT_MS });
    await connection.runtime.stopPodSandbox(sandboxId, { timeoutMs: CALL_TIMEOUT_MS });
    await connection.runtime.removePodSandbox(sandboxId, { timeoutMs: CALL_TIMEOUT_MS });
    sandboxIds.splice(sandboxIds.indexOf(sandboxId), 1);
  });

  test('once the pod has stopped, removePodCgroup removes it from every hierarchy', async () => {
    active.splice(0);
    await waitFor('the pod cgroup to be removed', () => cm.removePodCgroup(uid), 15_000, 200);
    assert.equal(await cm.exists(pod), false);
    const hierarchies =
      subsystems.version === 'v2' ? [subsystems.root] : subsystems.hierarchies.map((h) => h.mountPoint);
    for (const mount of hierarchies) assert.equal(await fs.exists(path.join(mount, podDir)), false, mount);
    if (subsystems.version === 'v1')
      assert.equal(await read('cpu', `${TEST_ROOT}/kubepods/burstable/cpu.shares`), '2');
  });

  test('housekeeping removes a pod cgroup nobody wants, and keeps a wanted one', async () => {
    const orphan = { ...pod, metadata: { ...pod.metadata, uid: randomUUID() } };
    const wanted = { ...pod, metadata: { ...pod.metadata, uid: randomUUID() } };
    await cm.ensurePodCgroup(orphan);
    await cm.ensurePodCgroup(wanted);
    const removed = await cm.cleanupOrphanedPodCgroups((u) => u === wanted.metadata.uid);
    assert.deepEqual(removed, [orphan.metadata.uid]);
    assert.equal(await cm.exists(orphan), false);
    assert.equal(await cm.exists(wanted), true);
    assert.equal(await cm.removePodCgroup(wanted.metadata.uid), true);
  });
});
