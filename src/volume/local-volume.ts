/**
 * local PersistentVolumes (upstream: pkg/volume/local), filesystem mode: a path on this node's disk.
 * Upstream bind-mounts it into the pod's volume folder first; here the runtime's own bind mount
 * takes the path directly, which gives containers the same view with one mount fewer. fsGroup is
 * applied unless the volume is read-only.
 */
import { stat } from 'node:fs/promises';
import type { Pod } from '../api/core-v1.js';
import { validatePathNoBacksteps } from './host-path.js';
import type {
  MounterArgs,
  VolumeAttributes,
  VolumeHost,
  VolumeMounter,
  VolumePlugin,
  VolumeSpec,
  VolumeUnmounter,
} from './volume-plugin.js';
import { setVolumeOwnership } from './volume-ownership.js';

export const LOCAL_VOLUME_PLUGIN_NAME = 'kubernetes.io/local-volume';

class LocalVolumeMounter implements VolumeMounter {
  constructor(
    private readonly host: VolumeHost,
    private readonly localPath: string,
    private readonly readOnly: boolean,
    private readonly block: boolean,
  ) {}

  getPath(): string {
    return this.localPath;
  }

  getAttributes(): VolumeAttributes {
    return { readOnly: this.readOnly, managed: !this.readOnly, selinuxRelabel: true };
  }

  async setUp(args: MounterArgs): Promise<void> {
    if (this.block) throw new Error('block volumes are not supported by this kubelet');
    try {
      validatePathNoBacksteps(this.localPath);
    } catch (err) {
      throw new Error(`invalid path: ${this.localPath} ${(err as Error).message}`);
    }
    const st = await stat(this.localPath);
    if (!st.isDirectory()) throw new Error(`local volume path ${this.localPath} is not a directory`);
    if (!this.readOnly) {
      await setVolumeOwnership(this.localPath, args.fsGroup, {
        readOnly: false,
        policy: args.fsGroupChangePolicy,
        clock: this.host.clock,
      });
    }
  }
}

export class LocalVolumePlugin implements VolumePlugin {
  readonly name = LOCAL_VOLUME_PLUGIN_NAME;
  readonly requiresRemount = false;

  constructor(private readonly host: VolumeHost) {}

  canSupport(spec: VolumeSpec): boolean {
    return spec.persistentVolume?.spec.local !== undefined;
  }

  newMounter(spec: VolumeSpec, _pod: Pod): VolumeMounter {
    const pv = spec.persistentVolume;
    const local = pv?.spec.local;
    if (!pv || !local) throw new Error('spec does not reference a Local volume type');
    return new LocalVolumeMounter(this.host, local.path, spec.readOnly, pv.spec.volumeMode === 'Block');
  }

  newUnmounter(): VolumeUnmounter {
    return { tearDown: () => Promise.resolve() };
  }
}
