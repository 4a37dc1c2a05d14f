/** A machine, a network, a runtime and a configuration for node status tests, all in memory. */
import type { Image, RuntimeCondition, RuntimeStatus, VersionResponse } from '../../../src/cri/types.js';
import type { MachineHost } from '../../../src/nodestatus/machine-info.js';
import type { NetworkHost } from '../../../src/nodestatus/host-ip.js';
import type { NodeStatusConfig, NodeStatusFlags } from '../../../src/nodestatus/node-status-manager.js';

export const MEMINFO = 'MemTotal:       24684092 kB\nMemFree:        1000 kB\n';
export const ROOT_FS_BYTES = 4096 * 25_000_000; // 95 GiB and a bit

export function fakeMachineHost(
  overrides: Partial<Record<string, string>> = {},
  fsBytes = ROOT_FS_BYTES,
): MachineHost & {
  files: Record<string, string>;
} {
  const files: Record<string, string> = {
    '/proc/meminfo': MEMINFO,
    '/etc/machine-id': '3d1219c7c4c5404aaa1f6d2a48adfda4\n',
    '/proc/sys/kernel/random/boot_id': 'bd552fd1-3a8b-424d-995d-37e744b88677\n',
    '/etc/os-release': 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\n',
    '/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages': '0\n',
    '/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages': '0\n',
  };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete files[k];
    else files[k] = v;
  }
  return {
    files,
    readFile: async (file) => {
      const text = files[file];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${file}`), { code: 'ENOENT' });
      return text;
    },
    readdir: async (dir) => {
      const names = new Set<string>();
      for (const f of Object.keys(files)) {
        if (f.startsWith(dir + '/')) names.add(f.slice(dir.length + 1).split('/')[0]!);
      }
      if (names.size === 0) throw Object.assign(new Error(`ENOENT: ${dir}`), { code: 'ENOENT' });
      return [...names];
    },
    fsCapacityBytes: async (dir) => {
      if (!dir.startsWith('/')) throw new Error('relative');
      return fsBytes;
    },
    numCpus: () => 2,
    kernelRelease: () => '6.1.0-test-amd64',
  };
}

export const ROUTE_TABLE = [
  'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT',
  'eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0',
  'cni0\t004DF40A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0',
  'eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0',
].join('\n');

export function fakeNetworkHost(
  opts: { lookup?: Record<string, string[]>; routes?: string | undefined } = {},
): NetworkHost {
  return {
    interfaces: () => ({
      lo: [
        { address: '127.0.0.1', family: 4, internal: true },
        { address: '::1', family: 6, internal: true },
      ],
      eth0: [
        { address: '192.0.2.2', family: 4, internal: false },
        { address: 'fd00::2', family: 6, internal: false },
        { address: 'fe80::fc:ff:fe00:1', family: 6, internal: false },
      ],
      cni0: [{ address: '10.244.77.1', family: 4, internal: false }],
    }),
    readRouteFile: async (family) =>
      'routes' in opts ? (family === 4 ? opts.routes : '') : family === 4 ? ROUTE_TABLE : '',
    lookupHost: async (name) => {
      const found = opts.lookup?.[name];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return found;
    },
  };
}

export const CONTAINERD_VERSION: VersionResponse = {
  version: '0.1.0',
  runtimeName: 'containerd',
  runtimeVersion: '1.6.20~ds1',
  runtimeApiVersion: 'v1',
};

export function image(id: string, size: number, tags: string[], digests: string[] = []): Image {
  return { id, size, repoTags: tags, repoDigests: digests, username: '', pinned: false };
}

/** A CRI runtime whose answers tests change as they go. */
export class FakeCri {
  versionError: Error | undefined;
  statusError: Error | undefined;
  imagesError: Error | undefined;
  conditions: RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  images: Image[] = [image('sha256:pause', 300_000, ['registry.k8s.io/pause:3.9'])];
  calls: string[] = [];

  async version(opts?: { timeoutMs?: number }): Promise<VersionResponse> {
    this.calls.push(`version ${opts?.timeoutMs ?? 'no-deadline'}`);
    if (this.versionError) throw this.versionError;
    return CONTAINERD_VERSION;
  }

  async status(
    _verbose?: boolean,
    opts?: { timeoutMs?: number },
  ): Promise<{ status: RuntimeStatus; info: Record<string, string> }> {
    this.calls.push(`status ${opts?.timeoutMs ?? 'no-deadline'}`);
    if (this.statusError) throw this.statusError;
    return { status: { conditions: structuredClone(this.conditions) }, info: {} };
  }

  async listImages(_filter?: unknown, opts?: { timeoutMs?: number }): Promise<Image[]> {
    this.calls.push(`listImages ${opts?.timeoutMs ?? 'no-deadline'}`);
    if (this.imagesError) throw this.imagesError;
    return structuredClone(this.images);
  }
}

export function nodeStatusConfig(overrides: Partial<NodeStatusConfig> = {}): NodeStatusConfig {
  return {
    registerNode: true,
    registerWithTaints: [],
    maxPods: 110,
    podsPerCore: 0,
    port: 10250,
    nodeStatusMaxImages: 50,
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    nodeLeaseDurationSeconds: 40,
    kubeReserved: {},
    systemReserved: {},
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '10%',
      'nodefs.inodesFree': '5%',
      'imagefs.available': '15%',
    },
    enableControllerAttachDetach: true,
    localStorageCapacityIsolation: true,
    providerID: '',
    ...overrides,
  };
}

export function nodeStatusFlags(overrides: Partial<NodeStatusFlags> = {}): NodeStatusFlags {
  return { nodeIP: '', nodeLabels: {}, rootDirectory: '/var/lib/kubelet', ...overrides };
}

/** Lets every promise that is ready run (the fake client and runtime answer in microtasks). */
export async function settle(rounds = 30): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
