/** A container's volume mount as CRI takes it: the propagation mode, and subPathExpr expanded. */
import type { VolumeMount } from '../api/core-v1.js';
import type { MountPropagation } from '../cri/types.js';
import { expand } from '../kuberuntime/container-env.js';
import { KubeletError } from '../lib/errors.js';

export function translateMountPropagation(
  mode: VolumeMount['mountPropagation'] | string | undefined,
): MountPropagation {
  switch (mode) {
    case undefined:
    case 'None':
      return 'PROPAGATION_PRIVATE';
    case 'HostToContainer':
      return 'PROPAGATION_HOST_TO_CONTAINER';
    case 'Bidirectional':
      return 'PROPAGATION_BIDIRECTIONAL';
    default:
      throw new KubeletError('CREATE_CONTAINER_CONFIG', `invalid MountPropagation mode: "${String(mode)}"`);
  }
}

/** A mount the pod spec makes impossible: reported as CreateContainerConfigError. */
export function configError(message: string): KubeletError {
  return new KubeletError('CREATE_CONTAINER_CONFIG', message);
}

/** upstream: ExpandContainerVolumeMounts; every reference must have a non-empty value. */
export function expandSubPathExpr(expr: string, envs: ReadonlyMap<string, string>): string {
  const missing = new Set<string>();
  const expanded = expand(expr, (name) => {
    const v = envs.get(name);
    if (v === undefined || v === '') missing.add(name);
    return v ?? '';
  });
  if (missing.size > 0) throw configError(`missing value for ${[...missing].sort().join(', ')}`);
  return expanded;
}
