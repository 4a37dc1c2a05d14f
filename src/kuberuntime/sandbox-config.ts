/**
 * The PodSandboxConfig for a pod (upstream: kubeGenericRuntimeManager.generatePodSandboxConfig and
 * generatePodSandboxLinuxConfig, with the kubelet's GeneratePodHostNameAndDomain).
 */
import path from 'node:path';
import type { Container, Pod } from '../api/core-v1.js';
import type {
  CriProtocol,
  DNSConfig,
  LinuxPodSandboxConfig,
  NamespaceMode,
  NamespaceOption,
  PodSandboxConfig,
  PortMapping,
} from '../cri/types.js';
import { KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { EventRecorder } from './event-recorder.js';
import { newPodAnnotations, newPodLabels } from './labels.js';
import { getPodDNS } from './pod-dns.js';
import { checkedPodUid } from '../api/pod-uid.js';

const log = logger('kuberuntime');

const HOSTNAME_MAX_LENGTH = 63;
// The Linux nodename field holds 64 characters plus the terminating NUL.
const FQDN_MAX_LENGTH = 64;

export interface SandboxConfigOptions {
  /** The root of pod log folders (--pod-logs-dir, default /var/log/pods). */
  podLogsDir: string;
  /** The node's parsed resolv.conf, read once for this sync; undefined when none is configured. */
  hostDNS: DNSConfig | undefined;
  clusterDNS: string[];
  clusterDomain: string;
  nodeIPs: string[];
  /**
   * The pod's cgroup parent. Upstream's cgroup manager gives `/kubepods/<qos>/pod<uid>` (cgroupfs
   * driver, cgroupsPerQOS); until this kubelet has a cgroup manager that creates those, '' leaves
   * the choice to the runtime.
   */
  cgroupParent: string;
  recorder?: EventRecorder;
}

/** `<podLogsDir>/<namespace>_<name>_<uid>` (upstream BuildPodLogsDirectory). */
export function buildPodLogsDirectory(
  podLogsDir: string,
  namespace: string,
  name: string,
  uid: string,
): string {
  return path.join(podLogsDir, `${namespace}_${name}_${uid}`);
}

/** `<podLogsDir>/<namespace>_<name>_<uid>/<container>` (upstream BuildContainerLogsDirectory). */
export function buildContainerLogsDirectory(podLogsDir: string, pod: Pod, containerName: string): string {
  const m = pod.metadata;
  return path.join(
    buildPodLogsDirectory(podLogsDir, m.namespace ?? '', m.name ?? '', checkedPodUid(m.uid)),
    containerName,
  );
}

/** The UID at the end of a pod log folder's name (both `<uid>` and `<ns>_<name>_<uid>` forms). */
export function parsePodUidFromLogsDirectory(name: string): string {
  const parts = name.split('_');
  return parts[parts.length - 1] ?? '';
}

export function generatePodSandboxConfig(
  pod: Pod,
  attempt: number,
  opts: SandboxConfigOptions,
): PodSandboxConfig {
  const m = pod.metadata;
  const config: PodSandboxConfig = {
    metadata: { name: m.name ?? '', namespace: m.namespace ?? '', uid: m.uid ?? '', attempt },
    hostname: '',
    logDirectory: buildPodLogsDirectory(
      opts.podLogsDir,
      m.namespace ?? '',
      m.name ?? '',
      checkedPodUid(m.uid),
    ),
    dnsConfig: getPodDNS(pod, {
      hostDNS: opts.hostDNS,
      clusterDNS: opts.clusterDNS,
      clusterDomain: opts.clusterDomain,
      nodeIPs: opts.nodeIPs,
      recorder: opts.recorder,
    }),
    portMappings: [],
    labels: newPodLabels(pod),
    annotations: newPodAnnotations(pod),
  };
  // A host-network pod keeps the node's hostname: the runtime uses the node's UTS namespace.
  if (!pod.spec.hostNetwork) {
    const { hostname, hostDomain } = generatePodHostNameAndDomain(pod, opts.clusterDomain);
    config.hostname = nodenameForKernel(hostname, hostDomain, pod.spec.setHostnameAsFQDN);
  }
  for (const c of pod.spec.containers) config.portMappings.push(...makePortMappings(c));
  config.linux = generatePodSandboxLinuxConfig(pod, opts.cgroupParent);
  return config;
}

/** The pod's hostname (spec.hostname, else its name, cut to 63) and its domain from spec.subdomain. */
export function generatePodHostNameAndDomain(
  pod: Pod,
  clusterDomain: string,
): { hostname: string; hostDomain: string } {
  let hostname = pod.metadata.name ?? '';
  if (pod.spec.hostname) {
    const problems = dns1123LabelProblems(pod.spec.hostname);
    if (problems.length > 0) {
      throw new KubeletError(
        'INVALID_MANIFEST',
        `pod Hostname "${pod.spec.hostname}" is not a valid DNS label: ${problems.join(';')}`,
      );
    }
    hostname = pod.spec.hostname;
  }
  hostname = truncatePodHostname(pod.metadata.name ?? '', hostname);
  let hostDomain = '';
  if (pod.spec.subdomain) {
    const problems = dns1123LabelProblems(pod.spec.subdomain);
    if (problems.length > 0) {
      throw new KubeletError(
        'INVALID_MANIFEST',
        `pod Subdomain "${pod.spec.subdomain}" is not a valid DNS label: ${problems.join(';')}`,
      );
    }
    hostDomain = `${pod.spec.subdomain}.${pod.metadata.namespace ?? ''}.svc.${clusterDomain}`;
  }
  return { hostname, hostDomain };
}

function truncatePodHostname(podName: string, hostname: string): string {
  if (hostname.length <= HOSTNAME_MAX_LENGTH) return hostname;
  let truncated = hostname.slice(0, HOSTNAME_MAX_LENGTH);
  log.error('Hostname for pod was too long, truncated it', {
    podName,
    hostnameMaxLen: HOSTNAME_MAX_LENGTH,
    truncatedHostname: truncated,
  });
  // A hostname must not end with '-' or '.'.
  truncated = truncated.replace(/[-.]+$/, '');
  if (truncated === '')
    throw new KubeletError('INVALID_MANIFEST', `hostname for pod "${podName}" was invalid: "${hostname}"`);
  return truncated;
}

function nodenameForKernel(
  hostname: string,
  hostDomain: string,
  setHostnameAsFQDN: boolean | undefined,
): string {
  if (hostDomain === '' || !setHostnameAsFQDN) return hostname;
  const fqdn = `${hostname}.${hostDomain}`;
  if (fqdn.length > FQDN_MAX_LENGTH) {
    throw new KubeletError(
      'INVALID_MANIFEST',
      `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long ` +
        `(${FQDN_MAX_LENGTH} characters is the max, ${fqdn.length} characters requested)`,
    );
  }
  return fqdn;
}

function dns1123LabelProblems(value: string): string[] {
  const problems: string[] = [];
  if (value.length > 63) problems.push('must be no more than 63 characters');
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(value)) {
    problems.push(
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " +
        'and must start and end with an alphanumeric character',
    );
  }
  return problems;
}

