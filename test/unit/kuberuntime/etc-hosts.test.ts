import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import {
  makeHostsMount,
  managedHostsFileContent,
  shouldMountHostsFile,
} from '../../../src/kuberuntime/etc-hosts.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'kuberuntime-hosts-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const HEADER =
  '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' +
  'fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';

test('managed content: the pod hostname on each IP, with the domain when there is one, then host aliases', () => {
  assert.equal(managedHostsFileContent(['10.0.0.5'], 'web', '', []), `${HEADER}10.0.0.5\tweb\n`);
  assert.equal(
    managedHostsFileContent(['10.0.0.5', 'fd00::5'], 'web', 'sub.prod.svc.cluster.local', [
      { ip: '1.2.3.4', hostnames: ['a', 'b'] },
    ]),
    `${HEADER}10.0.0.5\tweb.sub.prod.svc.cluster.local\tweb\nfd00::5\tweb.sub.prod.svc.cluster.local\tweb\n` +
      '\n# Entries added by HostAliases.\n1.2.3.4\ta\tb\n',
  );
});

test('mounted only with a pod IP and when the container does not mount its own /etc/hosts', () => {
  const plain: Container = { name: 'b' };
  assert.equal(shouldMountHostsFile(plain, ['10.0.0.5']), true);
  assert.equal(shouldMountHostsFile(plain, []), false);
  // Only the container that mounts its own /etc/hosts goes without the kubelet's (upstream decides per container).
  const own: Container = { name: 'a', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] };
  assert.equal(shouldMountHostsFile(own, ['10.0.0.5']), false);
});

test('the file is written under the pod folder; a host-network pod gets the node file', async () => {
  const pod: Pod = {
    metadata: { name: 'web' },
    spec: { containers: [], hostAliases: [{ ip: '9.9.9.9', hostnames: ['nine'] }] },
  };
  const podDir = path.join(dir, 'pods/u-1');
  const mount = await makeHostsMount(pod, {
    podDir,
    podIPs: ['10.0.0.5'],
    hostname: 'web',
    hostDomain: '',
    nodeHostsFile: '/nonexistent',
  });
  assert.deepEqual(mount, {
    containerPath: '/etc/hosts',
    hostPath: path.join(podDir, 'etc-hosts'),
    readonly: false,
    selinuxRelabel: false,
    propagation: 'PROPAGATION_PRIVATE',
  });
  assert.match(await readFile(mount.hostPath, 'utf8'), /^10\.0\.0\.5\tweb$/m);
  assert.equal((await stat(mount.hostPath)).mode & 0o777, 0o644);

  await writeFile(path.join(dir, 'node-hosts'), '127.0.0.1 localhost\n192.168.1.50 node-a\n');
  const hostNet: Pod = { ...pod, spec: { ...pod.spec, hostNetwork: true } };
  const m2 = await makeHostsMount(hostNet, {
    podDir,
    podIPs: ['192.168.1.50'],
    hostname: 'web',
    hostDomain: '',
    nodeHostsFile: path.join(dir, 'node-hosts'),
  });
  assert.equal(
    await readFile(m2.hostPath, 'utf8'),
    '# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n192.168.1.50 node-a\n\n# Entries added by HostAliases.\n9.9.9.9\tnine\n',
  );
});
