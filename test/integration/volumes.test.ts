/**
 * Volumes end to end: the built kubelet in cluster mode against the in-process test API server and
 * the private containerd. What a container sees of each volume type (content, modes, owners, mount
 * types) is read from inside it through the CRI's ExecSync; failures are read from the pod's status
 * and Events as a user would; what the kubelet leaves on the host is checked on disk.
 *
 * One API server and one kubelet serve the whole file (each test uses pods of its own); the kubelet
 * syncs every 2 s so that refreshed data shows up quickly.
 */
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Container, Pod, PodSpec } from '../../src/api/core-v1.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import { realClock, type Clock } from '../../src/lib/clock.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { sleep, waitFor } from '../helpers/wait.js';

const ns = `it-volumes-${process.pid}`;
const nodeName = `it-volumes-node-${process.pid}`;
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The API server's clock, which the token rotation test sets back so that new tokens look old. */
let clockSkewMs = 0;
const skewedClock: Clock = {
  now: () => realClock.now() - clockSkewMs,
  setTimeout: (fn, ms) => realClock.setTimeout(fn, ms),
  clearTimeout: (h) => realClock.clearTimeout(h),
  sleep: (ms, signal) => realClock.sleep(ms, signal),
};

function b64(s: string): string {
  return Buffer.from(s).toString('base64');
}

function jwtClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
}

function busybox(name: string, script: string, extra: Partial<Container> = {}): Container {
  return { name, image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script], ...extra };
}

