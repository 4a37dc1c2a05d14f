/**
 * hostPath (upstream: pkg/volume/hostpath): a path of the node, given to the runtime as it is. SetUp
 * only checks (or makes) what the volume's type asks for, with upstream's messages; there is nothing
 * to tear down. A PersistentVolume with a hostPath source goes through here too.
 */
import { mkdir, open, stat } from 'node:fs/promises';
import type { Pod } from '../api/core-v1.js';
import type {
  VolumeAttributes,
  VolumeHost,
  VolumeMounter,
  VolumePlugin,
  VolumeSpec,
  VolumeUnmounter,
} from './volume-plugin.js';
import type { HostPathType, HostPathVolumeSource } from './volume-types.js';

export const HOST_PATH_PLUGIN_NAME = 'kubernetes.io/host-path';

/** upstream: validation.ValidatePathNoBacksteps. */
export function validatePathNoBacksteps(p: string): void {
  if (p.split('/').includes('..')) throw new Error("must not contain '..'");
}

type FileKind = 'Directory' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice' | 'Other';

/** The kind of what p is, following symlinks as upstream's GetFileType (os.Stat) does; undefined when absent. */
async function fileKind(p: string): Promise<FileKind | undefined> {
  let st;
  try {
    st = await stat(p);
  } catch {
    return undefined;
  }
  if (st.isDirectory()) return 'Directory';
  if (st.isFile()) return 'File';
  if (st.isSocket()) return 'Socket';
  if (st.isCharacterDevice()) return 'CharDevice';
  if (st.isBlockDevice()) return 'BlockDevice';
  return 'Other';
}

/** upstream: checkType with its 1.30 messages; the *OrCreate types make what is missing, then check as the plain ones. */
export async function checkHostPathType(p: string, type: HostPathType): Promise<void> {
  let kind = await fileKind(p);
  if (type === 'DirectoryOrCreate' && kind === undefined) {
    await mkdir(p, { recursive: true, mode: 0o755 });
    kind = await fileKind(p);
  } else if (type === 'FileOrCreate' && kind === undefined) {
    // O_CREAT without O_EXCL: a file that appears meanwhile is fine.
    const fh = await open(p, 'a', 0o644);
    await fh.close();
    kind = await fileKind(p);
  }
  const expect = (want: FileKind, what: string) => {
    if (kind !== want) throw new Error(`hostPath type check failed: ${p} is not a ${what}`);
  };
  switch (type) {
    case '':
      return;
    case 'DirectoryOrCreate':
    case 'Directory':
      return expect('Directory', 'directory');
    case 'FileOrCreate':
    case 'File':
      return expect('File', 'file');
    case 'Socket':
      return expect('Socket', 'socket file');
    case 'CharDevice':
      return expect('CharDevice', 'character device');
    case 'BlockDevice':
      return expect('BlockDevice', 'block device');
    default:
      throw new Error(`${String(type)} is an invalid volume type`);
  }
}

class HostPathMounter implements VolumeMounter {
  constructor(
    private readonly source: HostPathVolumeSource,
    private readonly readOnly: boolean,
  ) {}

  getPath(): string {
    return this.source.path;
  }

  getAttributes(): VolumeAttributes {
    return { readOnly: this.readOnly, managed: false, selinuxRelabel: false };
  }

  async setUp(): Promise<void> {
    try {
      validatePathNoBacksteps(this.source.path);
    } catch (err) {
      throw new Error(`invalid HostPath \`${this.source.path}\`: ${(err as Error).message}`);
    }
    await checkHostPathType(this.source.path, this.source.type ?? '');
  }
}

export class HostPathPlugin implements VolumePlugin {
  readonly name = HOST_PATH_PLUGIN_NAME;
  readonly requiresRemount = false;

  constructor(_host?: VolumeHost) {}

  canSupport(spec: VolumeSpec): boolean {
    return spec.volume?.hostPath !== undefined || spec.persistentVolume?.spec.hostPath !== undefined;
  }

  newMounter(spec: VolumeSpec, _pod: Pod): VolumeMounter {
    const source = spec.volume?.hostPath ?? spec.persistentVolume?.spec.hostPath;
    if (!source) throw new Error('spec does not reference an HostPath volume type');
    return new HostPathMounter(source, spec.readOnly);
  }

  newUnmounter(): VolumeUnmounter {
    return { tearDown: () => Promise.resolve() };
  }
}
