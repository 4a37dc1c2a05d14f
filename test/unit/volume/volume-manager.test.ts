/**
 * The volume manager against a real temporary root, a fake mounter, an in-memory API and a fake
 * clock: what syncPod waits for, what the runtime is given, how failures read, and cleanup.
 */
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { FakeMounter } from '../../../src/volume/testing/fake-mounter.js';
import { FakeObjectSource } from '../../../src/volume/testing/fake-object-source.js';
import {
  expandSubPathExpr,
  VolumeManagerImpl,
  VolumeMountError,
  type VolumeManagerOptions,
} from '../../../src/volume/volume-manager.js';
import type { PodVolume } from '../../../src/volume/volume-types.js';

let tmp = '';
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'volume-manager-'));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

interface RecordedEvent {
  pod: string;
  type: string;
  reason: string;
  message: string;
}

let n = 0;
function setup(
  opts: {
    mountTimeoutMs?: number;
    nodeLabels?: Record<string, string>;
    nodeAllocatable?: VolumeManagerOptions['nodeAllocatable'];
  } = {},
) {
  const clock = new FakeClock(Date.UTC(2024, 0, 1));
  const mounter = new FakeMounter();
  const objects = new FakeObjectSource(clock);
  const events: RecordedEvent[] = [];
  const rootDir = path.join(tmp, `root${n++}`);
  const make = () =>
    new VolumeManagerImpl({
      rootDir,
      nodeName: 'node-a',
      clock,
      mounter,
      objects,
      recorder: {
        event: (pod, _fieldPath, type, reason, message) =>
          events.push({ pod: pod.metadata.name ?? '', type, reason, message }),
      },
      nodeLabels: () => opts.nodeLabels,
      nodeAllocatable: opts.nodeAllocatable ?? { cpu: '2', memory: '4Gi' },
      mountTimeoutMs: opts.mountTimeoutMs ?? 10_000,
      selinuxEnabled: false,
    });
  return { clock, mounter, objects, events, rootDir, vm: make(), make };
}

function pod(name: string, volumes: PodVolume[], containers: Container[], uid = `uid-${name}`): Pod {
  return {
    metadata: { name, namespace: 'prod', uid },
    spec: { serviceAccountName: 'default', volumes, containers },
  };
}

/** Waits (really: the mounts do file I/O) until fn holds. */
async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const web = (volumeMounts: Container['volumeMounts'], extra: Partial<Container> = {}): Container => ({
  name: 'main',
  image: 'busybox',
  volumeMounts,
  ...extra,
});

