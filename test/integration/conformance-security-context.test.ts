/**
 * The pod's and containers' security context as the runtime applies it, checked
 * from inside the container as upstream's node conformance "Security Context" cases
 * (test/e2e/common/node/security_context.go, sysctl.go) check it: `id`, /proc/self/status (CapEff,
 * NoNewPrivs, Seccomp), the root mount's flags, sysctl values and the namespaces' identities.
 *
 * Images with a user of their own come from a registry on loopback (scripts/registry.sh).
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Container, Pod } from '../../src/api/core-v1.js';
import { busybox, containerStatus, makePod, StandaloneNode } from '../helpers/conformance.js';
import { TestRegistry } from '../helpers/conformance-registry.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { freePort } from '../helpers/ports.js';

const ns = `it-conf-sc-${process.pid}`;
const RUN = 'exec sleep 3600';
// containerd's default set for a container: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID
// SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP.
const DEFAULT_CAPS = 0xa80425fbn;
const CAP_CHOWN = 0n;
const CAP_NET_ADMIN = 12n;

function statusField(status: string, field: string): string {
  const m = new RegExp(`^${field}:\\s*(.*)$`, 'm').exec(status);
  return m?.[1] ?? '';
}

describe('conformance: the security context', () => {
  let node: StandaloneNode | undefined;
  let registry: TestRegistry;
  const images: Record<string, string> = {};

  before(async () => {
    registry = await TestRegistry.start(await freePort());
    for (const [name, user] of [
      ['uid1234', '1234'],
      ['named', 'nobody'],
    ] as const) {
      images[name] = (
        await registry.push('busybox', 'docker.io/library/busybox:latest', `tsk/user-${name}`, 'v1', {
          User: user,
        })
      ).ref;
    }
  });

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  after(async () => {
    const cri = await CriInspector.connect();
    for (const image of Object.values(images))
      await cri.conn.images.removeImage({ image }).catch(() => undefined);
    cri.close();
    await registry.stop();
  });

  async function running(n: StandaloneNode, name: string): Promise<Pod> {
    return n.waitPod(name, 'Running', (p) => p.status?.phase === 'Running', 60_000);
  }

  test('users and groups: runAsUser, runAsGroup, supplementalGroups and fsGroup; the image user; runAsNonRoot', async () => {
    const n = (node = await StandaloneNode.start(ns));
    await n.createPod(
      makePod(ns, 'ids', {
        securityContext: { runAsUser: 1001, runAsGroup: 2002, supplementalGroups: [3003], fsGroup: 4004 },
        containers: [
          busybox('pod-level', RUN),
          // The container's own settings win over the pod's.
          busybox('container-level', RUN, { securityContext: { runAsUser: 5005, runAsGroup: 6006 } }),
        ],
      }),
    );
    const imageUser = (name: string, image: string, extra: Partial<Container> = {}): Pod =>
      makePod(ns, name, {
        containers: [
          { name: 'c', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', RUN], ...extra },
        ],
      });
    await n.createPod(imageUser('image-user', images.uid1234!));
    await n.createPod(
      imageUser('nonroot-image-user', images.uid1234!, { securityContext: { runAsNonRoot: true } }),
    );
    await n.createPod(
      imageUser('nonroot-root-image', 'busybox', { securityContext: { runAsNonRoot: true } }),
    );
    await n.createPod(
      imageUser('nonroot-explicit-root', 'busybox', {
        securityContext: { runAsNonRoot: true, runAsUser: 0 },
      }),
    );
    await n.createPod(
      imageUser('nonroot-named-user', images.named!, { securityContext: { runAsNonRoot: true } }),
    );

    const ids = await running(n, 'ids');
    // fsGroup comes first among the supplementary groups, as upstream lists them.
    assert.equal((await n.exec(ids, 'pod-level', ['id'])).trim(), 'uid=1001 gid=2002 groups=2002,3003,4004');
    assert.equal(
      (await n.exec(ids, 'container-level', ['id'])).trim(),
      'uid=5005 gid=6006 groups=3003,4004,6006',
    );
    assert.equal((await n.exec(await running(n, 'image-user'), 'c', ['id', '-u'])).trim(), '1234');
    assert.equal((await n.exec(await running(n, 'nonroot-image-user'), 'c', ['id', '-u'])).trim(), '1234');

    const refused = async (name: string, message: (p: Pod) => string) => {
      const p = await n.waitPod(
        name,
        'CreateContainerConfigError',
        (x) => containerStatus(x, 'c')?.state?.waiting?.reason === 'CreateContainerConfigError',
        60_000,
      );
      assert.equal(containerStatus(p, 'c')?.state?.waiting?.message, message(p), name);
    };
    const where = (p: Pod) => `(pod: "${p.metadata.name}_${ns}(${p.metadata.uid})", container: c)`;
    await refused(
      'nonroot-root-image',
      (p) => `container has runAsNonRoot and image will run as root ${where(p)}`,
    );
    await refused('nonroot-explicit-root', (p) => `container's runAsUser breaks non-root policy ${where(p)}`);
    await refused(
      'nonroot-named-user',
      (p) =>
        `container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root ${where(p)}`,
    );
  });

  test('privileges: privileged, capabilities add and drop, allowPrivilegeEscalation, readOnlyRootFilesystem', async () => {
    const n = (node = await StandaloneNode.start(ns));
    await n.createPod(
      makePod(ns, 'privileges', {
        containers: [
          busybox('default', RUN),
          busybox('privileged', RUN, { securityContext: { privileged: true } }),
          busybox('caps', RUN, {
            securityContext: { capabilities: { add: ['NET_ADMIN'], drop: ['CHOWN'] } },
          }),
          busybox('no-escalation', RUN, { securityContext: { allowPrivilegeEscalation: false } }),
          busybox('read-only', RUN, { securityContext: { readOnlyRootFilesystem: true } }),
        ],
      }),
    );
    const p = await running(n, 'privileges');
    const status = async (c: string) => n.exec(p, c, ['cat', '/proc/self/status']);
    const capEff = async (c: string) => BigInt(`0x${statusField(await status(c), 'CapEff')}`);

    assert.equal(await capEff('default'), DEFAULT_CAPS);
    // Privileged: every capability the runtime itself has.
    const ownBounding = BigInt(`0x${statusField(await readFile('/proc/self/status', 'utf8'), 'CapBnd')}`);
    assert.equal(await capEff('privileged'), ownBounding);
    const caps = await capEff('caps');
    assert.equal(caps, (DEFAULT_CAPS | (1n << CAP_NET_ADMIN)) & ~(1n << CAP_CHOWN));
    assert.equal(statusField(await status('default'), 'NoNewPrivs'), '0');
    assert.equal(statusField(await status('no-escalation'), 'NoNewPrivs'), '1');

    const rootMount = async (c: string) =>
      (await n.exec(p, c, ['cat', '/proc/mounts'])).split('\n').find((l) => l.split(' ')[1] === '/') ?? '';
    assert.match((await rootMount('read-only')).split(' ')[3] ?? '', /^ro\b/);
    assert.match((await rootMount('default')).split(' ')[3] ?? '', /^rw\b/);
    await assert.rejects(n.exec(p, 'read-only', ['touch', '/created']), /Read-only file system/);
    await n.exec(p, 'default', ['touch', '/created']);
  });

  test('seccomp (RuntimeDefault, Unconfined, Localhost) and procMount', async () => {
    const n = (node = await StandaloneNode.start(ns));
    // Localhost profiles live under <root-dir>/seccomp; this one refuses mkdir and allows the rest.
    const profileDir = path.join(n.kubelet.rootDir, 'seccomp', 'profiles');
    await mkdir(profileDir, { recursive: true });
    await writeFile(
      path.join(profileDir, 'no-mkdir.json'),
      JSON.stringify({
        defaultAction: 'SCMP_ACT_ALLOW',
        syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }],
      }),
    );
    await n.createPod(
      makePod(ns, 'seccomp', {
        securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          busybox('pod-default', RUN),
          busybox('unconfined', RUN, { securityContext: { seccompProfile: { type: 'Unconfined' } } }),
          busybox('localhost', RUN, {
            securityContext: {
              seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/no-mkdir.json' },
            },
          }),
          busybox('unmasked', RUN, { securityContext: { procMount: 'Unmasked' } }),
        ],
      }),
    );
    const p = await running(n, 'seccomp');
    const seccomp = async (c: string) =>
      statusField(await n.exec(p, c, ['cat', '/proc/self/status']), 'Seccomp');
    assert.equal(await seccomp('pod-default'), '2', 'the pod-level RuntimeDefault filters');
    assert.equal(await seccomp('unconfined'), '0');
    assert.equal(await seccomp('localhost'), '2');
    await assert.rejects(n.exec(p, 'localhost', ['mkdir', '/tmp/x']), /Operation not permitted/);
    await n.exec(p, 'pod-default', ['mkdir', '/tmp/x']);

    // The default proc mount hides /proc/keys and friends (masked with /dev/null); Unmasked does not.
    const masked = async (c: string) =>
      (await n.exec(p, c, ['cat', '/proc/mounts'])).split('\n').some((l) => l.split(' ')[1] === '/proc/keys');
    assert.equal(await masked('pod-default'), true);
    assert.equal(await masked('unmasked'), false);
  });

  test('sysctls (safe ones, and unsafe ones the node allows) and host namespaces', async () => {
    const n = (node = await StandaloneNode.start(ns, ['--allowed-unsafe-sysctls=kernel.msg*']));
    await n.createPod(
      makePod(ns, 'sysctls', {
        securityContext: {
          sysctls: [
            { name: 'kernel.shm_rmid_forced', value: '1' },
            { name: 'net.ipv4.ip_unprivileged_port_start', value: '1000' },
            { name: 'net/ipv4/ip_local_port_range', value: '20000 21000' },
            { name: 'kernel.msgmax', value: '10000' },
          ],
        },
        containers: [busybox('c', RUN)],
      }),
    );
    await n.createPod(
      makePod(ns, 'host-namespaces', {
        hostNetwork: true,
        hostPID: true,
        hostIPC: true,
        containers: [busybox('c', RUN)],
      }),
    );
    await n.createPod(makePod(ns, 'pod-namespaces', { containers: [busybox('c', RUN)] }));

    const p = await running(n, 'sysctls');
    const sysctl = async (name: string) =>
      (await n.exec(p, 'c', ['sysctl', '-n', name])).trim().replace(/\s+/g, ' ');
    assert.equal(await sysctl('kernel.shm_rmid_forced'), '1');
    assert.equal(await sysctl('net.ipv4.ip_unprivileged_port_start'), '1000');
    assert.equal(await sysctl('net.ipv4.ip_local_port_range'), '20000 21000');
    assert.equal(await sysctl('kernel.msgmax'), '10000');

    const own = async (kind: string) => readlink(`/proc/self/ns/${kind}`);
    const inPod = async (name: string, kind: string) =>
      (await n.exec(await running(n, name), 'c', ['readlink', `/proc/self/ns/${kind}`])).trim();
    for (const kind of ['net', 'pid', 'ipc']) {
      assert.equal(await inPod('host-namespaces', kind), await own(kind), `host ${kind}`);
      assert.notEqual(await inPod('pod-namespaces', kind), await own(kind), `pod ${kind}`);
    }
    const host = await running(n, 'host-namespaces');
    assert.equal(
      host.status?.podIP,
      undefined,
      'standalone: no pod IP for the host network (upstream: no API client)',
    );
  });
});
