import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import type { EventRecorder } from '../../../src/kuberuntime/event-recorder.js';
import { getPodDNS, parseResolvConf } from '../../../src/kuberuntime/pod-dns.js';
import {
  convertSysctlVariableToDotsSeparator,
  generatePodSandboxConfig,
  parsePodUidFromLogsDirectory,
  type SandboxConfigOptions,
} from '../../../src/kuberuntime/sandbox-config.js';

const hostDNS = {
  servers: ['192.168.1.1', '192.168.1.2'],
  searches: ['corp.example'],
  options: ['ndots:2', 'timeout:1'],
};

function opts(over: Partial<SandboxConfigOptions> = {}): SandboxConfigOptions {
  return {
    podLogsDir: '/var/log/pods',
    hostDNS,
    clusterDNS: ['10.96.0.10'],
    clusterDomain: 'cluster.local',
    nodeIPs: ['192.168.1.50'],
    cgroupParent: '',
    ...over,
  };
}

function pod(spec: Partial<Pod['spec']> = {}, name = 'web'): Pod {
  return {
    metadata: { name, namespace: 'prod', uid: 'u-1', labels: { app: 'web' }, annotations: { a: 'b' } },
    spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec },
  };
}

function capture(): { recorder: EventRecorder; events: string[] } {
  const events: string[] = [];
  return {
    events,
    recorder: {
      event: (_p, _f, type, reason, message) => events.push(`${type} ${reason} ${message}`),
      nodeEvent: (type, reason, message) => events.push(`node: ${type} ${reason} ${message}`),
    },
  };
}

test('metadata, hostname, log directory, labels and annotations', () => {
  const c = generatePodSandboxConfig(pod(), 2, opts());
  assert.deepEqual(c.metadata, { name: 'web', namespace: 'prod', uid: 'u-1', attempt: 2 });
  assert.equal(c.hostname, 'web');
  assert.equal(c.logDirectory, '/var/log/pods/prod_web_u-1');
  assert.equal(c.labels['io.kubernetes.pod.uid'], 'u-1');
  assert.equal(c.labels.app, 'web');
  assert.deepEqual(c.annotations, { a: 'b' });
  assert.equal(parsePodUidFromLogsDirectory('prod_web_u-1'), 'u-1');
  assert.equal(parsePodUidFromLogsDirectory('u-2'), 'u-2');
});

test('hostname: spec.hostname wins, long names are cut to 63 without a trailing dash or dot, FQDN on request', () => {
  assert.equal(generatePodSandboxConfig(pod({ hostname: 'myhost' }), 0, opts()).hostname, 'myhost');
  const long = `${'a'.repeat(62)}-bbbb`;
  assert.equal(generatePodSandboxConfig(pod({}, long), 0, opts()).hostname, 'a'.repeat(62));
  const fqdn = generatePodSandboxConfig(
    pod({ subdomain: 'sub', setHostnameAsFQDN: true }),
    0,
    opts(),
  ).hostname;
  assert.equal(fqdn, 'web.sub.prod.svc.cluster.local');
  assert.throws(
    () => generatePodSandboxConfig(pod({ hostname: 'Bad_Name' }), 0, opts()),
    /not a valid DNS label/,
  );
});

test('host network: no hostname, NODE network namespace, host DNS under ClusterFirst', () => {
  const c = generatePodSandboxConfig(pod({ hostNetwork: true }), 0, opts());
  assert.equal(c.hostname, '');
  assert.deepEqual(c.linux?.securityContext?.namespaceOptions, {
    network: 'NODE',
    pid: 'CONTAINER',
    ipc: 'POD',
  });
  assert.deepEqual(c.dnsConfig, hostDNS);
  const withHostNet = generatePodSandboxConfig(
    pod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }),
    0,
    opts(),
  );
  assert.deepEqual(withHostNet.dnsConfig?.servers, ['10.96.0.10']);
});

test('DNS ClusterFirst with cluster DNS: cluster server, cluster searches before the host ones, ndots:5', () => {
  const c = generatePodSandboxConfig(pod(), 0, opts());
  assert.deepEqual(c.dnsConfig, {
    servers: ['10.96.0.10'],
    searches: ['prod.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example'],
    options: ['ndots:5'],
  });
});

test('DNS ClusterFirst without cluster DNS falls back to Default and says so', () => {
  const { recorder, events } = capture();
  const c = generatePodSandboxConfig(pod(), 0, opts({ clusterDNS: [], recorder }));
  assert.deepEqual(c.dnsConfig, hostDNS);
  // Upstream's GetPodDNS: on the node, then on the pod.
  assert.deepEqual(events, [
    'node: Warning MissingClusterDNS kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.',
    'Warning MissingClusterDNS pod: "web_prod(u-1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.',
  ]);
});

