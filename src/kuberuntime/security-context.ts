/**
 * A container's Linux security context: the container's settings over the pod's (upstream:
 * securitycontext.DetermineEffectiveSecurityContext, determineEffectiveSecurityContext,
 * verifyRunAsNonRoot, getSeccompProfile).
 */
import path from 'node:path';
import type { Container, Pod, SeccompProfile, SecurityContext } from '../api/core-v1.js';
import type { Image, LinuxContainerSecurityContext, SecurityProfile } from '../cri/types.js';
import { KubeletError } from '../lib/errors.js';
import { appArmorSecurityProfile, getAppArmorProfile } from './apparmor.js';
import { formatPod } from './format.js';
import { namespacesForPod } from './sandbox-config.js';

// Kept in step with moby's defaults, as upstream does (pkg/securitycontext/util.go).
export const DEFAULT_MASKED_PATHS: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
export const DEFAULT_READONLY_PATHS: readonly string[] = [
  '/proc/bus',
  '/proc/fs',
  '/proc/irq',
  '/proc/sys',
  '/proc/sysrq-trigger',
];

/** The container's security context with the pod's run-as and seccomp settings filled in where it has none. */
export function determineEffectiveSecurityContext(pod: Pod, container: Container): SecurityContext {
  const effective: SecurityContext = { ...(container.securityContext ?? {}) };
  const podSc = pod.spec.securityContext;
  if (!podSc) return effective;
  if (effective.runAsUser === undefined && podSc.runAsUser !== undefined)
    effective.runAsUser = podSc.runAsUser;
  if (effective.runAsGroup === undefined && podSc.runAsGroup !== undefined)
    effective.runAsGroup = podSc.runAsGroup;
  if (effective.runAsNonRoot === undefined && podSc.runAsNonRoot !== undefined)
    effective.runAsNonRoot = podSc.runAsNonRoot;
  if (effective.seccompProfile === undefined && podSc.seccompProfile !== undefined)
    effective.seccompProfile = podSc.seccompProfile;
  return effective;
}

export interface SecurityContextOptions {
  /** The image's user, from ImageStatus, for when neither the container nor the pod names one. */
  image: Image | undefined;
  /** --seccomp-default: RuntimeDefault rather than Unconfined when no profile is set. */
  seccompDefault: boolean;
  /** Where Localhost seccomp profiles live: `<root-dir>/seccomp`. */
  seccompProfileRoot: string;
  /**
   * An ephemeral container's target (the runtime's ID): it joins that container's process namespace
   * when the pod's containers each have their own.
   */
  pidNamespaceTargetId?: string;
}

export function generateLinuxContainerSecurityContext(
  pod: Pod,
  container: Container,
  opts: SecurityContextOptions,
): LinuxContainerSecurityContext {
  const sc = determineEffectiveSecurityContext(pod, container);
  const podSc = pod.spec.securityContext;
  const privileged = sc.privileged === true;
  const unmasked = sc.procMount === 'Unmasked' || privileged;
  const namespaces = namespacesForPod(pod);
  if (opts.pidNamespaceTargetId !== undefined && namespaces.pid === 'CONTAINER') {
    namespaces.pid = 'TARGET';
    namespaces.targetId = opts.pidNamespaceTargetId;
  }
  const result: LinuxContainerSecurityContext = {
    privileged,
    runAsUsername: '',
    readonlyRootfs: sc.readOnlyRootFilesystem === true,
    supplementalGroups: [],
    noNewPrivs: sc.allowPrivilegeEscalation === false,
    maskedPaths: unmasked ? [] : [...DEFAULT_MASKED_PATHS],
    readonlyPaths: unmasked ? [] : [...DEFAULT_READONLY_PATHS],
    namespaceOptions: namespaces,
    seccomp: seccompProfile(sc.seccompProfile, opts),
  };
  const apparmor = appArmorSecurityProfile(getAppArmorProfile(pod, container));
  if (apparmor) {
    result.apparmor = apparmor.apparmor;
    result.apparmorProfile = apparmor.apparmorProfile;
  }
  if (sc.capabilities) {
    result.capabilities = {
      addCapabilities: [...(sc.capabilities.add ?? [])],
      dropCapabilities: [...(sc.capabilities.drop ?? [])],
    };
  }
  if (sc.runAsUser !== undefined) {
    result.runAsUser = { value: sc.runAsUser };
  } else if (opts.image?.uid !== undefined) {
    result.runAsUser = { value: opts.image.uid.value };
  } else if (opts.image?.username) {
    result.runAsUsername = opts.image.username;
  } else {
    // An image that names no user runs as root.
    result.runAsUser = { value: 0 };
  }
  if (sc.runAsGroup !== undefined) result.runAsGroup = { value: sc.runAsGroup };
  if (podSc?.fsGroup !== undefined) result.supplementalGroups.push(podSc.fsGroup);
  result.supplementalGroups.push(...(podSc?.supplementalGroups ?? []));
  return result;
}

function seccompProfile(profile: SeccompProfile | undefined, opts: SecurityContextOptions): SecurityProfile {
  if (!profile)
    return { profileType: opts.seccompDefault ? 'RuntimeDefault' : 'Unconfined', localhostRef: '' };
  if (profile.type === 'RuntimeDefault') return { profileType: 'RuntimeDefault', localhostRef: '' };
  if (profile.type === 'Localhost') {
    if (!profile.localhostProfile) {
      throw new KubeletError(
        'CREATE_CONTAINER_CONFIG',
        'localhostProfile must be set if seccompProfile type is Localhost.',
      );
    }
    return {
      profileType: 'Localhost',
      localhostRef: path.join(opts.seccompProfileRoot, profile.localhostProfile),
    };
  }
  return { profileType: 'Unconfined', localhostRef: '' };
}

/** With runAsNonRoot, refuses a container that would run as root (a CreateContainerConfigError). */
export function verifyRunAsNonRoot(pod: Pod, container: Container, image: Image | undefined): void {
  const sc = determineEffectiveSecurityContext(pod, container);
  if (sc.runAsNonRoot !== true) return;
  const where = `(pod: "${formatPod(pod)}", container: ${container.name})`;
  if (sc.runAsUser !== undefined) {
    if (sc.runAsUser === 0)
      throw new KubeletError(
        'CREATE_CONTAINER_CONFIG',
        `container's runAsUser breaks non-root policy ${where}`,
      );
    return;
  }
  const uid = image?.uid?.value;
  if (uid === undefined && image?.username) {
    throw new KubeletError(
      'CREATE_CONTAINER_CONFIG',
      `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root ${where}`,
    );
  }
  if ((uid ?? 0) === 0)
    throw new KubeletError(
      'CREATE_CONTAINER_CONFIG',
      `container has runAsNonRoot and image will run as root ${where}`,
    );
}
