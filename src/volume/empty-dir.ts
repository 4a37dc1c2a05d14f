/**
 * emptyDir (upstream: pkg/volume/emptydir): a folder of the pod's own, on the node's disk or, with
 * medium Memory, on a tmpfs sized by sizeLimit. It outlives container and kubelet restarts (a
 * `ready` note in the plugin folder says it was set up) and goes with the pod. It is also the
 * wrapper the API data volumes (configMap, secret, downwardAPI, projected) are written into.
 */
import { chmod, lstat, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pod, Quantity } from '../api/core-v1.js';
// The pod-level memory limit is cm's sum (upstream reads it through component-helpers' PodLimits);
// until that sum lives in api/, this is the one value a manager takes from a sibling.
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import { resourceConfigForPod } from '../cm/resource-config.js';
import { quantityValue } from '../api/quantity.js';
import { logger } from '../lib/log.js';
import { removeAllOneFilesystem } from './mounter.js';
import type {
  MounterArgs,
  VolumeAttributes,
  VolumeHost,
  VolumeMounter,
  VolumePlugin,
  VolumeSpec,
  VolumeUnmounter,
} from './volume-plugin.js';
import { podPluginDir, podVolumeDir } from './volume-paths.js';
import { setVolumeOwnership } from './volume-ownership.js';
import type { EmptyDirVolumeSource } from './volume-types.js';

const log = logger('volume');

export const EMPTY_DIR_PLUGIN_NAME = 'kubernetes.io/empty-dir';
/** An emptyDir on disk is open to every user: containers run as anyone. */
const EMPTY_DIR_MODE = 0o777;
const READY_FILE_NAME = 'ready';

export type StorageMedium = 'disk' | 'memory';

function mediumOf(source: EmptyDirVolumeSource): StorageMedium | { unsupported: string } {
  const medium = source.medium ?? '';
  if (medium === '') return 'disk';
  if (medium === 'Memory') return 'memory';
  return { unsupported: medium };
}

/**
 * A tmpfs's size: the node's allocatable memory, or less when the pod's memory limit or the
 * volume's sizeLimit is less (upstream: calculateEmptyDirMemorySize, SizeMemoryBackedVolumes on).
 */
export function emptyDirMemorySizeBytes(
  nodeAllocatableMemory: Quantity,
  sizeLimit: Quantity | undefined,
  pod: Pod,
): number {
  let size = quantityValue(nodeAllocatableMemory);
  const podLimit = resourceConfigForPod(pod, { enforceCPULimits: true, cpuPeriodUs: 100_000 }).memoryBytes;
  if (podLimit !== undefined && podLimit > 0n && Number(podLimit) <= size) size = Number(podLimit);
  if (sizeLimit !== undefined) {
    const limit = quantityValue(sizeLimit);
    if (limit > 0 && limit <= size) size = limit;
  }
  return size;
}

