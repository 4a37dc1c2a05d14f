/**
 * What the API data volumes (configMap, secret, downwardAPI, projected) share: their files are
 * gathered first (so a missing object fails before anything is made), then an emptyDir wrapper is
 * set up at the volume's folder (a tmpfs for secrets and projected tokens, which must never touch a
 * disk), and the AtomicWriter swaps the new files in. Each sync of the pod does this again, so
 * changes reach the volume; fsGroup is applied to every write.
 */
import type { Pod } from '../api/core-v1.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { memoryFileCalls, promiseFileCalls } from '../lib/memory-fs.js';
import { AtomicWriter, type Payload } from './atomic-writer.js';
import {
  emptyDirMemorySizeBytes,
  emptyDirMetaDir,
  setUpEmptyDir,
  tearDownEmptyDir,
  type StorageMedium,
} from './empty-dir.js';
import type {
  MounterArgs,
  VolumeAttributes,
  VolumeHost,
  VolumeMounter,
  VolumePlugin,
  VolumeSpec,
  VolumeUnmounter,
} from './volume-plugin.js';
import { podVolumeDir } from './volume-paths.js';
import { setVolumeOwnership } from './volume-ownership.js';

const log = logger('volume');

/** upstream names the emptyDir under a data volume `wrapped_<volume>`. */
function wrapperName(volumeName: string): string {
  return `wrapped_${volumeName}`;
}

export type CollectPayload = (args: MounterArgs) => Promise<Payload>;

/** The Mounter of every API data volume; collect says what files the volume holds now. */
export class DataVolumeMounter implements VolumeMounter {
  constructor(
    private readonly host: VolumeHost,
    private readonly pluginName: string,
    private readonly pod: Pod,
    private readonly volumeName: string,
    private readonly medium: StorageMedium,
    private readonly collect: CollectPayload,
  ) {}

  getPath(): string {
    return podVolumeDir(this.host.rootDir, this.pod.metadata.uid ?? '', this.pluginName, this.volumeName);
  }

  getAttributes(): VolumeAttributes {
    return { readOnly: true, managed: true, selinuxRelabel: true };
  }

  async setUp(args: MounterArgs): Promise<void> {
    const payload = await this.collect(args);
    const dir = this.getPath();
    const uid = this.pod.metadata.uid ?? '';
    const metaDir = emptyDirMetaDir(this.host, uid, wrapperName(this.volumeName));
    const isNew = await setUpEmptyDir(
      this.host,
      {
        dir,
        metaDir,
        medium: this.medium,
        sizeBytes:
          this.medium === 'memory'
            ? emptyDirMemorySizeBytes(this.host.nodeAllocatable.memory, undefined, this.pod)
            : undefined,
        readOnly: true,
      },
      args,
    );
    const context = `pod ${this.pod.metadata.namespace ?? ''}/${this.pod.metadata.name ?? ''} volume ${this.volumeName}`;
    const writer = new AtomicWriter(dir, context, {
      clock: this.host.clock,
      // setUpEmptyDir has mounted a tmpfs at dir for the memory medium: memory-backed from here on.
      files: this.medium === 'memory' ? memoryFileCalls : promiseFileCalls,
    });
    try {
      // The whole volume, not only the new folder: the first write also made files outside it.
      await writer.write(
        payload,
        () => setVolumeOwnership(dir, args.fsGroup, { readOnly: true, clock: this.host.clock }),
        { targetIsNew: isNew },
      );
    } catch (err) {
      log.error('Error writing payload to dir', { context, err: errorMessage(err) });
      // A first setup that could not be written is not left half made (upstream tears it down);
      // a failed refresh keeps what running containers already see.
      if (!args.remount) {
        await tearDownEmptyDir(this.host, dir, metaDir).catch((e: unknown) =>
          log.error('Error tearing down volume', { context, err: errorMessage(e) }),
        );
      }
      throw err;
    }
  }
}

/** A plugin whose volumes are API data written by the AtomicWriter. */
export abstract class DataVolumePlugin implements VolumePlugin {
  abstract readonly name: string;
  readonly requiresRemount = true;
  protected abstract readonly medium: StorageMedium;

  constructor(protected readonly host: VolumeHost) {}

  abstract canSupport(spec: VolumeSpec): boolean;
  protected abstract collector(spec: VolumeSpec, pod: Pod): CollectPayload;

  newMounter(spec: VolumeSpec, pod: Pod): VolumeMounter {
    return new DataVolumeMounter(
      this.host,
      this.name,
      pod,
      spec.name,
      this.medium,
      this.collector(spec, pod),
    );
  }

  newUnmounter(volumeName: string, podUid: string): VolumeUnmounter {
    return {
      tearDown: () =>
        tearDownEmptyDir(
          this.host,
          podVolumeDir(this.host.rootDir, podUid, this.name, volumeName),
          emptyDirMetaDir(this.host, podUid, wrapperName(volumeName)),
        ),
    };
  }
}