describe('waitForAttachAndMount and getMounts', () => {
  test('sets up what the containers mount (not unused volumes) and hands the runtime the mounts', async () => {
    const { vm, objects, rootDir, mounter } = setup();
    objects.setConfigMap('prod', 'cfg', { a: 'A' });
    const p = pod(
      'web',
      [
        { name: 'scratch', emptyDir: {} },
        { name: 'config', configMap: { name: 'cfg' } },
        { name: 'logs', hostPath: { path: '/var/log', type: 'Directory' } },
        { name: 'unused', emptyDir: { medium: 'Memory' } },
      ],
      [
        web([
          { name: 'scratch', mountPath: '/scratch' },
          { name: 'config', mountPath: '/etc/cfg' },
          { name: 'logs', mountPath: '/host/logs', readOnly: true, mountPropagation: 'HostToContainer' },
        ]),
      ],
    );
    await vm.waitForAttachAndMount(p);
    const mounts = await vm.getMounts(p, p.spec.containers[0]!);
    const vols = path.join(rootDir, 'pods/uid-web/volumes');
    assert.deepEqual(mounts, [
      {
        containerPath: '/scratch',
        hostPath: path.join(vols, 'kubernetes.io~empty-dir/scratch'),
        readonly: false,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
      {
        containerPath: '/etc/cfg',
        hostPath: path.join(vols, 'kubernetes.io~configmap/config'),
        readonly: true,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
      {
        containerPath: '/host/logs',
        hostPath: '/var/log',
        readonly: true,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_HOST_TO_CONTAINER',
      },
    ]);
    await assert.rejects(lstat(path.join(vols, 'kubernetes.io~empty-dir/unused')), { code: 'ENOENT' });
    // /var/log is not under the root dir: nothing to make shared.
    assert.deepEqual(mounter.calls, []);
    assert.ok(vm.podHasMountedVolumes('uid-web'));
  });

  test('a pod without volumes does not wait', async () => {
    const { vm } = setup();
    await vm.waitForAttachAndMount(pod('bare', [], [web(undefined)]));
    assert.deepEqual(await vm.getMounts(pod('bare', [], [web(undefined)]), web(undefined)), []);
  });

  test('a missing configMap: FailedMount per attempt with back-off, and the mount once it exists', async () => {
    const { vm, objects, events, clock } = setup({ mountTimeoutMs: 600_000 });
    const p = pod(
      'cm',
      [{ name: 'config', configMap: { name: 'later' } }],
      [web([{ name: 'config', mountPath: '/c' }])],
    );
    const waiting = vm.waitForAttachAndMount(p);
    await until('a FailedMount event', () => events.length === 1);
    assert.deepEqual(events[0], {
      pod: 'cm',
      type: 'Warning',
      reason: 'FailedMount',
      message: 'MountVolume.SetUp failed for volume "config" : configmap "later" not found',
    });
    clock.advance(499);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(events.length, 1, 'no retry before 500 ms');
    clock.advance(1);
    await until('a second attempt', () => events.length === 2);
    clock.advance(999);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(events.length, 2, 'the back-off doubled');
    objects.setConfigMap('prod', 'later', { k: 'v' });
    clock.advance(1);
    await waiting;
    assert.equal(events.length, 2);
  });

  test("volumes that never come up: upstream's error after the timeout, and no event for a timeout", async () => {
    const { vm, events, clock } = setup({ mountTimeoutMs: 5_000 });
    const p = pod(
      'stuck',
      [
        { name: 'creds', secret: { secretName: 'nope' } },
        { name: 'ok', emptyDir: {} },
      ],
      [
        web([
          { name: 'creds', mountPath: '/s' },
          { name: 'ok', mountPath: '/ok' },
        ]),
      ],
    );
    const waiting = vm.waitForAttachAndMount(p);
    await until('the first failure', () => events.length === 1);
    await until('the emptyDir', () => vm.podHasMountedVolumes('uid-stuck'));
    clock.advance(5_000);
    const err = await waiting.then(
      () => assert.fail('should have failed'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof VolumeMountError);
    assert.equal(
      err.message,
      'unmounted volumes=[creds], unattached volumes=[], failed to process volumes=[]: context deadline exceeded',
    );
    assert.equal(err.interrupted, true);
    assert.ok(
      events.every((e) => e.reason === 'FailedMount' && e.message.startsWith('MountVolume.SetUp failed')),
    );
    await vm.stop();
  });

  test('a cancelled wait (the pod is being deleted) says so and records nothing', async () => {
    const { vm, events } = setup();
    const p = pod(
      'gone',
      [{ name: 'c', configMap: { name: 'nope' } }],
      [web([{ name: 'c', mountPath: '/c' }])],
    );
    const ac = new AbortController();
    const waiting = vm.waitForAttachAndMount(p, ac.signal);
    await until('the first failure', () => events.length === 1);
    ac.abort();
    await assert.rejects(waiting, /: context canceled$/);
    assert.equal(events.filter((e) => e.message.startsWith('Unable')).length, 0);
    await vm.stop();
  });

  test('data volumes are refreshed on each wait; others are not set up again', async () => {
    const { vm, objects, rootDir } = setup();
    objects.setConfigMap('prod', 'cfg', { a: 'one' });
    const p = pod(
      'live',
      [
        { name: 'config', configMap: { name: 'cfg' } },
        { name: 'e', emptyDir: {} },
      ],
      [
        web([
          { name: 'config', mountPath: '/c' },
          { name: 'e', mountPath: '/e' },
        ]),
      ],
    );
    await vm.waitForAttachAndMount(p);
    const file = path.join(rootDir, 'pods/uid-live/volumes/kubernetes.io~configmap/config/a');
    assert.equal(await readFile(file, 'utf8'), 'one');
    objects.setConfigMap('prod', 'cfg', { a: 'two' });
    const reads = objects.reads.length;
    await vm.waitForAttachAndMount(p);
    await until('the refreshed file', async () => (await readFile(file, 'utf8')) === 'two');
    assert.equal(objects.reads.length, reads + 1);
  });

  test('the downward API follows label changes on the next sync', async () => {
    const { vm, rootDir } = setup();
    const p = pod(
      'labels',
      [
        {
          name: 'info',
          downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
        },
      ],
      [web([{ name: 'info', mountPath: '/info' }])],
    );
    p.metadata.labels = { v: '1' };
    await vm.waitForAttachAndMount(p);
    const file = path.join(rootDir, 'pods/uid-labels/volumes/kubernetes.io~downward-api/info/labels');
    assert.equal(await readFile(file, 'utf8'), 'v="1"');
    await vm.waitForAttachAndMount({ ...p, metadata: { ...p.metadata, labels: { v: '2' } } });
    await until('the new labels', async () => (await readFile(file, 'utf8')) === 'v="2"');
  });

  test("limits default to the Node's allocatable once there is one, to the machine's before", async () => {
    let node: { cpu: string; memory: string } | undefined = undefined;
    const { vm, rootDir } = setup({ nodeAllocatable: () => node });
    const p = pod(
      'limits',
      [
        {
          name: 'info',
          downwardAPI: {
            items: [{ path: 'mem', resourceFieldRef: { containerName: 'main', resource: 'limits.memory' } }],
          },
        },
      ],
      [web([{ name: 'info', mountPath: '/info' }])],
    );
    await vm.waitForAttachAndMount(p);
    const file = path.join(rootDir, 'pods/uid-limits/volumes/kubernetes.io~downward-api/info/mem');
    assert.equal(await readFile(file, 'utf8'), String(os.totalmem()));
    node = { cpu: '2', memory: '3Gi' };
    await vm.waitForAttachAndMount(p);
    await until(
      "the Node's allocatable",
      async () => (await readFile(file, 'utf8')) === String(3 * 1024 ** 3),
    );
  });

  test('a volume no plugin knows, or a mount of an undefined volume, fails at once', async () => {
    const { vm, events } = setup();
    const p = pod(
      'odd',
      [{ name: 'n', nfs: { server: 'x', path: '/' } }],
      [
        web([
          { name: 'n', mountPath: '/n' },
          { name: 'ghost', mountPath: '/g' },
        ]),
      ],
    );
    await assert.rejects(vm.waitForAttachAndMount(p), {
      message:
        'unmounted volumes=[ghost n], unattached volumes=[], failed to process volumes=[ghost n]: ' +
        'failed to get Plugin from volumeSpec for volume "n" err=no volume plugin matched; ' +
        'volume "ghost" is mounted by a container but not defined in the pod\'s volumes',
    });
    assert.equal(events.length, 1);
    assert.equal(events[0]?.reason, 'FailedMount');
    assert.match(
      events[0]?.message ?? '',
      /^Unable to attach or mount volumes: unmounted volumes=\[ghost n\]/,
    );
  });
});

describe('persistentVolumeClaim', () => {
  function claimPod(readOnly = false): Pod {
    return pod(
      'db',
      [{ name: 'data', persistentVolumeClaim: { claimName: 'data', readOnly } }],
      [web([{ name: 'data', mountPath: '/data' }])],
    );
  }

  test('a claim that is not bound fails at once, as upstream words it', async () => {
    const { vm, objects } = setup();
    await assert.rejects(vm.waitForAttachAndMount(claimPod()), {
      message:
        'unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: ' +
        'error processing PVC prod/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found',
    });
    objects.claims.set('prod/data', {
      metadata: { name: 'data', namespace: 'prod', uid: 'c1' },
      spec: {},
      status: { phase: 'Pending' },
    });
    await assert.rejects(
      vm.waitForAttachAndMount(claimPod()),
      /error processing PVC prod\/data: PVC is not bound$/,
    );
    objects.claims.set('prod/data', {
      metadata: { name: 'data', namespace: 'prod', uid: 'c1' },
      spec: { volumeName: 'pv1' },
      status: { phase: 'Bound' },
    });
    objects.volumes.set('pv1', { metadata: { name: 'pv1' }, spec: { hostPath: { path: '/srv' } } });
    await assert.rejects(
      vm.waitForAttachAndMount(claimPod()),
      /found PV object pv1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim$/,
    );
    objects.volumes.set('pv1', {
      metadata: { name: 'pv1' },
      spec: { hostPath: { path: '/srv' }, claimRef: { uid: 'other' } },
    });
    await assert.rejects(
      vm.waitForAttachAndMount(claimPod()),
      /found PV object pv1 but its pv.Spec.ClaimRef.UID other does not point to claim.UID c1$/,
    );
  });

  test('a bound hostPath or local PV: node affinity checked, the PV path given to the runtime, readOnly honoured', async () => {
    const { vm, objects, events } = setup({ nodeLabels: { 'kubernetes.io/hostname': 'node-b' } });
    const dir = path.join(tmp, `pv${n++}`);
    await mkdir(dir);
    objects.claims.set('prod/data', {
      metadata: { name: 'data', namespace: 'prod', uid: 'c1' },
      spec: { volumeName: 'pv1' },
      status: { phase: 'Bound' },
    });
    objects.volumes.set('pv1', {
      metadata: { name: 'pv1' },
      spec: {
        local: { path: dir },
        claimRef: { uid: 'c1' },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-a'] }] },
            ],
          },
        },
      },
    });
    const waiting = vm.waitForAttachAndMount(claimPod(true));
    await until('the affinity failure', () => events.length === 1);
    assert.equal(
      events[0]?.message,
      'MountVolume.NodeAffinity check failed for volume "pv1" : no matching NodeSelectorTerms',
    );
    await vm.stop();
    await assert.rejects(waiting);

    const ok = setup({ nodeLabels: { 'kubernetes.io/hostname': 'node-a' } });
    for (const [k, v] of objects.claims) ok.objects.claims.set(k, v);
    for (const [k, v] of objects.volumes) ok.objects.volumes.set(k, v);
    const p = claimPod(true);
    await ok.vm.waitForAttachAndMount(p);
    assert.deepEqual(await ok.vm.getMounts(p, p.spec.containers[0]!), [
      {
        containerPath: '/data',
        hostPath: dir,
        readonly: true,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
    ]);
  });
});

describe('getMounts failures (CreateContainerConfigError material)', () => {
  async function mounted(containers: Container[]) {
    const s = setup();
    const p = pod('sub', [{ name: 'e', emptyDir: {} }], containers);
    await s.vm.waitForAttachAndMount(p);
    return { ...s, p };
  }

  test('a volume not set up', async () => {
    const { vm } = setup();
    const c = web([{ name: 'e', mountPath: '/e' }]);
    await assert.rejects(vm.getMounts(pod('x', [{ name: 'e', emptyDir: {} }], [c]), c), (err: unknown) => {
      assert.ok(isKubeletError(err, 'CREATE_CONTAINER_CONFIG'));
      assert.equal(err.message, 'cannot find volume "e" to mount into container "main"');
      return true;
    });
  });

  test('absolute and .. subPaths, and subPathExpr with a missing value', async () => {
    const abs = web([{ name: 'e', mountPath: '/e', subPath: '/etc' }]);
    const up = web([{ name: 'e', mountPath: '/e', subPath: 'a/../../x' }]);
    const expr = web([{ name: 'e', mountPath: '/e', subPathExpr: '$(NOPE)/x' }]);
    const { vm, p } = await mounted([abs]);
    await assert.rejects(vm.getMounts(p, abs), {
      message: 'error SubPath `/etc` must not be an absolute path',
    });
    await assert.rejects(vm.getMounts(p, up), {
      message: "unable to provision SubPath `a/../../x`: must not contain '..'",
    });
    await assert.rejects(vm.getMounts(p, expr), { message: 'missing value for NOPE' });
  });

  test('Bidirectional only for privileged containers; an unknown mode is refused', async () => {
    const bi = web([{ name: 'e', mountPath: '/e', mountPropagation: 'Bidirectional' }]);
    const odd = web([{ name: 'e', mountPath: '/e', mountPropagation: 'Sideways' as never }]);
    const { vm, p } = await mounted([bi]);
    await assert.rejects(vm.getMounts(p, bi), {
      message: 'Bidirectional mount propagation is available only to privileged containers',
    });
    await assert.rejects(vm.getMounts(p, odd), { message: 'invalid MountPropagation mode: "Sideways"' });
  });

  test("a subPath that leads out of the volume is refused with upstream's vague message", async () => {
    const c = web([{ name: 'e', mountPath: '/e', subPath: 'escape/x' }]);
    const { vm, p, rootDir } = await mounted([c]);
    const vol = path.join(rootDir, 'pods/uid-sub/volumes/kubernetes.io~empty-dir/e');
    const { symlink } = await import('node:fs/promises');
    await symlink('/etc', path.join(vol, 'escape'));
    await assert.rejects(vm.getMounts(p, c), {
      message: 'failed to create subPath directory for volumeMount "e" of container "main"',
    });
    const d = web([{ name: 'e', mountPath: '/e', subPath: 'escape' }]);
    await assert.rejects(vm.getMounts(p, d), {
      message: 'failed to prepare subPath for volumeMount "e" of container "main"',
    });
  });

  test('subPathExpr expands against the container env', () => {
    assert.equal(expandSubPathExpr('logs/$(POD_NAME)', new Map([['POD_NAME', 'web-1']])), 'logs/web-1');
    assert.throws(() => expandSubPathExpr('$(A)/$(B)', new Map([['A', '']])), {
      message: 'missing value for A, B',
    });
  });
});

describe('teardown and cleanup', () => {
  test('unmountAndCleanup tears every volume down; the tmpfs is unmounted, the token forgotten', async () => {
    const { vm, objects, mounter, rootDir } = setup();
    objects.setConfigMap('prod', 'kube-root-ca.crt', { 'ca.crt': 'CA' });
    const p = pod(
      'done',
      [
        { name: 'e', emptyDir: { medium: 'Memory' } },
        {
          name: 'kube-api-access-x',
          projected: {
            sources: [
              { serviceAccountToken: { path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt' } },
            ],
          },
        },
      ],
      [
        web([
          { name: 'e', mountPath: '/e' },
          { name: 'kube-api-access-x', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
        ]),
      ],
    );
    await vm.waitForAttachAndMount(p);
    assert.equal(mounter.mounted().length, 2);
    await vm.unmountAndCleanup('uid-done');
    assert.deepEqual(mounter.mounted(), []);
    assert.equal(vm.podHasMountedVolumes('uid-done'), false);
    await assert.rejects(lstat(path.join(rootDir, 'pods/uid-done/volumes/kubernetes.io~empty-dir/e')), {
      code: 'ENOENT',
    });
    // A new token is asked for if the same pod comes back: the old one was forgotten.
    await vm.waitForAttachAndMount(p);
    assert.equal(objects.tokenRequests.length, 2);
  });

  test('after a restart: volumes found on disk, emptyDir content kept, orphans removed at housekeeping', async () => {
    const { vm, make, rootDir } = setup();
    const keepPod = pod('keep', [{ name: 'e', emptyDir: {} }], [web([{ name: 'e', mountPath: '/e' }])]);
    const gonePod = pod('gone', [{ name: 'e', emptyDir: {} }], [web([{ name: 'e', mountPath: '/e' }])]);
    await vm.waitForAttachAndMount(keepPod);
    await vm.waitForAttachAndMount(gonePod);
    const keepFile = path.join(rootDir, 'pods/uid-keep/volumes/kubernetes.io~empty-dir/e/data');
    await writeFile(keepFile, 'survives');
    await vm.stop();

    const vm2 = make();
    await vm2.start();
    assert.ok(vm2.podHasMountedVolumes('uid-keep'));
    assert.ok(vm2.podHasMountedVolumes('uid-gone'));
    // Reconstructed is not set up: the runtime gets nothing until the pod's first sync.
    await assert.rejects(vm2.getMounts(keepPod, keepPod.spec.containers[0]!), /cannot find volume "e"/);
    await vm2.waitForAttachAndMount(keepPod);
    assert.equal(await readFile(keepFile, 'utf8'), 'survives');

    await vm2.cleanupOrphanedPodDirs(new Set(['uid-keep']));
    await assert.rejects(lstat(path.join(rootDir, 'pods/uid-gone')), { code: 'ENOENT' });
    assert.equal(vm2.podHasMountedVolumes('uid-gone'), false);
    await stat(keepFile);
    // A pod dir of a pod still wanted stays even when the predicate form is used.
    await vm2.cleanupOrphanedPodDirs((uid) => uid === 'uid-keep');
    await stat(keepFile);
  });

  test('start makes the root dir a shared mount (rbind, then rshared), once', async () => {
    const { make, mounter, rootDir } = setup();
    await make().start();
    await make().start();
    const real = await realpath(rootDir);
    assert.deepEqual(
      mounter.calls.map((c) => [c.source, c.target, c.options, c.flags]),
      [
        [real, real, ['rbind'], []],
        ['', real, [], ['--make-rshared']],
      ],
    );
  });

  test('an orphan whose volume is still mounted is left for a later housekeeping', async () => {
    const { vm, mounter, rootDir } = setup();
    const p = pod('busy', [{ name: 'e', emptyDir: {} }], [web([{ name: 'e', mountPath: '/e' }])]);
    await vm.waitForAttachAndMount(p);
    const inner = path.join(rootDir, 'pods/uid-busy/volumes/kubernetes.io~empty-dir/e/mnt');
    await mkdir(inner);
    // Something (a Bidirectional container) mounted inside the volume: never delete through it.
    await mounter.mount('/dev/sdz', inner, 'ext4', []);
    await vm.cleanupOrphanedPodDirs(new Set());
    await stat(inner);
    await mounter.unmount(inner);
    await vm.cleanupOrphanedPodDirs(new Set());
    await assert.rejects(lstat(path.join(rootDir, 'pods/uid-busy')), { code: 'ENOENT' });
  });

  test('a subPath cleanup that fails is logged and reported, never passed over', async () => {
    const lines: string[] = [];
    setLogSink((l) => lines.push(l));
    try {
      const { vm, events, rootDir } = setup();
      const p = pod('stuck', [{ name: 'e', emptyDir: {} }], [web([{ name: 'e', mountPath: '/e' }])]);
      await vm.waitForAttachAndMount(p);
      const subpaths = path.join(rootDir, 'pods/uid-stuck/volume-subpaths');
      // Something the cleanup cannot remove: a stray file beside the containers' folders.
      await mkdir(path.join(subpaths, 'e', 'web'), { recursive: true });
      await writeFile(path.join(subpaths, 'e', 'stray'), '');
      await assert.rejects(vm.unmountAndCleanup('uid-stuck'), /subPaths of volume "e".*error deleting/);
      assert.ok(
        events.some((e) => e.reason === 'FailedUnMount' && /subPaths of volume "e"/.test(e.message)),
        JSON.stringify(events),
      );
      assert.ok(
        lines.some((l) => l.includes('subPath') && l.includes('uid-stuck') && l.includes('error deleting')),
        lines.join('\n'),
      );

      // A volume-subpaths that cannot be read at all is as much a failure.
      const q = pod('unreadable', [{ name: 'e', emptyDir: {} }], [web([{ name: 'e', mountPath: '/e' }])]);
      await vm.waitForAttachAndMount(q);
      await writeFile(path.join(rootDir, 'pods/uid-unreadable/volume-subpaths'), 'not a folder');
      await assert.rejects(vm.unmountAndCleanup('uid-unreadable'), /volume-subpaths.*ENOTDIR/);
      assert.ok(
        lines.some((l) => l.includes('uid-unreadable') && l.includes('ENOTDIR')),
        lines.join('\n'),
      );
    } finally {
      setLogSink((l) => process.stderr.write(l + '\n'));
    }
  });
});