describe('volumes through the built kubelet, the test API server and containerd', () => {
  let cri: CriInspector;
  let server: TestApiServer;
  let kubelet: KubeletProcess;
  let configDir: string;
  let hostDir: string;

  const apiPod = (name: string) => server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
  const events = () => server.store.list('events', { namespace: ns }).items as unknown as CoreEvent[];
  const eventsFor = (pod: string) => events().filter((e) => e.involvedObject.name === pod);
  const withLog = async (err: unknown): Promise<never> => {
    throw new Error(`${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-8000)}`);
  };

  async function createPod(name: string, spec: Partial<PodSpec> & Pick<PodSpec, 'containers'>): Promise<Pod> {
    server.store.create('pods', {
      metadata: { name, namespace: ns, labels: { app: name, tier: 'test' }, annotations: { note: 'hello' } },
      spec: { nodeName, terminationGracePeriodSeconds: 1, ...spec },
    });
    return apiPod(name)!;
  }

  async function running(name: string, timeoutMs = 60_000): Promise<Pod> {
    return waitFor(
      `${name} to run`,
      () => {
        const p = apiPod(name);
        const all = p?.status?.containerStatuses ?? [];
        return all.length > 0 && all.every((c) => c.state?.running) ? p : undefined;
      },
      timeoutMs,
      200,
    ).catch(withLog);
  }

  async function exec(
    pod: string,
    container: string,
    script: string,
  ): Promise<{ out: string; code: number }> {
    const id = apiPod(pod)
      ?.status?.containerStatuses?.find((c) => c.name === container)
      ?.containerID?.replace(/^containerd:\/\//, '');
    if (!id) throw new Error(`no container ${container} in ${pod}`);
    const r = await cri.conn.runtime.execSync(id, ['sh', '-c', script], 20);
    return { out: r.stdout.toString('utf8') + r.stderr.toString('utf8'), code: r.exitCode };
  }

  async function sh(pod: string, script: string, container = 'main'): Promise<string> {
    const r = await exec(pod, container, script);
    assert.equal(r.code, 0, `${script} failed: ${r.out}`);
    return r.out.trim();
  }

  async function deleteAndWait(name: string): Promise<string> {
    const uid = apiPod(name)?.metadata.uid ?? '';
    server.store.delete('pods', name, ns, { gracePeriodSeconds: 1 });
    await waitFor(`${name} to be deleted`, () => apiPod(name) === undefined, 60_000, 200).catch(withLog);
    return uid;
  }

  before(async () => {
    cri = await CriInspector.connect();
    configDir = await mkdtemp(path.join(os.tmpdir(), 'it-volumes-'));
    hostDir = path.join(configDir, 'host');
    await mkdir(hostDir);
    server = await startTestApiServer({ nodeName, clock: skewedClock });
    server.store.create('namespaces', { metadata: { name: ns } });
    const kubeconfig = path.join(configDir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({
      nodeName,
      extraArgs: [
        `--kubeconfig=${kubeconfig}`,
        '--sync-frequency=2s',
        // Pod cgroups under /kubepods are shared with every other kubelet on the machine, and each
        // removes the pod cgroups it does not know: without them, this kubelet's pods are its own.
        '--cgroups-per-qos=false',
        '--enforce-node-allocatable=',
      ],
    });
    await kubelet.start();
    await waitFor('the node to register', () => server.store.tryGet('nodes', nodeName), 30_000);
  });

  after(async () => {
    // The kubelet tears down what it mounted: delete the pods left and give it a moment (the
    // helper's dispose unmounts whatever a failed run still leaves).
    if (kubelet?.isRunning()) {
      for (const p of server.store.list('pods', { namespace: ns }).items) {
        server.store.delete('pods', p.metadata.name ?? '', ns, { gracePeriodSeconds: 0 });
      }
      const podsDir = path.join(kubelet.rootDir, 'pods');
      await waitFor(
        'the kubelet to clean up its pods',
        async () => (await readdir(podsDir).catch(() => [])).length === 0,
        60_000,
        500,
      ).catch(() => undefined);
    }
    // For a failed run: KEEP_KUBELET_LOG=<file> keeps the whole kubelet log.
    if (process.env.KEEP_KUBELET_LOG) await writeFile(process.env.KEEP_KUBELET_LOG, await kubelet.logs());
    await kubelet?.dispose();
    await server?.stop();
    await cri.removeNamespace(ns);
    cri.close();
    await rm(configDir, { recursive: true, force: true });
  });

  test('each volume type as the container sees it: content, modes, owners, tmpfs, the default kube-api-access', async () => {
    server.store.create('configmaps', {
      metadata: { name: 'app-config', namespace: ns },
      data: { 'app.conf': 'color=blue\n', other: 'x' },
    });
    server.store.create('secrets', {
      metadata: { name: 'creds', namespace: ns },
      data: { username: b64('admin'), password: b64('s3cret') },
    });
    const made = path.join(hostDir, 'made');
    await createPod('types', {
      securityContext: { fsGroup: 2000 },
      volumes: [
        { name: 'scratch', emptyDir: {} },
        { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '8Mi' } },
        { name: 'made', hostPath: { path: made, type: 'DirectoryOrCreate' } },
        {
          name: 'config',
          configMap: { name: 'app-config', items: [{ key: 'app.conf', path: 'conf/app.conf', mode: 0o400 }] },
        },
        { name: 'creds', secret: { secretName: 'creds', defaultMode: 0o440 } },
        {
          name: 'info',
          downwardAPI: {
            items: [
              { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
              { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
              {
                path: 'mem_limit',
                resourceFieldRef: { containerName: 'main', resource: 'limits.memory', divisor: '1Mi' },
              },
            ],
          },
        },
        {
          name: 'vault-token',
          projected: {
            sources: [
              { serviceAccountToken: { audience: 'vault', expirationSeconds: 600, path: 'vault/token' } },
            ],
          },
        },
      ],
      containers: [
        busybox('main', 'exec sleep 3600', {
          resources: { limits: { memory: '64Mi' } },
          volumeMounts: [
            { name: 'scratch', mountPath: '/scratch' },
            { name: 'mem', mountPath: '/mem' },
            { name: 'made', mountPath: '/made' },
            { name: 'config', mountPath: '/config' },
            { name: 'creds', mountPath: '/creds' },
            { name: 'info', mountPath: '/info' },
            { name: 'vault-token', mountPath: '/vault' },
          ],
        }),
      ],
    });
    const p = await running('types');
    const uid = p.metadata.uid ?? '';

    // emptyDir on disk: 0777, and with fsGroup the group and setgid.
    assert.equal(await sh('types', 'stat -c "%a %g" /scratch'), '2777 2000');
    // Memory: a tmpfs of 8 MiB.
    assert.match(await sh('types', 'grep " /mem " /proc/mounts'), /^tmpfs \/mem tmpfs .*size=8192k/);
    // hostPath DirectoryOrCreate: made on the host as 0755.
    assert.equal((await stat(made)).mode & 0o777, 0o755);
    await sh('types', 'echo from-container > /made/f');
    assert.equal(await readFile(path.join(made, 'f'), 'utf8'), 'from-container\n');
    // configMap items: only the listed key, at its path, its mode opened to the fsGroup; read-only.
    assert.equal(await sh('types', 'cat /config/conf/app.conf'), 'color=blue');
    assert.equal(await sh('types', 'stat -L -c "%a %g" /config/conf/app.conf'), '440 2000');
    assert.equal(await sh('types', 'ls /config'), 'conf');
    const ro = await exec('types', 'main', 'touch /config/x');
    assert.notEqual(ro.code, 0);
    assert.match(ro.out, /Read-only file system/);
    // secret: decoded, defaultMode, on a tmpfs.
    assert.equal(await sh('types', 'cat /creds/password'), 's3cret');
    assert.equal(await sh('types', 'stat -L -c %a /creds/username'), '440');
    assert.match(await sh('types', 'grep " /creds " /proc/mounts'), /^tmpfs \/creds tmpfs ro/);
    // downwardAPI.
    assert.equal(await sh('types', 'cat /info/labels'), 'app="types"\ntier="test"');
    assert.equal(await sh('types', 'cat /info/name'), 'types');
    assert.equal(await sh('types', 'cat /info/mem_limit'), '64');
    // The default kube-api-access volume the API server added: token, CA, namespace.
    const token = await sh('types', `cat ${SA_DIR}/token`);
    const claims = jwtClaims(token);
    const k8s = claims['kubernetes.io'] as { namespace: string; pod: { name: string; uid: string } };
    assert.equal(k8s.namespace, ns);
    assert.deepEqual(k8s.pod, { name: 'types', uid });
    assert.equal(await sh('types', `cat ${SA_DIR}/namespace`), ns);
    assert.equal(await sh('types', `cat ${SA_DIR}/ca.crt`), (server.caPem ?? '').trim());
    // With fsGroup the token is 0600 opened to 0640 for the group.
    assert.equal(await sh('types', `stat -L -c "%a %g" ${SA_DIR}/token`), '640 2000');
    // A projected token with its own audience and lifetime.
    const vault = jwtClaims(await sh('types', 'cat /vault/vault/token'));
    assert.deepEqual(vault.aud, ['vault']);
    assert.equal((vault.exp as number) - (vault.iat as number), 600);

    // On the host: upstream's layout, and the AtomicWriter's links.
    const vols = path.join(kubelet.rootDir, 'pods', uid, 'volumes');
    assert.deepEqual((await readdir(vols)).sort(), [
      'kubernetes.io~configmap',
      'kubernetes.io~downward-api',
      'kubernetes.io~empty-dir',
      'kubernetes.io~projected',
      'kubernetes.io~secret',
    ]);
    const cfg = path.join(vols, 'kubernetes.io~configmap/config');
    assert.ok((await lstat(path.join(cfg, 'conf'))).isSymbolicLink());
    assert.match(
      await import('node:fs/promises').then((fs) => fs.readlink(path.join(cfg, '..data'))),
      /^\.\.\d{4}_/,
    );
  });

  test('configMap and secret changes reach the volume on a later sync; a subPath mount keeps what it had', async () => {
    server.store.create('configmaps', {
      metadata: { name: 'live', namespace: ns },
      data: { greeting: 'hello' },
    });
    server.store.create('secrets', { metadata: { name: 'live', namespace: ns }, data: { key: b64('v1') } });
    await createPod('live', {
      volumes: [
        { name: 'config', configMap: { name: 'live' } },
        { name: 'secret', secret: { secretName: 'live' } },
      ],
      containers: [
        busybox('main', 'exec sleep 3600', {
          volumeMounts: [
            { name: 'config', mountPath: '/config' },
            { name: 'config', mountPath: '/pinned/greeting', subPath: 'greeting' },
            { name: 'secret', mountPath: '/secret' },
          ],
        }),
      ],
    });
    await running('live');
    assert.equal(await sh('live', 'cat /config/greeting'), 'hello');
    assert.equal(await sh('live', 'cat /pinned/greeting'), 'hello');

    const cm = server.store.get('configmaps', 'live', ns);
    server.store.update('configmaps', { ...cm, data: { greeting: 'bonjour', added: 'new' } } as never);
    const sec = server.store.get('secrets', 'live', ns);
    server.store.update('secrets', { ...sec, data: { key: b64('v2') } } as never);
    await waitFor(
      'the new configMap data',
      async () => (await sh('live', 'cat /config/greeting')) === 'bonjour',
      30_000,
      500,
    );
    assert.equal(await sh('live', 'cat /config/added'), 'new');
    await waitFor(
      'the new secret data',
      async () => (await sh('live', 'cat /secret/key')) === 'v2',
      30_000,
      500,
    );
    // subPath mounts are bound to the file as it was (as upstream: they never see updates).
    assert.equal(await sh('live', 'cat /pinned/greeting'), 'hello');
  });

  test('projected tokens are renewed once 80 % of their lifetime has passed', async () => {
    // New tokens come out 2890 s old (3607 s lifetime, renewal after 2885 s): every sync renews.
    clockSkewMs = 2890_000;
    try {
      await createPod('rotate', { containers: [busybox('main', 'exec sleep 3600')] });
      await running('rotate');
      const first = await sh('rotate', `cat ${SA_DIR}/token`);
      const second = await waitFor(
        'a renewed token',
        async () => {
          const t = await sh('rotate', `cat ${SA_DIR}/token`);
          return t !== first ? t : undefined;
        },
        30_000,
        500,
      ).catch(withLog);
      assert.ok((jwtClaims(second).iat as number) > (jwtClaims(first).iat as number) || second !== first);
      // Fresh tokens from now on: renewal stops.
      clockSkewMs = 0;
      const fresh = await waitFor(
        'a fresh token',
        async () => {
          const t = await sh('rotate', `cat ${SA_DIR}/token`);
          const c = jwtClaims(t);
          return Math.abs((c.iat as number) - Date.now() / 1000) < 60 ? t : undefined;
        },
        30_000,
        500,
      );
      await sleep(6000);
      assert.equal(await sh('rotate', `cat ${SA_DIR}/token`), fresh, 'a fresh token is kept');
      const requests = server.requests.filter(
        (r) => r.resource === 'serviceaccounts' && r.subresource === 'token',
      );
      assert.ok(requests.length >= 3, `TokenRequests: ${requests.length}`);
      assert.ok(requests.every((r) => r.user === server.nodeUser && r.code === 201));
    } finally {
      clockSkewMs = 0;
    }
  });

  test('an emptyDir survives a container restart and a kubelet restart', async () => {
    const script =
      'n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; ' +
      'echo $n > /mem/n; [ $n -ge 2 ] || exit 1; exec sleep 3600';
    await createPod('keep', {
      volumes: [
        { name: 'data', emptyDir: {} },
        { name: 'mem', emptyDir: { medium: 'Memory' } },
      ],
      containers: [
        busybox('main', script, {
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'mem', mountPath: '/mem' },
          ],
        }),
      ],
    });
    // The first run exits; the restart (after a 10 s back-off) finds its file. The evented PLEG
    // can report the first run's brief Running state, so wait for a running container that has
    // restarted at least once.
    const p = await waitFor(
      'keep to run after its first restart',
      () => {
        const pod = apiPod('keep');
        const c = pod?.status?.containerStatuses?.[0];
        return c?.state?.running && (c.restartCount ?? 0) >= 1 ? pod : undefined;
      },
      90_000,
      200,
    ).catch(withLog);
    assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 1);
    assert.equal(await sh('keep', 'cat /data/n'), '2');

    // The kubelet dies and comes back; the pod keeps running and its volumes stay.
    await kubelet.stop('SIGKILL');
    await kubelet.start();
    await sleep(3000);
    assert.equal(await sh('keep', 'cat /data/n'), '2');
    // Now the container dies: the restarted kubelet restarts it onto the same volumes.
    const id =
      apiPod('keep')?.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '') ?? '';
    await cri.conn.runtime.stopContainer(id, 0);
    await waitFor(
      'the container to restart',
      () => {
        const cs = apiPod('keep')?.status?.containerStatuses?.[0];
        return cs?.restartCount === 2 && cs.state?.running ? cs : undefined;
      },
      90_000,
      500,
    ).catch(withLog);
    assert.equal(await sh('keep', 'cat /data/n'), '3');
    assert.equal(await sh('keep', 'cat /mem/n'), '3');
    assert.match(await sh('keep', 'grep " /mem " /proc/mounts'), /^tmpfs /);
  });

  test('subPaths: made when missing, subPathExpr expanded; escapes and absolute or .. paths refused', async () => {
    await createPod('subpaths', {
      volumes: [{ name: 'data', emptyDir: {} }],
      initContainers: [
        busybox('plant', 'mkdir -p /data/real && echo inside > /data/real/f && ln -sfn /etc /data/escape', {
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        }),
      ],
      containers: [
        busybox('main', 'exec sleep 3600', {
          env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
          volumeMounts: [
            { name: 'data', mountPath: '/made', subPath: 'new/dir' },
            { name: 'data', mountPath: '/byname', subPathExpr: 'logs/$(POD_NAME)' },
            { name: 'data', mountPath: '/real', subPath: 'real' },
          ],
        }),
        busybox('escape', 'exec sleep 3600', {
          volumeMounts: [{ name: 'data', mountPath: '/x', subPath: 'escape' }],
        }),
        busybox('absolute', 'exec sleep 3600', {
          volumeMounts: [{ name: 'data', mountPath: '/x', subPath: '/etc' }],
        }),
        busybox('backsteps', 'exec sleep 3600', {
          volumeMounts: [{ name: 'data', mountPath: '/x', subPath: 'a/../../..' }],
        }),
      ],
    });
    const waiting = await waitFor(
      'main to run and the others to be refused',
      () => {
        const p = apiPod('subpaths');
        const cs = p?.status?.containerStatuses ?? [];
        const main = cs.find((c) => c.name === 'main');
        const refused = cs.filter((c) => c.state?.waiting?.reason === 'CreateContainerConfigError');
        return main?.state?.running && refused.length === 3 ? cs : undefined;
      },
      60_000,
      250,
    ).catch((err: unknown) =>
      withLog(
        new Error(
          `${(err as Error).message}: ${JSON.stringify(apiPod('subpaths')?.status?.containerStatuses)}`,
        ),
      ),
    );
    const msg = (name: string) => waiting.find((c) => c.name === name)?.state?.waiting?.message;
    assert.equal(msg('escape'), 'failed to prepare subPath for volumeMount "data" of container "escape"');
    assert.equal(msg('absolute'), 'error SubPath `/etc` must not be an absolute path');
    assert.equal(msg('backsteps'), "unable to provision SubPath `a/../../..`: must not contain '..'");
    assert.ok(
      eventsFor('subpaths').some(
        (e) => e.reason === 'Failed' && e.message?.includes('failed to prepare subPath'),
      ),
    );

    await sh('subpaths', 'echo made > /made/f && echo named > /byname/f');
    assert.equal(await sh('subpaths', 'cat /real/f'), 'inside');
    const uid = apiPod('subpaths')?.metadata.uid ?? '';
    const vol = path.join(kubelet.rootDir, 'pods', uid, 'volumes/kubernetes.io~empty-dir/data');
    assert.equal(await readFile(path.join(vol, 'new/dir/f'), 'utf8'), 'made\n');
    assert.equal(await readFile(path.join(vol, 'logs/subpaths/f'), 'utf8'), 'named\n');
    assert.equal((await stat(path.join(vol, 'new/dir'))).mode & 0o777, 0o777);
    // The runtime was given kubelet-owned bind targets, never paths inside the volume.
    const targets = await readdir(path.join(kubelet.rootDir, 'pods', uid, 'volume-subpaths/data/main'));
    assert.deepEqual(targets.sort(), ['0', '1', '2']);
    // The host's /etc was never handed out.
    assert.equal((await exec('subpaths', 'main', 'ls /real')).out.trim(), 'f');
  });

  test('bad input: a clear FailedMount, the pod waits, other pods are unaffected; fixed input recovers', async () => {
    const file = path.join(hostDir, 'a-file');
    await writeFile(file, '');
    await createPod('bad-cm', {
      volumes: [{ name: 'cfg', configMap: { name: 'missing' } }],
      containers: [
        busybox('main', 'exec sleep 3600', { volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] }),
      ],
    });
    server.store.create('configmaps', { metadata: { name: 'present', namespace: ns }, data: { a: 'A' } });
    await createPod('bad-path', {
      volumes: [{ name: 'cfg', configMap: { name: 'present', items: [{ key: 'a', path: '/abs/a' }] } }],
      containers: [
        busybox('main', 'exec sleep 3600', { volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] }),
      ],
    });
    await createPod('bad-type', {
      volumes: [{ name: 'dir', hostPath: { path: file, type: 'Directory' } }],
      containers: [busybox('main', 'exec sleep 3600', { volumeMounts: [{ name: 'dir', mountPath: '/d' }] })],
    });
    await createPod('fine', { containers: [busybox('main', 'exec sleep 3600')] });
    await running('fine');

    const failedMount = (pod: string, message: string) =>
      waitFor(
        `FailedMount for ${pod}`,
        () => eventsFor(pod).find((e) => e.reason === 'FailedMount' && e.message === message),
        30_000,
        250,
      ).catch(withLog);
    const e1 = await failedMount(
      'bad-cm',
      'MountVolume.SetUp failed for volume "cfg" : configmap "missing" not found',
    );
    assert.equal(e1.type, 'Warning');
    await failedMount(
      'bad-path',
      'MountVolume.SetUp failed for volume "cfg" : invalid path: must be relative path: /abs/a',
    );
    await failedMount(
      'bad-type',
      `MountVolume.SetUp failed for volume "dir" : hostPath type check failed: ${file} is not a directory`,
    );
    for (const name of ['bad-cm', 'bad-path', 'bad-type']) {
      const cs = apiPod(name)?.status?.containerStatuses?.[0];
      assert.equal(cs?.state?.waiting?.reason, 'ContainerCreating', name);
      assert.equal((await cri.podContainers(ns, name)).length, 0, `${name} has no containers`);
    }
    assert.ok(apiPod('fine')?.status?.containerStatuses?.[0]?.state?.running);
    assert.ok(kubelet.isRunning());

    // The configMap appears: the next attempt mounts it and the pod starts.
    server.store.create('configmaps', { metadata: { name: 'missing', namespace: ns }, data: { k: 'v' } });
    await running('bad-cm', 90_000);
    assert.equal(await sh('bad-cm', 'cat /cfg/k'), 'v');
    for (const name of ['bad-path', 'bad-type'])
      server.store.delete('pods', name, ns, { gracePeriodSeconds: 0 });
  });

  test('a PVC bound to a hostPath or local PV: node affinity, the data on the host, readOnly honoured', async () => {
    const node = server.store.get('nodes', nodeName) as { metadata: { labels?: Record<string, string> } };
    const hostname = node.metadata.labels?.['kubernetes.io/hostname'] ?? nodeName;
    const affinity = (host: string) => ({
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [host] }] },
        ],
      },
    });
    const pvDir = path.join(hostDir, 'pv-data');
    const localDir = path.join(hostDir, 'pv-local');
    await mkdir(pvDir);
    await mkdir(localDir);
    const bind = (claim: string, pv: string, source: object, nodeAffinity?: object) => {
      const pvc = server.store.create('persistentvolumeclaims', {
        metadata: { name: claim, namespace: ns },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: pv },
      } as never) as { metadata: { uid: string } };
      server.store.create('persistentvolumes', {
        metadata: { name: pv },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          claimRef: { namespace: ns, name: claim, uid: pvc.metadata.uid },
          ...source,
          ...(nodeAffinity ? { nodeAffinity } : {}),
        },
      } as never);
      const cur = server.store.get('persistentvolumeclaims', claim, ns);
      server.store.updateStatus('persistentvolumeclaims', { ...cur, status: { phase: 'Bound' } } as never);
    };
    bind(
      `host-claim-${process.pid}`,
      `pv-host-${process.pid}`,
      { hostPath: { path: pvDir, type: 'Directory' } },
      affinity(hostname),
    );
    bind(
      `local-claim-${process.pid}`,
      `pv-local-${process.pid}`,
      { local: { path: localDir } },
      affinity(hostname),
    );
    bind(
      `far-claim-${process.pid}`,
      `pv-far-${process.pid}`,
      { local: { path: localDir } },
      affinity('another-node'),
    );
    server.store.create('persistentvolumeclaims', {
      metadata: { name: 'unbound', namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'] },
    } as never);

    await createPod('claims', {
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: `host-claim-${process.pid}` } },
        { name: 'local', persistentVolumeClaim: { claimName: `local-claim-${process.pid}`, readOnly: true } },
      ],
      containers: [
        busybox('main', 'exec sleep 3600', {
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'local', mountPath: '/local' },
          ],
        }),
      ],
    });
    await createPod('far', {
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: `far-claim-${process.pid}` } }],
      containers: [
        busybox('main', 'exec sleep 3600', { volumeMounts: [{ name: 'data', mountPath: '/data' }] }),
      ],
    });
    await createPod('unbound', {
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'unbound' } }],
      containers: [
        busybox('main', 'exec sleep 3600', { volumeMounts: [{ name: 'data', mountPath: '/data' }] }),
      ],
    });
    await running('claims');
    await sh('claims', 'echo persisted > /data/f');
    assert.equal(await readFile(path.join(pvDir, 'f'), 'utf8'), 'persisted\n');
    const ro = await exec('claims', 'main', 'touch /local/f');
    assert.notEqual(ro.code, 0);
    assert.match(ro.out, /Read-only file system/);

    await waitFor(
      'the node affinity failure',
      () =>
        eventsFor('far').find(
          (e) =>
            e.reason === 'FailedMount' &&
            e.message ===
              `MountVolume.NodeAffinity check failed for volume "pv-far-${process.pid}" : no matching NodeSelectorTerms`,
        ),
      30_000,
    ).catch(withLog);
    await waitFor(
      'the unbound claim failure',
      () =>
        eventsFor('unbound').find(
          (e) =>
            e.reason === 'FailedMount' &&
            e.message ===
              `Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC ${ns}/unbound: PVC is not bound`,
        ),
      30_000,
    ).catch(withLog);
    for (const name of ['far', 'unbound']) server.store.delete('pods', name, ns, { gracePeriodSeconds: 0 });
  });

  test('mount propagation: a Bidirectional mount reaches the host and a HostToContainer neighbour', async () => {
    await createPod('propagation', {
      volumes: [{ name: 'shared', emptyDir: {} }],
      containers: [
        busybox(
          'mounter',
          // A well-behaved Bidirectional workload unmounts what it mounted before it goes.
          'mkdir -p /shared/inner && mount -t tmpfs -o size=1m none /shared/inner && echo hi > /shared/inner/f; ' +
            "trap 'umount /shared/inner; exit 0' TERM; while true; do sleep 1; done",
          {
            securityContext: { privileged: true },
            volumeMounts: [{ name: 'shared', mountPath: '/shared', mountPropagation: 'Bidirectional' }],
          },
        ),
        busybox('watcher', 'exec sleep 3600', {
          volumeMounts: [{ name: 'shared', mountPath: '/shared', mountPropagation: 'HostToContainer' }],
        }),
        busybox('plain', 'exec sleep 3600', {
          volumeMounts: [{ name: 'shared', mountPath: '/shared', mountPropagation: 'Bidirectional' }],
        }),
      ],
    });
    const refused = await waitFor(
      'the unprivileged Bidirectional container to be refused',
      () => {
        const waiting = apiPod('propagation')?.status?.containerStatuses?.find((c) => c.name === 'plain')
          ?.state?.waiting;
        return waiting?.reason === 'CreateContainerConfigError' ? waiting : undefined;
      },
      60_000,
    ).catch(withLog);
    assert.equal(refused.reason, 'CreateContainerConfigError');
    assert.equal(
      refused.message,
      'Bidirectional mount propagation is available only to privileged containers',
    );
    const uid = apiPod('propagation')?.metadata.uid ?? '';
    const inner = path.join(kubelet.rootDir, 'pods', uid, 'volumes/kubernetes.io~empty-dir/shared/inner');
    await waitFor(
      "the container's mount on the host",
      async () => (await readFile('/proc/self/mountinfo', 'utf8')).includes(` ${inner} `),
      60_000,
      250,
    ).catch(withLog);
    assert.equal(await readFile(path.join(inner, 'f'), 'utf8'), 'hi\n');
    await waitFor(
      'the watcher to run',
      () =>
        apiPod('propagation')?.status?.containerStatuses?.find((c) => c.name === 'watcher')?.state?.running,
      60_000,
    );
    assert.equal(await sh('propagation', 'cat /shared/inner/f', 'watcher'), 'hi');
    // The kubelet's root dir became a shared mount for this.
    const table = await readFile('/proc/self/mountinfo', 'utf8');
    const rootLine = table.split('\n').find((l) => l.split(' ')[4] === kubelet.rootDir);
    assert.match(rootLine ?? '', / shared:\d+/);
    await deleteAndWait('propagation');
    await waitFor(
      'the pod folder to go',
      () =>
        lstat(path.join(kubelet.rootDir, 'pods', uid)).then(
          () => false,
          () => true,
        ),
      30_000,
      250,
    ).catch(withLog);
  });

  test('deletion cleans up: volumes torn down, tmpfs unmounted, the pod folder removed, host data kept', async () => {
    const made = path.join(hostDir, 'kept');
    await createPod('cleanup', {
      volumes: [
        { name: 'mem', emptyDir: { medium: 'Memory' } },
        { name: 'disk', emptyDir: {} },
        { name: 'host', hostPath: { path: made, type: 'DirectoryOrCreate' } },
      ],
      containers: [
        busybox('main', 'exec sleep 3600', {
          volumeMounts: [
            { name: 'mem', mountPath: '/mem' },
            { name: 'disk', mountPath: '/disk', subPath: 'sub' },
            { name: 'host', mountPath: '/host' },
          ],
        }),
      ],
    });
    await running('cleanup');
    await sh('cleanup', 'echo x > /mem/f; echo y > /disk/f; echo z > /host/f');
    const uid = await deleteAndWait('cleanup');
    const podDir = path.join(kubelet.rootDir, 'pods', uid);
    await waitFor(
      'the pod folder to go',
      () =>
        lstat(podDir).then(
          () => false,
          () => true,
        ),
      30_000,
      250,
    ).catch(withLog);
    const mounts = await readFile('/proc/self/mountinfo', 'utf8');
    assert.ok(!mounts.includes(uid), 'no mount of the pod is left');
    assert.equal(await readFile(path.join(made, 'f'), 'utf8'), 'z\n');
  });
});