test('DNS Default, None with dnsConfig, and no resolv.conf at all', () => {
  assert.deepEqual(generatePodSandboxConfig(pod({ dnsPolicy: 'Default' }), 0, opts()).dnsConfig, hostDNS);
  const none = getPodDNS(
    pod({
      dnsPolicy: 'None',
      dnsConfig: {
        nameservers: ['1.1.1.1'],
        searches: ['x.y'],
        options: [{ name: 'ndots', value: '1' }, { name: 'edns0' }],
      },
    }),
    opts(),
  );
  assert.deepEqual(none, { servers: ['1.1.1.1'], searches: ['x.y'], options: ['ndots:1', 'edns0'] });
  const noResolv = getPodDNS(pod({ dnsPolicy: 'Default' }), opts({ hostDNS: undefined }));
  assert.deepEqual(noResolv, { servers: ['127.0.0.1'], searches: ['.'], options: [] });
  // dnsConfig merges into the policy's result: duplicates once, options overridden by name.
  const merged = getPodDNS(
    pod({
      dnsPolicy: 'Default',
      dnsConfig: { nameservers: ['192.168.1.1', '9.9.9.9'], options: [{ name: 'ndots', value: '3' }] },
    }),
    opts(),
  );
  assert.deepEqual(merged, {
    servers: ['192.168.1.1', '192.168.1.2', '9.9.9.9'],
    searches: ['corp.example'],
    options: ['ndots:3', 'timeout:1'],
  });
});

test('DNS limits: at most 3 nameservers, with an event', () => {
  const { recorder, events } = capture();
  const c = getPodDNS(
    pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'] } }),
    opts({ recorder }),
  );
  assert.deepEqual(c.servers, ['1.1.1.1', '2.2.2.2', '3.3.3.3']);
  assert.match(events[0]!, /DNSConfigForming Nameserver limits were exceeded/);
});

test('resolv.conf parsing: nameservers accumulate, last search and options win, trailing dots trimmed', () => {
  const parsed = parseResolvConf(
    '# comment\nnameserver 1.1.1.1\nsearch a.example.\nnameserver 8.8.8.8\nsearch b.example c.example.\noptions ndots:1\noptions rotate\n',
  );
  assert.deepEqual(parsed.nameservers, ['1.1.1.1', '8.8.8.8']);
  assert.deepEqual(parsed.searches, ['b.example', 'c.example']);
  assert.deepEqual(parsed.options, ['rotate']);
  assert.deepEqual(parseResolvConf('nameserver\n').errors, ['nameserver list is empty ']);
});

test('port mappings: every declared port, TCP by default, duplicates once', () => {
  const c = generatePodSandboxConfig(
    pod({
      containers: [
        {
          name: 'a',
          ports: [
            { containerPort: 80, hostPort: 8080 },
            { containerPort: 80, hostPort: 8080 },
          ],
        },
        {
          name: 'b',
          ports: [
            { containerPort: 53, protocol: 'UDP', hostIP: '127.0.0.1', hostPort: 5353 },
            { containerPort: 9090 },
          ],
        },
      ],
    }),
    0,
    opts(),
  );
  assert.deepEqual(c.portMappings, [
    { protocol: 'TCP', containerPort: 80, hostPort: 8080, hostIp: '' },
    { protocol: 'UDP', containerPort: 53, hostPort: 5353, hostIp: '127.0.0.1' },
    { protocol: 'TCP', containerPort: 9090, hostPort: 0, hostIp: '' },
  ]);
});

test('linux config: cgroup parent, namespaces, sysctls, run-as, groups, privileged, seccomp', () => {
  const c = generatePodSandboxConfig(
    pod({
      hostPID: false,
      hostIPC: true,
      shareProcessNamespace: true,
      securityContext: {
        runAsUser: 1000,
        runAsGroup: 3000,
        fsGroup: 2000,
        supplementalGroups: [4000],
        sysctls: [
          { name: 'net.core.somaxconn', value: '1024' },
          { name: 'net/ipv4/conf/eno2.100/rp_filter', value: '1' },
        ],
      },
      containers: [{ name: 'app', securityContext: { privileged: true } }],
    }),
    0,
    opts({ cgroupParent: '/kubepods/besteffort/podu-1' }),
  );
  assert.equal(c.linux?.cgroupParent, '/kubepods/besteffort/podu-1');
  assert.deepEqual(c.linux?.sysctls, {
    'net.core.somaxconn': '1024',
    'net.ipv4.conf.eno2/100.rp_filter': '1',
  });
  const sc = c.linux?.securityContext;
  assert.deepEqual(sc?.namespaceOptions, { network: 'POD', pid: 'POD', ipc: 'NODE' });
  assert.deepEqual(sc?.runAsUser, { value: 1000 });
  assert.deepEqual(sc?.runAsGroup, { value: 3000 });
  assert.deepEqual(sc?.supplementalGroups, [2000, 4000]);
  assert.equal(sc?.privileged, true);
  assert.equal(sc?.seccomp?.profileType, 'RuntimeDefault');
  assert.equal(
    generatePodSandboxConfig(pod({ hostPID: true }), 0, opts()).linux?.securityContext?.namespaceOptions?.pid,
    'NODE',
  );
  assert.equal(convertSysctlVariableToDotsSeparator('kernel.shm_rmid_forced'), 'kernel.shm_rmid_forced');
});
