/**
 * A container's AppArmor profile as v1.30 finds it (upstream: pkg/security/apparmor GetProfile,
 * isRequired, and kuberuntime's getAppArmorProfile): the container's field, then the deprecated
 * `container.apparmor.security.beta.kubernetes.io/<name>` annotation (static pods may not have had
 * it synced to the field), then the pod's field.
 */
import type { AppArmorProfile, Container, Pod } from '../api/core-v1.js';
import type { SecurityProfile } from '../cri/types.js';

export const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';
export const APPARMOR_RUNTIME_DEFAULT = 'runtime/default';
export const APPARMOR_UNCONFINED = 'unconfined';
export const APPARMOR_LOCALHOST_PREFIX = 'localhost/';

function profileFromAnnotation(pod: Pod, containerName: string): AppArmorProfile | undefined {
  const value = pod.metadata.annotations?.[APPARMOR_ANNOTATION_PREFIX + containerName];
  if (value === undefined) return undefined;
  if (value === APPARMOR_RUNTIME_DEFAULT) return { type: 'RuntimeDefault' };
  if (value === APPARMOR_UNCONFINED) return { type: 'Unconfined' };
  // An empty name after the prefix is refused at admission.
  if (value.startsWith(APPARMOR_LOCALHOST_PREFIX))
    return { type: 'Localhost', localhostProfile: value.slice(APPARMOR_LOCALHOST_PREFIX.length) };
  return undefined; // Not a value the API knows: ignored, as upstream does.
}

export function getAppArmorProfile(pod: Pod, container: Container): AppArmorProfile | undefined {
  return (
    container.securityContext?.appArmorProfile ??
    profileFromAnnotation(pod, container.name) ??
    pod.spec.securityContext?.appArmorProfile
  );
}

/** Every container the pod runs: init, regular and ephemeral. */
function allContainers(pod: Pod): Container[] {
  return [
    ...(pod.spec.initContainers ?? []),
    ...pod.spec.containers,
    ...(pod.spec.ephemeralContainers ?? []),
  ];
}

/** Whether any container asks for a profile other than unconfined (upstream isRequired). */
export function isAppArmorRequired(pod: Pod): boolean {
  const podProfile = pod.spec.securityContext?.appArmorProfile;
  if (podProfile && podProfile.type !== 'Unconfined') return true;
  for (const c of allContainers(pod)) {
    const p = c.securityContext?.appArmorProfile;
    if (p && p.type !== 'Unconfined') return true;
  }
  // Upstream decides on the first annotation it meets (Go's map order); any confined one counts here.
  return Object.entries(pod.metadata.annotations ?? {}).some(
    ([k, v]) => k.startsWith(APPARMOR_ANNOTATION_PREFIX) && v !== APPARMOR_UNCONFINED,
  );
}

/** Why the pod cannot run where AppArmor is enabled: an empty Localhost profile name; undefined when it can. */
export function validateAppArmorProfiles(pod: Pod): string | undefined {
  for (const c of allContainers(pod)) {
    const p = getAppArmorProfile(pod, c);
    if (p?.type === 'Localhost' && (p.localhostProfile ?? '').trim() === '') {
      return `invalid empty AppArmor profile name: ${JSON.stringify(p)}`;
    }
  }
  return undefined;
}

/** The CRI profile and the deprecated string form v1.30 still sends for older runtimes. */
export function appArmorSecurityProfile(
  profile: AppArmorProfile | undefined,
): { apparmor: SecurityProfile; apparmorProfile: string } | undefined {
  if (!profile) return undefined;
  switch (profile.type) {
    case 'RuntimeDefault':
      return {
        apparmor: { profileType: 'RuntimeDefault', localhostRef: '' },
        apparmorProfile: APPARMOR_RUNTIME_DEFAULT,
      };
    case 'Unconfined':
      return {
        apparmor: { profileType: 'Unconfined', localhostRef: '' },
        apparmorProfile: APPARMOR_UNCONFINED,
      };
    case 'Localhost':
      if (profile.localhostProfile === undefined) throw new Error('missing localhost apparmor profile name');
      return {
        apparmor: { profileType: 'Localhost', localhostRef: profile.localhostProfile },
        apparmorProfile: APPARMOR_LOCALHOST_PREFIX + profile.localhostProfile,
      };
    default:
      throw new Error(
        `unknown apparmor profile type: ${JSON.stringify((profile as { type: unknown }).type)}`,
      );
  }
}
