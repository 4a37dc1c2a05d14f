/**
 * A pod's resolver configuration, its kubelet-managed /etc/hosts and its
 * hostname, read from inside its containers as upstream's conformance cases read them
 * (test/e2e/network/dns.go "DNS should support configurable pod DNS nameservers", "should provide
 * /etc/hosts entries for the cluster", test/e2e/common/node/kubelet_etc_hosts.go, and
 * pod_hostnamefqdn.go). In cluster mode, as the comparison with upstream runs: a host-network pod
 * then has the node's addresses.
 */
import assert from 'node:assert/strict';
import { readFile, rm, writeFile, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { busybox, ClusterNode, makePod } from '../helpers/conformance.js';

const ns = `it-conf-dns-${process.pid}`;
const CLUSTER_DNS = '10.96.0.10';
const CLUSTER_DOMAIN = 'cluster.local';
const RUN = 'exec sleep 3600';

interface Resolv {
  nameservers: string[];
  search: string[];
  options: string[];
}

function parseResolv(text: string): Resolv {
  const out: Resolv = { nameservers: [], search: [], options: [] };
  for (const line of text.split('\n')) {
    const [key, ...rest] = line.trim().split(/\s+/);
    if (key === 'nameserver' && rest[0]) out.nameservers.push(rest[0]);
    else if (key === 'search') out.search = rest;
    else if (key === 'options') out.options = rest;
  }
  return out;
}

describe('conformance: DNS, /etc/hosts and hostnames', () => {
  let node: ClusterNode | undefined;
  let dir: string;
  let resolvConf: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-conf-dns-'));
    resolvConf = path.join(dir, 'resolv.conf');
    // The node's resolver, as --resolv-conf names it.
    await writeFile(
      resolvConf,
      'nameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch example.internal corp.internal\noptions timeout:2 attempts:3\n',
    );
  });

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  after(() => rm(dir, { recursive: true, force: true }));

  async function start(): Promise<ClusterNode> {
    return (node = await ClusterNode.start(ns, [
      `--cluster-dns=${CLUSTER_DNS}`,
      `--cluster-domain=${CLUSTER_DOMAIN}`,
      `--resolv-conf=${resolvConf}`,
    ]));
  }

  async function running(n: ClusterNode, name: string): Promise<Pod> {
    return n.waitPod(name, 'Running', (p) => p.status?.phase === 'Running', 60_000);
  }

  test('dnsPolicy: ClusterFirst, Default, ClusterFirstWithHostNet, None with dnsConfig, and dnsConfig merged in', async () => {
    const n = await start();
    const pods: Pod[] = [
      makePod(ns, 'cluster-first', { dnsPolicy: 'ClusterFirst', containers: [busybox('c', RUN)] }),
      makePod(ns, 'default', { dnsPolicy: 'Default', containers: [busybox('c', RUN)] }),
      makePod(ns, 'hostnet-cluster-first', {
        hostNetwork: true,
        dnsPolicy: 'ClusterFirst',
        containers: [busybox('c', RUN)],
      }),
      makePod(ns, 'hostnet-with-hostnet', {
        hostNetwork: true,
        dnsPolicy: 'ClusterFirstWithHostNet',
        containers: [busybox('c', RUN)],
      }),
      makePod(ns, 'none', {
        dnsPolicy: 'None',
        dnsConfig: {
          nameservers: ['1.1.1.1'],
          searches: ['resolv.conf.local'],
          options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
        },
        containers: [busybox('c', RUN)],
      }),
      makePod(ns, 'merged', {
        dnsPolicy: 'ClusterFirst',
        dnsConfig: {
          nameservers: ['1.1.1.1'],
          searches: ['extra.local'],
          options: [{ name: 'ndots', value: '3' }],
        },
        containers: [busybox('c', RUN)],
      }),
    ];
    for (const p of pods) await n.createPod(p);
    const resolv = async (name: string) =>
      parseResolv(await n.exec(await running(n, name), 'c', ['cat', '/etc/resolv.conf']));
    const clusterSearch = [`${ns}.svc.${CLUSTER_DOMAIN}`, `svc.${CLUSTER_DOMAIN}`, CLUSTER_DOMAIN];
    const nodeResolv: Resolv = {
      nameservers: ['192.0.2.53', '192.0.2.54'],
      search: ['example.internal', 'corp.internal'],
      options: ['timeout:2', 'attempts:3'],
    };

    const clusterFirst: Resolv = {
      nameservers: [CLUSTER_DNS],
      search: [...clusterSearch, 'example.internal', 'corp.internal'],
      options: ['ndots:5'],
    };
    assert.deepEqual(await resolv('cluster-first'), clusterFirst);
    assert.deepEqual(await resolv('default'), nodeResolv);
    // A host-network pod with ClusterFirst resolves as the node does; ClusterFirstWithHostNet as the cluster.
    assert.deepEqual(await resolv('hostnet-cluster-first'), nodeResolv);
    assert.deepEqual(await resolv('hostnet-with-hostnet'), clusterFirst);
    assert.deepEqual(await resolv('none'), {
      nameservers: ['1.1.1.1'],
      search: ['resolv.conf.local'],
      options: ['ndots:2', 'edns0'],
    });
    assert.deepEqual(await resolv('merged'), {
      nameservers: [CLUSTER_DNS, '1.1.1.1'],
      search: [...clusterSearch, 'example.internal', 'corp.internal', 'extra.local'],
      options: ['ndots:3'],
    });
  });

  test('/etc/hosts: the pod name on its IP, hostname and subdomain, hostAliases; the node file for host-network pods', async () => {
    const n = await start();
    const aliases = [
      { ip: '123.45.67.89', hostnames: ['foo.remote', 'bar.remote'] },
      { ip: '127.0.0.1', hostnames: ['foo.local'] },
    ];
    await n.createPod(makePod(ns, 'plain', { containers: [busybox('c', RUN)] }));
    await n.createPod(
      makePod(ns, 'named', {
        hostname: 'myhost',
        subdomain: 'mysub',
        hostAliases: aliases,
        containers: [busybox('c', RUN)],
      }),
    );
    await n.createPod(
      makePod(ns, 'fqdn', {
        hostname: 'myhost',
        subdomain: 'mysub',
        setHostnameAsFQDN: true,
        containers: [busybox('c', RUN)],
      }),
    );
    await n.createPod(
      makePod(ns, 'hostnet', { hostNetwork: true, hostAliases: aliases, containers: [busybox('c', RUN)] }),
    );

    const header =
      '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' +
      'fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';
    const plain = await running(n, 'plain');
    assert.equal(await n.exec(plain, 'c', ['cat', '/etc/hosts']), `${header}${plain.status?.podIP}\tplain\n`);
    assert.equal((await n.exec(plain, 'c', ['hostname'])).trim(), 'plain');

    const named = await running(n, 'named');
    const fqdn = `myhost.mysub.${ns}.svc.${CLUSTER_DOMAIN}`;
    assert.equal(
      await n.exec(named, 'c', ['cat', '/etc/hosts']),
      `${header}${named.status?.podIP}\t${fqdn}\tmyhost\n` +
        '\n# Entries added by HostAliases.\n123.45.67.89\tfoo.remote\tbar.remote\n127.0.0.1\tfoo.local\n',
    );
    assert.equal((await n.exec(named, 'c', ['hostname'])).trim(), 'myhost');
    assert.equal((await n.exec(await running(n, 'fqdn'), 'c', ['hostname'])).trim(), fqdn);

    // Host network: the node's own hosts file, with the aliases after it; the node's hostname.
    const hostnet = await running(n, 'hostnet');
    const nodeHosts = await readFile('/etc/hosts', 'utf8');
    assert.equal(
      await n.exec(hostnet, 'c', ['cat', '/etc/hosts']),
      `# Kubernetes-managed hosts file (host network).\n${nodeHosts}` +
        '\n# Entries added by HostAliases.\n123.45.67.89\tfoo.remote\tbar.remote\n127.0.0.1\tfoo.local\n',
    );
    assert.equal((await n.exec(hostnet, 'c', ['hostname'])).trim(), os.hostname());
    assert.equal(hostnet.status?.podIP, hostnet.status?.hostIP, 'a host-network pod has the node address');
  });
});