/**
 * Every declared port of the container (upstream MakePortMappings): the runtime maps those with a
 * hostPort; a name (or, without one, family-protocol-hostIP:containerPort:hostPort) counts once.
 */
export function makePortMappings(container: Container): PortMapping[] {
  const seen = new Set<string>();
  const out: PortMapping[] = [];
  for (const p of container.ports ?? []) {
    const protocol: CriProtocol = p.protocol ?? 'TCP';
    const hostIp = p.hostIP ?? '';
    const hostPort = p.hostPort ?? 0;
    const family = hostIp === '' ? 'any' : hostIp.includes(':') ? 'v6' : 'v4';
    const name = p.name || `${family}-${protocol}-${hostIp}:${p.containerPort}:${hostPort}`;
    if (seen.has(name)) {
      log.info('Port name conflicted, it is defined more than once', { portName: name });
      continue;
    }
    seen.add(name);
    out.push({ protocol, containerPort: p.containerPort, hostPort, hostIp });
  }
  return out;
}

export function networkNamespaceForPod(pod: Pod): NamespaceMode {
  return pod.spec.hostNetwork ? 'NODE' : 'POD';
}

export function pidNamespaceForPod(pod: Pod): NamespaceMode {
  if (pod.spec.hostPID) return 'NODE';
  if (pod.spec.shareProcessNamespace) return 'POD';
  return 'CONTAINER';
}

export function ipcNamespaceForPod(pod: Pod): NamespaceMode {
  return pod.spec.hostIPC ? 'NODE' : 'POD';
}

export function namespacesForPod(pod: Pod): NamespaceOption {
  return { network: networkNamespaceForPod(pod), pid: pidNamespaceForPod(pod), ipc: ipcNamespaceForPod(pod) };
}

function hasPrivilegedContainer(pod: Pod): boolean {
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  return all.some((c) => c.securityContext?.privileged === true);
}

/**
 * runc checks a sysctl's namespace with '.' separators; a name written with '/' separators (which
 * may then contain dots, as in an interface name) is converted by swapping the two.
 */
export function convertSysctlVariableToDotsSeparator(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === '.') return name;
  return name.replace(/[./]/g, (ch) => (ch === '.' ? '/' : '.'));
}

export function generatePodSandboxLinuxConfig(pod: Pod, cgroupParent: string): LinuxPodSandboxConfig {
  const sc = pod.spec.securityContext ?? {};
  const sysctls: Record<string, string> = {};
  for (const s of sc.sysctls ?? []) sysctls[convertSysctlVariableToDotsSeparator(s.name)] = s.value;
  const supplementalGroups: number[] = [];
  if (sc.fsGroup !== undefined) supplementalGroups.push(sc.fsGroup);
  supplementalGroups.push(...(sc.supplementalGroups ?? []));
  return {
    cgroupParent,
    sysctls,
    securityContext: {
      namespaceOptions: namespacesForPod(pod),
      runAsUser: sc.runAsUser === undefined ? undefined : { value: sc.runAsUser },
      runAsGroup: sc.runAsGroup === undefined ? undefined : { value: sc.runAsGroup },
      supplementalGroups,
      privileged: hasPrivilegedContainer(pod),
      // The sandbox always runs under the runtime's default profile, so that a pod-level profile
      // may be stricter than what the pause container needs (upstream issue 84623).
      seccomp: { profileType: 'RuntimeDefault', localhostRef: '' },
    },
  };
}