/** Where the emptyDir keeps its `ready` note; wrappers are named `wrapped_<volume>`, as upstream. */
export function emptyDirMetaDir(host: VolumeHost, podUid: string, volumeName: string): string {
  return podPluginDir(host.rootDir, podUid, EMPTY_DIR_PLUGIN_NAME, volumeName);
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes dir with mode 0777 whatever the umask (upstream: setupDir); true when this call made it.
 * A folder made here has 0777 less the umask: it is set without a look at its mode first, or not
 * at all when a tmpfs is to be mounted over it (toBeCovered), whose root is then what pods see. A
 * mount that fails leaves it for the next setUp, which finds the folder there and sets its mode.
 */
async function setupDir(dir: string, toBeCovered: boolean): Promise<boolean> {
  if ((await mkdir(dir, { recursive: true, mode: EMPTY_DIR_MODE })) !== undefined) {
    if (!toBeCovered) await chmod(dir, EMPTY_DIR_MODE);
    return true;
  }
  const st = await lstat(dir);
  if ((st.mode & 0o777) !== EMPTY_DIR_MODE) await chmod(dir, EMPTY_DIR_MODE);
  return false;
}

export interface EmptyDirSetup {
  dir: string;
  metaDir: string;
  medium: StorageMedium;
  /** tmpfs size; undefined leaves the kernel's default (half the RAM). */
  sizeBytes?: number;
  readOnly: boolean;
}

/**
 * Sets an emptyDir up at dir (upstream: emptyDir.SetUpAt). Once `ready`, a disk folder that exists
 * or a tmpfs that is mounted is left as it is, so its content survives kubelet restarts. Resolves
 * true when the folder is new, and so empty: made, or a tmpfs mounted on it, by this call.
 */
export async function setUpEmptyDir(
  host: VolumeHost,
  setup: EmptyDirSetup,
  args: MounterArgs,
): Promise<boolean> {
  const { dir, metaDir, medium } = setup;
  const readyFile = path.join(metaDir, READY_FILE_NAME);
  if (await exists(readyFile)) {
    if (medium === 'memory' && (await host.mounter.memoryFilesystemAt(dir)) === 'tmpfs') return false;
    if (medium === 'disk' && (await exists(dir))) return false;
    // Only if someone removed the volume by hand: start over.
    log.warn('Volume ready file exists, but the volume does not; setting it up again', {
      readyDir: metaDir,
      dir,
    });
    await rm(metaDir, { recursive: true, force: true });
  }
  let isNew = await setupDir(dir, medium === 'memory');
  if (medium === 'memory') {
    // Nothing is mounted on a folder made just now (a pod's first setUp): only one that was there
    // (a kubelet restarted before the ready note) may hold the tmpfs already.
    const type = isNew ? undefined : await host.mounter.memoryFilesystemAt(dir);
    isNew = type !== 'tmpfs';
    if (isNew) {
      const options = setup.sizeBytes !== undefined && setup.sizeBytes > 0 ? [`size=${setup.sizeBytes}`] : [];
      log.v(3, 'Mounting tmpfs for volume', { dir, options });
      await host.mounter.mount('tmpfs', dir, 'tmpfs', options);
    }
  }
  await setVolumeOwnership(dir, args.fsGroup, {
    readOnly: setup.readOnly,
    policy: args.fsGroupChangePolicy,
    clock: host.clock,
  });
  await mkdir(metaDir, { recursive: true, mode: 0o750 });
  await writeFile(readyFile, '', { mode: 0o600 });
  return isNew;
}

/** Tears an emptyDir down (upstream: TearDownAt): the `ready` note, the tmpfs if one is mounted, the folder. */
export async function tearDownEmptyDir(host: VolumeHost, dir: string, metaDir: string): Promise<void> {
  await rm(metaDir, { recursive: true, force: true });
  if (!(await exists(dir))) {
    log.v(2, 'Unmount skipped because path does not exist', { path: dir });
    return;
  }
  const type = await host.mounter.memoryFilesystemAt(dir);
  if (type === 'tmpfs' || type === 'hugetlbfs') await host.mounter.unmount(dir);
  await removeAllOneFilesystem(host.mounter, dir);
}

class EmptyDirMounter implements VolumeMounter {
  constructor(
    private readonly host: VolumeHost,
    private readonly pod: Pod,
    private readonly volumeName: string,
    private readonly source: EmptyDirVolumeSource,
  ) {}

  getPath(): string {
    return podVolumeDir(
      this.host.rootDir,
      this.pod.metadata.uid ?? '',
      EMPTY_DIR_PLUGIN_NAME,
      this.volumeName,
    );
  }

  getAttributes(): VolumeAttributes {
    return { readOnly: false, managed: true, selinuxRelabel: true };
  }

  async setUp(args: MounterArgs): Promise<void> {
    const medium = mediumOf(this.source);
    if (typeof medium !== 'string') throw new Error(`unknown storage medium "${medium.unsupported}"`);
    await setUpEmptyDir(
      this.host,
      {
        dir: this.getPath(),
        metaDir: emptyDirMetaDir(this.host, this.pod.metadata.uid ?? '', this.volumeName),
        medium,
        sizeBytes:
          medium === 'memory'
            ? emptyDirMemorySizeBytes(this.host.nodeAllocatable.memory, this.source.sizeLimit, this.pod)
            : undefined,
        readOnly: false,
      },
      args,
    );
  }
}

export class EmptyDirPlugin implements VolumePlugin {
  readonly name = EMPTY_DIR_PLUGIN_NAME;
  readonly requiresRemount = false;

  constructor(private readonly host: VolumeHost) {}

  canSupport(spec: VolumeSpec): boolean {
    return spec.volume?.emptyDir !== undefined;
  }

  newMounter(spec: VolumeSpec, pod: Pod): VolumeMounter {
    return new EmptyDirMounter(this.host, pod, spec.name, spec.volume?.emptyDir ?? {});
  }

  newUnmounter(volumeName: string, podUid: string): VolumeUnmounter {
    const host = this.host;
    return {
      tearDown: () =>
        tearDownEmptyDir(
          host,
          podVolumeDir(host.rootDir, podUid, EMPTY_DIR_PLUGIN_NAME, volumeName),
          emptyDirMetaDir(host, podUid, volumeName),
        ),
    };
  }
}
