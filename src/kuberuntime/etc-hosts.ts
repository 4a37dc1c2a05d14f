/**
 * The kubelet-managed /etc/hosts of a pod's containers (upstream kubelet_pods.go: makeHostsMount,
 * managedHostsFileContent, nodeHostsFileContent, hostsEntriesFromHostAliases): the pod's own
 * hostname on its IPs, plus spec.hostAliases; a host-network pod gets the node's file instead.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Container, HostAlias, Pod } from '../api/core-v1.js';
import type { Mount } from '../cri/types.js';

export const ETC_HOSTS_PATH = '/etc/hosts';

/**
 * Whether the kubelet mounts its hosts file into this container (upstream makeMounts): the pod has
 * an IP and the container does not mount something of its own at /etc/hosts.
 */
export function shouldMountHostsFile(container: Container, podIPs: string[]): boolean {
  if (podIPs.length === 0) return false;
  return !(container.volumeMounts ?? []).some((m) => m.mountPath === ETC_HOSTS_PATH);
}

export function managedHostsFileContent(
  podIPs: string[],
  hostname: string,
  hostDomain: string,
  hostAliases: HostAlias[],
): string {
  let out = '# Kubernetes-managed hosts file.\n';
  out += '127.0.0.1\tlocalhost\n';
  out += '::1\tlocalhost ip6-localhost ip6-loopback\n';
  out += 'fe00::0\tip6-localnet\n';
  out += 'fe00::0\tip6-mcastprefix\n';
  out += 'fe00::1\tip6-allnodes\n';
  out += 'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs)
    out += hostDomain ? `${ip}\t${hostname}.${hostDomain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + hostsEntriesFromHostAliases(hostAliases);
}

export function nodeHostsFileContent(nodeHosts: string, hostAliases: HostAlias[]): string {
  return `# Kubernetes-managed hosts file (host network).\n${nodeHosts}${hostsEntriesFromHostAliases(hostAliases)}`;
}

function hostsEntriesFromHostAliases(hostAliases: HostAlias[]): string {
  if (hostAliases.length === 0) return '';
  let out = '\n# Entries added by HostAliases.\n';
  for (const a of hostAliases) out += `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`;
  return out;
}

export interface HostsMountOptions {
  /** `<rootDir>/pods/<uid>`: the file is `<podDir>/etc-hosts`. */
  podDir: string;
  podIPs: string[];
  hostname: string;
  hostDomain: string;
  /** The node's hosts file, copied for host-network pods. */
  nodeHostsFile: string;
}

/** Writes the pod's hosts file (again, on every container start, as upstream does) and returns its mount. */
export async function makeHostsMount(pod: Pod, opts: HostsMountOptions): Promise<Mount> {
  const hostsPath = path.join(opts.podDir, 'etc-hosts');
  const aliases = pod.spec.hostAliases ?? [];
  const content = pod.spec.hostNetwork
    ? nodeHostsFileContent(await readFile(opts.nodeHostsFile, 'utf8'), aliases)
    : managedHostsFileContent(opts.podIPs, opts.hostname, opts.hostDomain, aliases);
  try {
    await writeFile(hostsPath, content, { mode: 0o644 });
  } catch (err) {
    // The pod's folder is made before its containers start (makePodDataDirs); a mkdir on every
    // container start, only for when it was not, cost as much as the write.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(opts.podDir, { recursive: true, mode: 0o750 });
    await writeFile(hostsPath, content, { mode: 0o644 });
  }
  return {
    containerPath: ETC_HOSTS_PATH,
    hostPath: hostsPath,
    readonly: false,
    selinuxRelabel: false,
    propagation: 'PROPAGATION_PRIVATE',
  };
}
