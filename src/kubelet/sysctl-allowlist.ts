/**
 * Which sysctls a pod may set (upstream: pkg/kubelet/sysctl allowlist.go and safe_sysctls.go, with
 * component-helpers' namespace rules): the safe set, plus the node's allowedUnsafeSysctls (names
 * or `prefix*` patterns). Only namespaced sysctls can be allowed at all; one of a namespace the pod
 * shares with the host (hostNetwork, hostIPC) is refused. A pod that sets another is rejected at
 * admission with SysctlForbidden.
 */
import os from 'node:os';
import type { Pod } from '../api/core-v1.js';

export const SYSCTL_FORBIDDEN_REASON = 'SysctlForbidden';

type SysctlNamespace = 'IPC' | 'Net' | '';

/** Safe sysctls and the kernel that first namespaced them (upstream safeSysctls, 1.30). */
const SAFE_SYSCTLS: readonly { name: string; kernel?: [number, number] }[] = [
  { name: 'kernel.shm_rmid_forced' },
  { name: 'net.ipv4.ip_local_port_range' },
  { name: 'net.ipv4.tcp_syncookies' },
  { name: 'net.ipv4.ping_group_range' },
  { name: 'net.ipv4.ip_unprivileged_port_start' },
  { name: 'net.ipv4.ip_local_reserved_ports', kernel: [3, 16] },
  { name: 'net.ipv4.tcp_keepalive_time', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_fin_timeout', kernel: [4, 6] },
  { name: 'net.ipv4.tcp_keepalive_intvl', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_keepalive_probes', kernel: [4, 5] },
];

const NAME_TO_NAMESPACE: Readonly<Record<string, SysctlNamespace>> = {
  'kernel.sem': 'IPC',
  'kernel.shmall': 'IPC',
  'kernel.shmmax': 'IPC',
  'kernel.shmmni': 'IPC',
  'kernel.shm_rmid_forced': 'IPC',
  'kernel.shm': 'IPC',
  'kernel.msgmax': 'IPC',
  'kernel.msgmnb': 'IPC',
  'kernel.msgmni': 'IPC',
  'kernel.msg': 'IPC',
};
const PREFIX_TO_NAMESPACE: Readonly<Record<string, SysctlNamespace>> = { net: 'Net', 'fs.mqueue': 'IPC' };

// Upstream's SysctlContainSlashPatternFmt, at most 253 characters.
const SYSCTL_PATTERN = /^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*(\*|[a-z0-9]([-_a-z0-9]*[a-z0-9])?\*?)$/;
const SYSCTL_MAX_LENGTH = 253;

/** `net/ipv4/conf/eth0.100/forwarding` → `net.ipv4.conf.eth0/100.forwarding` (upstream NormalizeName). */
export function normalizeSysctlName(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === '.') return name;
  return name.replace(/[./]/g, (ch) => (ch === '.' ? '/' : '.'));
}

function namespaceOf(name: string): SysctlNamespace {
  const direct = NAME_TO_NAMESPACE[name];
  if (direct !== undefined) return direct;
  for (const [prefix, ns] of Object.entries(PREFIX_TO_NAMESPACE))
    if (name.startsWith(`${prefix}.`)) return ns;
  return '';
}

/** The kernel's version as [major, minor]; undefined when it cannot be read. */
function kernelVersion(release = os.release()): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)/.exec(release);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** The safe sysctls this kernel namespaces (upstream SafeSysctlAllowlist). */
export function safeSysctlAllowlist(release?: string): string[] {
  const kernel = kernelVersion(release);
  return SAFE_SYSCTLS.filter(
    (s) =>
      !s.kernel ||
      (kernel !== undefined &&
        (kernel[0] > s.kernel[0] || (kernel[0] === s.kernel[0] && kernel[1] >= s.kernel[1]))),
  ).map((s) => s.name);
}

export type SysctlAdmitResult = { admit: true } | { admit: false; reason: string; message: string };

export class SysctlAllowlist {
  private readonly sysctls = new Map<string, SysctlNamespace>();
  private readonly prefixes = new Map<string, SysctlNamespace>();

  /** Throws on a pattern that is malformed or not namespaced: the kubelet refuses to start with it. */
  constructor(patterns: readonly string[]) {
    for (const pattern of patterns) {
      if (pattern.length > SYSCTL_MAX_LENGTH || !SYSCTL_PATTERN.test(pattern)) {
        throw new Error(
          `sysctl "${pattern}" must have at most ${SYSCTL_MAX_LENGTH} characters and match regex ${SYSCTL_PATTERN.source}`,
        );
      }
      let name = normalizeSysctlName(pattern);
      const star = name.indexOf('*');
      const prefixed = star !== -1;
      if (prefixed) name = name.slice(0, star);
      const ns = namespaceOf(name);
      if (ns === '') throw new Error(`the sysctls "${name}" are not known to be namespaced`);
      (prefixed ? this.prefixes : this.sysctls).set(name, ns);
    }
  }

  /** The safe sysctls and the node's allowedUnsafeSysctls. */
  static forNode(allowedUnsafeSysctls: readonly string[]): SysctlAllowlist {
    return new SysctlAllowlist([...safeSysctlAllowlist(), ...allowedUnsafeSysctls]);
  }

  admit(pod: Pod): SysctlAdmitResult {
    for (const s of pod.spec.securityContext?.sysctls ?? []) {
      const problem = this.validate(s.name, pod.spec.hostNetwork === true, pod.spec.hostIPC === true);
      if (problem)
        return { admit: false, reason: SYSCTL_FORBIDDEN_REASON, message: `forbidden sysctl: ${problem}` };
    }
    return { admit: true };
  }

  private validate(raw: string, hostNet: boolean, hostIPC: boolean): string | undefined {
    const name = normalizeSysctlName(raw);
    const sharesHost = (ns: SysctlNamespace) =>
      (ns === 'IPC' && hostIPC) || (ns === 'Net' && hostNet)
        ? `${JSON.stringify(name)} not allowed with host ${ns} enabled`
        : undefined;
    const exact = this.sysctls.get(name);
    if (exact !== undefined) return sharesHost(exact);
    for (const [prefix, ns] of this.prefixes) if (name.startsWith(prefix)) return sharesHost(ns);
    return `${JSON.stringify(name)} not allowlisted`;
  }
}
