import type { ContainerConfig, PodSandboxConfig } from '../../../src/cri/types.js';

/** A sandbox config with every field the facade has set to something other than its default. */
export function fullSandboxConfig(name = 'web'): PodSandboxConfig {
  return {
    metadata: { name, uid: `uid-${name}`, namespace: 'default', attempt: 2 },
    hostname: name,
    logDirectory: `/var/log/pods/default_${name}_uid-${name}`,
    dnsConfig: { servers: ['10.96.0.10'], searches: ['default.svc.cluster.local'], options: ['ndots:5'] },
    portMappings: [{ protocol: 'UDP', containerPort: 53, hostPort: 5353, hostIp: '127.0.0.1' }],
    labels: {
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': `uid-${name}`,
    },
    annotations: { 'kubernetes.io/config.source': 'file' },
    linux: {
      cgroupParent: '/kubepods/besteffort/pod-uid',
      securityContext: {
        namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' },
        runAsUser: { value: 1000 },
        runAsGroup: { value: 3000 },
        readonlyRootfs: true,
        supplementalGroups: [4, 5],
        privileged: false,
        seccomp: { profileType: 'Localhost', localhostRef: '/var/lib/kubelet/seccomp/p.json' },
      },
      sysctls: { 'net.ipv4.ip_unprivileged_port_start': '0' },
      resources: {
        cpuPeriod: 100000,
        cpuQuota: 50000,
        cpuShares: 512,
        memoryLimitInBytes: 2 ** 40,
        oomScoreAdj: -998,
        cpusetCpus: '0-1',
        cpusetMems: '0',
        unified: { 'memory.high': '1000000' },
        memorySwapLimitInBytes: 2 ** 41,
      },
    },
  };
}

export function fullContainerConfig(name = 'app', attempt = 0): ContainerConfig {
  return {
    metadata: { name, attempt },
    image: {
      image: 'docker.io/library/busybox:latest',
      annotations: { a: 'b' },
      userSpecifiedImage: 'busybox',
    },
    command: ['sleep'],
    args: ['3600'],
    workingDir: '/work',
    envs: [{ key: 'GREETING', value: 'hello world' }],
    mounts: [
      {
        containerPath: '/data',
        hostPath: '/var/lib/kubelet/pods/u/volumes/data',
        readonly: true,
        selinuxRelabel: true,
        propagation: 'PROPAGATION_HOST_TO_CONTAINER',
      },
    ],
    labels: { 'io.kubernetes.container.name': name },
    annotations: { 'io.kubernetes.container.hash': 'abc123', 'io.kubernetes.container.restartCount': '0' },
    logPath: `${name}/${attempt}.log`,
    stdin: true,
    stdinOnce: true,
    tty: true,
    linux: {
      resources: {
        cpuPeriod: 100000,
        cpuQuota: 20000,
        cpuShares: 204,
        memoryLimitInBytes: 64 * 1024 * 1024,
        oomScoreAdj: 1000,
        cpusetCpus: '',
        cpusetMems: '',
        unified: {},
        memorySwapLimitInBytes: 0,
      },
      securityContext: {
        capabilities: { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] },
        privileged: false,
        namespaceOptions: { network: 'POD', pid: 'TARGET', ipc: 'POD', targetId: 'other' },
        runAsUser: { value: 0 },
        runAsGroup: { value: 0 },
        runAsUsername: '',
        readonlyRootfs: false,
        supplementalGroups: [],
        noNewPrivs: true,
        maskedPaths: ['/proc/kcore'],
        readonlyPaths: ['/proc/sys'],
        seccomp: { profileType: 'RuntimeDefault', localhostRef: '' },
      },
    },
  };
}

/** A minimal container config: what a test that does not care about the details sends. */
export function simpleContainerConfig(name: string, attempt = 0): ContainerConfig {
  return {
    metadata: { name, attempt },
    image: { image: 'busybox' },
    command: ['sleep', '3600'],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: { 'io.kubernetes.container.name': name },
    annotations: {},
    logPath: `${name}/${attempt}.log`,
    stdin: false,
    stdinOnce: false,
    tty: false,
  };
}
