/**
 * Each plugin's files and modes on a real temporary root, with a fake mounter (tmpfs mounts are
 * recorded, not made) and an in-memory API.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { ConfigMapPlugin } from '../../../src/volume/configmap.js';
import { DownwardAPIPlugin } from '../../../src/volume/downward-api.js';
import { EmptyDirPlugin, emptyDirMemorySizeBytes } from '../../../src/volume/empty-dir.js';
import { checkHostPathType, HostPathPlugin } from '../../../src/volume/host-path.js';
import { ProjectedPlugin } from '../../../src/volume/projected.js';
import { SecretPlugin } from '../../../src/volume/secret.js';
import { FakeMounter } from '../../../src/volume/testing/fake-mounter.js';
import { FakeObjectSource } from '../../../src/volume/testing/fake-object-source.js';
import { TokenManager } from '../../../src/volume/token-manager.js';
import { setVolumeOwnership } from '../../../src/volume/volume-ownership.js';
import type { MounterArgs, VolumeHost, VolumeSpec } from '../../../src/volume/volume-plugin.js';
import type { PodVolume } from '../../../src/volume/volume-types.js';

const isRoot = process.getuid?.() === 0;
let tmp = '';
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'volume-plugins-'));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let n = 0;
function setup() {
  const clock = new FakeClock(Date.UTC(2024, 0, 1));
  const mounter = new FakeMounter();
  const objects = new FakeObjectSource(clock);
  const host: VolumeHost = {
    rootDir: path.join(tmp, `root${n++}`),
    nodeName: 'node-a',
    clock,
    mounter,
    objects,
    tokens: new TokenManager({
      clock,
      getToken: (ns, sa, tr) => objects.createToken(ns, sa, tr),
      random: () => 0,
    }),
    nodeAllocatable: { cpu: '4', memory: '8Gi' },
    objectCacheTtlMs: 60_000,
  };
  return { clock, mounter, objects, host };
}

function pod(extra: Partial<Pod['spec']> = {}, meta: Partial<Pod['metadata']> = {}): Pod {
  return {
    metadata: {
      name: 'web',
      namespace: 'prod',
      uid: 'uid-1',
      labels: { app: 'web', tier: 'front' },
      annotations: { 'example.com/note': 'say "hi"' },
      ...meta,
    },
    spec: {
      serviceAccountName: 'default',
      containers: [
        {
          name: 'main',
          image: 'busybox',
          resources: { limits: { cpu: '500m', memory: '64Mi' }, requests: { cpu: '250m', memory: '32Mi' } },
        },
      ],
      ...extra,
    },
  };
}

function spec(v: PodVolume): VolumeSpec {
  return { name: v.name, volume: v, readOnly: false };
}

function args(over: Partial<MounterArgs> = {}): MounterArgs {
  return { remount: false, signal: new AbortController().signal, ...over };
}

async function mode(p: string): Promise<number> {
  return (await stat(p)).mode & 0o7777;
}

describe('emptyDir', () => {
  test('on disk: a 0777 folder under volumes/kubernetes.io~empty-dir, kept by a second setUp, removed by tearDown', async () => {
    const { host } = setup();
    const plugin = new EmptyDirPlugin(host);
    const m = plugin.newMounter(spec({ name: 'scratch', emptyDir: {} }), pod());
    assert.equal(m.getPath(), path.join(host.rootDir, 'pods/uid-1/volumes/kubernetes.io~empty-dir/scratch'));
    assert.deepEqual(m.getAttributes(), { readOnly: false, managed: true, selinuxRelabel: true });
    await m.setUp(args());
    assert.equal(await mode(m.getPath()), 0o777);
    await stat(path.join(host.rootDir, 'pods/uid-1/plugins/kubernetes.io~empty-dir/scratch/ready'));
    await writeFile(path.join(m.getPath(), 'data'), 'kept');
    await m.setUp(args());
    assert.equal(await readFile(path.join(m.getPath(), 'data'), 'utf8'), 'kept');

    await plugin.newUnmounter('scratch', 'uid-1').tearDown();
    await assert.rejects(lstat(m.getPath()), { code: 'ENOENT' });
    await assert.rejects(
      lstat(path.join(host.rootDir, 'pods/uid-1/plugins/kubernetes.io~empty-dir/scratch')),
      {
        code: 'ENOENT',
      },
    );
  });

  test('medium Memory: a tmpfs with size=, mounted once, unmounted by tearDown', async () => {
    const { host, mounter } = setup();
    const plugin = new EmptyDirPlugin(host);
    const m = plugin.newMounter(
      spec({ name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } }),
      pod(),
    );
    await m.setUp(args());
    await m.setUp(args());
    const mounts = mounter.calls.filter((c) => c.op === 'mount');
    assert.equal(mounts.length, 1);
    assert.deepEqual(mounts[0], {
      op: 'mount',
      source: 'tmpfs',
      target: m.getPath(),
      fsType: 'tmpfs',
      options: ['size=16777216'],
      flags: [],
    });
    await plugin.newUnmounter('mem', 'uid-1').tearDown();
    assert.deepEqual(mounter.mounted(), []);
    await assert.rejects(lstat(m.getPath()), { code: 'ENOENT' });
  });

  test('a tmpfs is as large as the smallest of node allocatable, the pod memory limit, and sizeLimit', () => {
    const p = pod();
    assert.equal(emptyDirMemorySizeBytes('8Gi', undefined, p), 64 * 1024 ** 2);
    assert.equal(emptyDirMemorySizeBytes('8Gi', '1Gi', p), 64 * 1024 ** 2);
    assert.equal(emptyDirMemorySizeBytes('8Gi', '10Mi', p), 10 * 1024 ** 2);
    const unlimited = pod({ containers: [{ name: 'main', image: 'busybox' }] });
    assert.equal(emptyDirMemorySizeBytes('8Gi', undefined, unlimited), 8 * 1024 ** 3);
    assert.equal(emptyDirMemorySizeBytes('1Gi', '2Gi', unlimited), 1024 ** 3);
  });

  test('an unsupported medium fails setUp', async () => {
    const { host } = setup();
    const m = new EmptyDirPlugin(host).newMounter(
      spec({ name: 'hp', emptyDir: { medium: 'HugePages' } }),
      pod(),
    );
    await assert.rejects(m.setUp(args()), /unknown storage medium "HugePages"/);
  });

  test(
    'fsGroup: the group and setgid on the folder; OnRootMismatch skips a root that is already right',
    { skip: !isRoot && 'needs root for chown' },
    async () => {
      const { host } = setup();
      const m = new EmptyDirPlugin(host).newMounter(spec({ name: 'shared', emptyDir: {} }), pod());
      await m.setUp(args({ fsGroup: 2000 }));
      const st = await stat(m.getPath());
      assert.equal(st.gid, 2000);
      assert.equal(st.mode & 0o7777, 0o2777);

      const dir = path.join(tmp, `own${n++}`);
      await mkdir(path.join(dir, 'sub'), { recursive: true, mode: 0o700 });
      await writeFile(path.join(dir, 'sub/f'), 'x', { mode: 0o600 });
      await setVolumeOwnership(dir, 3000, { readOnly: false });
      assert.equal((await stat(path.join(dir, 'sub/f'))).gid, 3000);
      assert.equal(await mode(path.join(dir, 'sub/f')), 0o660);
      assert.equal(await mode(path.join(dir, 'sub')), 0o2770);
      // A file changed afterwards is left alone when the root already looks right.
      await writeFile(path.join(dir, 'late'), 'y', { mode: 0o600 });
      await setVolumeOwnership(dir, 3000, { readOnly: false, policy: 'OnRootMismatch' });
      assert.equal(await mode(path.join(dir, 'late')), 0o600);
      await setVolumeOwnership(dir, 3000, { readOnly: false, policy: 'Always' });
      assert.equal(await mode(path.join(dir, 'late')), 0o660);
    },
  );
});

describe('hostPath', () => {
  test('DirectoryOrCreate makes a 0755 folder; FileOrCreate a 0644 file', async () => {
    const d = path.join(tmp, `hp${n++}`, 'a/b');
    await checkHostPathType(d, 'DirectoryOrCreate');
    assert.ok((await stat(d)).isDirectory());
    assert.equal(await mode(d), 0o755 & ~process.umask());
    const f = path.join(tmp, `hp-file${n++}`);
    await checkHostPathType(f, 'FileOrCreate');
    assert.ok((await stat(f)).isFile());
    assert.equal(await mode(f), 0o644 & ~process.umask());
    // Existing ones are checked, not touched.
    await checkHostPathType(d, 'DirectoryOrCreate');
    await assert.rejects(
      checkHostPathType(f, 'DirectoryOrCreate'),
      /hostPath type check failed: .* is not a directory/,
    );
  });

  test("every type's mismatch in upstream's words", async () => {
    const f = path.join(tmp, `plain${n++}`);
    await writeFile(f, '');
    const sock = path.join(tmp, `s${n++}.sock`);
    const server: Server = createServer();
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      await assert.rejects(checkHostPathType(f, 'Directory'), {
        message: `hostPath type check failed: ${f} is not a directory`,
      });
      await assert.rejects(checkHostPathType(tmp, 'File'), {
        message: `hostPath type check failed: ${tmp} is not a file`,
      });
      await assert.rejects(checkHostPathType(f, 'Socket'), {
        message: `hostPath type check failed: ${f} is not a socket file`,
      });
      await assert.rejects(checkHostPathType(f, 'CharDevice'), {
        message: `hostPath type check failed: ${f} is not a character device`,
      });
      await assert.rejects(checkHostPathType('/dev/null', 'BlockDevice'), {
        message: 'hostPath type check failed: /dev/null is not a block device',
      });
      await assert.rejects(checkHostPathType(path.join(tmp, 'missing'), 'Directory'), /is not a directory/);
      await assert.rejects(checkHostPathType(f, 'Bogus' as never), /Bogus is an invalid volume type/);
      await checkHostPathType(sock, 'Socket');
      await checkHostPathType('/dev/null', 'CharDevice');
      await checkHostPathType(path.join(tmp, 'missing'), '');
    } finally {
      server.close();
    }
  });

  test('the path is the host path itself, read-only only for a read-only claim; .. is refused', async () => {
    const plugin = new HostPathPlugin();
    const m = plugin.newMounter(spec({ name: 'h', hostPath: { path: '/var/log' } }), pod());
    assert.equal(m.getPath(), '/var/log');
    assert.deepEqual(m.getAttributes(), { readOnly: false, managed: false, selinuxRelabel: false });
    const bad = plugin.newMounter(spec({ name: 'h', hostPath: { path: '/var/../etc' } }), pod());
    await assert.rejects(bad.setUp(args()), {
      message: "invalid HostPath `/var/../etc`: must not contain '..'",
    });
  });
});

describe('configMap', () => {
  test('every key as a file with defaultMode; binaryData too; the folder is the wrapper emptyDir', async () => {
    const { host, objects } = setup();
    objects.setConfigMap(
      'prod',
      'cfg',
      { 'app.conf': 'x=1', other: 'o' },
      { 'bin.dat': Buffer.from([0, 1, 2]).toString('base64') },
    );
    const plugin = new ConfigMapPlugin(host);
    const m = plugin.newMounter(
      spec({ name: 'config', configMap: { name: 'cfg', defaultMode: 0o440 } }),
      pod(),
    );
    assert.deepEqual(m.getAttributes(), { readOnly: true, managed: true, selinuxRelabel: true });
    await m.setUp(args());
    const dir = m.getPath();
    assert.equal(dir, path.join(host.rootDir, 'pods/uid-1/volumes/kubernetes.io~configmap/config'));
    assert.equal(await readFile(path.join(dir, 'app.conf'), 'utf8'), 'x=1');
    assert.deepEqual([...(await readFile(path.join(dir, 'bin.dat')))], [0, 1, 2]);
    assert.equal(await mode(path.join(dir, 'app.conf')), 0o440);
    assert.equal(await readlink(path.join(dir, 'app.conf')), '..data/app.conf');
    assert.equal(await mode(dir), 0o777);
    await stat(path.join(host.rootDir, 'pods/uid-1/plugins/kubernetes.io~empty-dir/wrapped_config/ready'));
  });

  test('items: only the listed keys, at their paths, with their modes; the default defaultMode is 0644', async () => {
    const { host, objects } = setup();
    objects.setConfigMap('prod', 'cfg', { a: 'A', b: 'B', c: 'C' });
    const m = new ConfigMapPlugin(host).newMounter(
      spec({
        name: 'config',
        configMap: {
          name: 'cfg',
          items: [
            { key: 'a', path: 'dir/a.txt', mode: 0o400 },
            { key: 'b', path: 'b.txt' },
          ],
        },
      }),
      pod(),
    );
    await m.setUp(args());
    const dir = m.getPath();
    const visible = (await readdir(dir)).filter((e) => !e.startsWith('..')).sort();
    assert.deepEqual(visible, ['b.txt', 'dir']);
    assert.equal(await readFile(path.join(dir, 'dir/a.txt'), 'utf8'), 'A');
    assert.equal(await mode(path.join(dir, 'dir/a.txt')), 0o400);
    assert.equal(await mode(path.join(dir, 'b.txt')), 0o644);
  });

  test('missing: not found, or a missing key; optional gives an empty volume or skips the key', async () => {
    const { host, objects } = setup();
    const plugin = new ConfigMapPlugin(host);
    await assert.rejects(
      plugin.newMounter(spec({ name: 'c', configMap: { name: 'nope' } }), pod()).setUp(args()),
      {
        message: 'configmap "nope" not found',
      },
    );
    const opt = plugin.newMounter(spec({ name: 'c', configMap: { name: 'nope', optional: true } }), pod());
    await opt.setUp(args());
    assert.deepEqual(
      (await readdir(opt.getPath())).filter((e) => !e.startsWith('..')),
      [],
    );

    objects.setConfigMap('prod', 'cfg', { a: 'A' });
    await assert.rejects(
      plugin
        .newMounter(
          spec({ name: 'k', configMap: { name: 'cfg', items: [{ key: 'zz', path: 'zz' }] } }),
          pod(),
        )
        .setUp(args()),
      { message: 'configmap references non-existent config key: zz' },
    );
    await plugin
      .newMounter(
        spec({ name: 'k2', configMap: { name: 'cfg', optional: true, items: [{ key: 'zz', path: 'zz' }] } }),
        pod(),
      )
      .setUp(args());
  });

  test('a bad item path fails the mount and leaves nothing behind', async () => {
    const { host, objects } = setup();
    objects.setConfigMap('prod', 'cfg', { a: 'A' });
    const m = new ConfigMapPlugin(host).newMounter(
      spec({ name: 'bad', configMap: { name: 'cfg', items: [{ key: 'a', path: '../../etc/evil' }] } }),
      pod(),
    );
    await assert.rejects(m.setUp(args()), { message: "invalid path: must not contain '..': ../../etc/evil" });
    await assert.rejects(lstat(m.getPath()), { code: 'ENOENT' });
    const abs = new ConfigMapPlugin(host).newMounter(
      spec({ name: 'abs', configMap: { name: 'cfg', items: [{ key: 'a', path: '/etc/evil' }] } }),
      pod(),
    );
    await assert.rejects(abs.setUp(args()), { message: 'invalid path: must be relative path: /etc/evil' });
  });

  test('a remount rewrites changed data, and removes keys that went away', async () => {
    const { host, objects } = setup();
    objects.setConfigMap('prod', 'cfg', { a: 'A1', b: 'B' });
    const m = new ConfigMapPlugin(host).newMounter(
      spec({ name: 'config', configMap: { name: 'cfg' } }),
      pod(),
    );
    await m.setUp(args());
    const first = await readlink(path.join(m.getPath(), '..data'));
    await m.setUp(args({ remount: true }));
    assert.equal(await readlink(path.join(m.getPath(), '..data')), first, 'unchanged data is not rewritten');
    objects.setConfigMap('prod', 'cfg', { a: 'A2' });
    await m.setUp(args({ remount: true }));
    assert.equal(await readFile(path.join(m.getPath(), 'a'), 'utf8'), 'A2');
    await assert.rejects(lstat(path.join(m.getPath(), 'b')), { code: 'ENOENT' });
  });
});

describe('secret', () => {
  test('decoded data on a tmpfs of its own, with modes', async () => {
    const { host, objects, mounter } = setup();
    objects.setSecret('prod', 'creds', { user: 'admin', pass: 's3cret' });
    const m = new SecretPlugin(host).newMounter(
      spec({
        name: 'creds',
        secret: { secretName: 'creds', items: [{ key: 'pass', path: 'p', mode: 0o400 }] },
      }),
      pod(),
    );
    await m.setUp(args());
    assert.equal(m.getPath(), path.join(host.rootDir, 'pods/uid-1/volumes/kubernetes.io~secret/creds'));
    assert.equal(await readFile(path.join(m.getPath(), 'p'), 'utf8'), 's3cret');
    assert.equal(await mode(path.join(m.getPath(), 'p')), 0o400);
    const tmpfs = mounter.calls.filter((c) => c.op === 'mount');
    assert.equal(tmpfs.length, 1);
    assert.equal(tmpfs[0]?.fsType, 'tmpfs');
    assert.deepEqual(tmpfs[0]?.options, [`size=${64 * 1024 ** 2}`]);
    await assert.rejects(
      new SecretPlugin(host)
        .newMounter(spec({ name: 'x', secret: { secretName: 'gone' } }), pod())
        .setUp(args()),
      { message: 'secret "gone" not found' },
    );
    await assert.rejects(
      new SecretPlugin(host)
        .newMounter(
          spec({ name: 'y', secret: { secretName: 'creds', items: [{ key: 'k', path: 'k' }] } }),
          pod(),
        )
        .setUp(args()),
      { message: 'secret references non-existent secret key: k' },
    );
  });
});

describe('downwardAPI', () => {
  test('metadata fields and resources as files; labels and annotations as sorted key="value" lines', async () => {
    const { host } = setup();
    const m = new DownwardAPIPlugin(host).newMounter(
      spec({
        name: 'info',
        downwardAPI: {
          defaultMode: 0o444,
          items: [
            { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
            { path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } },
            { path: 'uid', fieldRef: { fieldPath: 'metadata.uid' } },
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
            { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' }, mode: 0o400 },
            { path: 'tier', fieldRef: { fieldPath: "metadata.labels['tier']" } },
            {
              path: 'cpu_limit',
              resourceFieldRef: { containerName: 'main', resource: 'limits.cpu', divisor: '1m' },
            },
            {
              path: 'mem_request',
              resourceFieldRef: { containerName: 'main', resource: 'requests.memory', divisor: '1Mi' },
            },
            { path: 'mem_limit', resourceFieldRef: { containerName: 'main', resource: 'limits.memory' } },
          ],
        },
      }),
      pod(),
    );
    await m.setUp(args());
    const read = (f: string) => readFile(path.join(m.getPath(), f), 'utf8');
    assert.equal(await read('name'), 'web');
    assert.equal(await read('namespace'), 'prod');
    assert.equal(await read('uid'), 'uid-1');
    assert.equal(await read('labels'), 'app="web"\ntier="front"');
    assert.equal(await read('annotations'), 'example.com/note="say \\"hi\\""');
    assert.equal(await read('tier'), 'front');
    assert.equal(await read('cpu_limit'), '500');
    assert.equal(await read('mem_request'), '32');
    assert.equal(await read('mem_limit'), String(64 * 1024 ** 2));
    assert.equal(await mode(path.join(m.getPath(), 'name')), 0o444);
    assert.equal(await mode(path.join(m.getPath(), 'annotations')), 0o400);
  });

  test('spec and status fields are for env only; an unknown container is an error', async () => {
    const { host } = setup();
    const m = new DownwardAPIPlugin(host).newMounter(
      spec({
        name: 'bad',
        downwardAPI: {
          items: [
            { path: 'ip', fieldRef: { fieldPath: 'status.podIP' } },
            { path: 'x', resourceFieldRef: { containerName: 'ghost', resource: 'limits.cpu' } },
          ],
        },
      }),
      pod(),
    );
    await assert.rejects(m.setUp(args()), {
      message: '[unsupported fieldPath: status.podIP, container ghost not found]',
    });
  });
});

describe('projected', () => {
  const kubeApiAccess: PodVolume = {
    name: 'kube-api-access-abcde',
    projected: {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
          },
        },
      ],
    },
  };

  test('the default kube-api-access volume: a bound token, the root CA and the namespace, on a tmpfs', async () => {
    const { host, objects, mounter } = setup();
    objects.setConfigMap('prod', 'kube-root-ca.crt', { 'ca.crt': '-----BEGIN CERTIFICATE-----' });
    const m = new ProjectedPlugin(host).newMounter(spec(kubeApiAccess), pod());
    await m.setUp(args());
    const dir = m.getPath();
    assert.equal(
      dir,
      path.join(host.rootDir, 'pods/uid-1/volumes/kubernetes.io~projected/kube-api-access-abcde'),
    );
    assert.equal(await readFile(path.join(dir, 'token'), 'utf8'), 'token-1');
    assert.equal(await readFile(path.join(dir, 'ca.crt'), 'utf8'), '-----BEGIN CERTIFICATE-----');
    assert.equal(await readFile(path.join(dir, 'namespace'), 'utf8'), 'prod');
    for (const f of ['token', 'ca.crt', 'namespace']) assert.equal(await mode(path.join(dir, f)), 0o644, f);
    assert.deepEqual(objects.tokenRequests, [
      {
        namespace: 'prod',
        serviceAccountName: 'default',
        request: {
          spec: {
            audiences: undefined,
            expirationSeconds: 3607,
            boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1' },
          },
        },
      },
    ]);
    assert.equal(mounter.calls.filter((c) => c.op === 'mount' && c.fsType === 'tmpfs').length, 1);
    // A refresh before 80 % of the lifetime keeps the token.
    await m.setUp(args({ remount: true }));
    assert.equal(objects.tokenRequests.length, 1);
  });

  test("with fsGroup the token is 0600 before ownership opens it to the group; with one runAsUser it is that user's", async () => {
    const { host, objects } = setup();
    objects.setConfigMap('prod', 'kube-root-ca.crt', { 'ca.crt': 'CA' });
    const p = pod({ securityContext: { runAsUser: 1234 } });
    const m = new ProjectedPlugin(host).newMounter(spec(kubeApiAccess), p);
    if (!isRoot) return;
    await m.setUp(args({ fsGroup: 2000, fsUser: 1234 }));
    const st = await stat(path.join(m.getPath(), 'token'));
    assert.equal(st.uid, 1234);
    assert.equal(st.gid, 2000);
    assert.equal(st.mode & 0o777, 0o640);
    assert.equal(await mode(path.join(m.getPath(), 'ca.crt')), 0o644);
  });

  test("every source is tried and the errors are reported together; tearDown forgets the pod's tokens", async () => {
    const { host } = setup();
    const plugin = new ProjectedPlugin(host);
    const m = plugin.newMounter(
      spec({
        name: 'p',
        projected: {
          sources: [
            { configMap: { name: 'missing-cm' } },
            { secret: { name: 'missing-secret' } },
            { serviceAccountToken: { path: 't' } },
          ],
        },
      }),
      pod(),
    );
    await assert.rejects(m.setUp(args()), {
      message: '[configmap "missing-cm" not found, secret "missing-secret" not found]',
    });
    assert.equal(host.tokens.size, 1);
    await plugin.newUnmounter('p', 'uid-1').tearDown();
    assert.equal(host.tokens.size, 0);
  });
});
