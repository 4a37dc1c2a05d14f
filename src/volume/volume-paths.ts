/**
 * Where a pod's volumes live on the node, as upstream lays them out, so a reader of a node (and a
 * restarted kubelet) finds them in the same places:
 *
 *   <root>/pods/<uid>/volumes/<kubernetes.io~plugin>/<volume>           the volume
 *   <root>/pods/<uid>/plugins/<kubernetes.io~plugin>/<volume>           the plugin's own notes (emptyDir's `ready`)
 *   <root>/pods/<uid>/volume-subpaths/<volume>/<container>/<index>      subPath bind mounts
 */
import path from 'node:path';

import { checkedPodUid } from '../api/pod-uid.js';

export const PODS_DIR_NAME = 'pods';
export const VOLUMES_DIR_NAME = 'volumes';
export const PLUGINS_DIR_NAME = 'plugins';
/** Upstream: containerSubPathDirectoryName. */
export const SUBPATHS_DIR_NAME = 'volume-subpaths';

/** `kubernetes.io/empty-dir` → `kubernetes.io~empty-dir`: a plugin name as one path element (upstream: EscapeQualifiedName). */
export function escapeQualifiedName(name: string): string {
  return name.replaceAll('/', '~');
}

/** The inverse of escapeQualifiedName, for names read back from disk. */
export function unescapeQualifiedName(name: string): string {
  return name.replaceAll('~', '/');
}

export function podDir(rootDir: string, podUid: string): string {
  return path.join(rootDir, PODS_DIR_NAME, podUid);
}

export function podVolumesDir(rootDir: string, podUid: string): string {
  return path.join(podDir(rootDir, podUid), VOLUMES_DIR_NAME);
}

export function podVolumeDir(
  rootDir: string,
  podUid: string,
  pluginName: string,
  volumeName: string,
): string {
  // Volumes are made here: never outside --root-dir, whatever a source said the UID is.
  return path.join(
    podVolumesDir(rootDir, checkedPodUid(podUid)),
    escapeQualifiedName(pluginName),
    volumeName,
  );
}

export function podPluginDir(
  rootDir: string,
  podUid: string,
  pluginName: string,
  volumeName: string,
): string {
  return path.join(
    podDir(rootDir, checkedPodUid(podUid)),
    PLUGINS_DIR_NAME,
    escapeQualifiedName(pluginName),
    volumeName,
  );
}

export function podSubpathsDir(rootDir: string, podUid: string): string {
  return path.join(podDir(rootDir, podUid), SUBPATHS_DIR_NAME);
}

/** The kubelet-owned target a subPath is bind-mounted on (upstream: getSubpathBindTarget). */
export function subpathBindTarget(
  rootDir: string,
  podUid: string,
  volumeName: string,
  containerName: string,
  mountIndex: number,
): string {
  // A container name is a DNS label, so it is safe as one path element.
  return path.join(podSubpathsDir(rootDir, podUid), volumeName, containerName, String(mountIndex));
}
