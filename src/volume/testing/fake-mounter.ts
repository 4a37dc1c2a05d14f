/**
 * A Mounter that mounts nothing: it keeps a mount table of its own, so plugins and the volume
 * manager can be tested without root. A tmpfs "mount" leaves the folder an ordinary folder.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { memoryFilesystemIn, type MemoryFilesystem, type MountInfo, type Mounter } from '../mounter.js';

export interface FakeMountCall {
  op: 'mount' | 'unmount';
  source?: string;
  target: string;
  fsType?: string;
  options?: string[];
  flags?: string[];
}

export class FakeMounter implements Mounter {
  readonly calls: FakeMountCall[] = [];
  private readonly table: MountInfo[] = [];
  private nextId = 1000;
  /** Set to make the next mount fail with this message. */
  failNextMount: string | undefined;

  async mount(
    source: string,
    target: string,
    fsType: string,
    options: string[],
    flags: string[] = [],
  ): Promise<void> {
    this.calls.push({ op: 'mount', source, target, fsType, options, flags });
    if (this.failNextMount !== undefined) {
      const msg = this.failNextMount;
      this.failNextMount = undefined;
      throw new Error(msg);
    }
    const mountPoint = await realpath(target).catch(() => path.resolve(target));
    if (flags.some((f) => f.startsWith('--make-'))) {
      // Propagation changes apply to the mount at target; shared ones join peer group 1.
      const m = [...this.table].reverse().find((e) => e.mountPoint === mountPoint);
      if (!m) throw new Error(`mount: ${target}: not mount point or bad option`);
      if (flags.some((f) => f.includes('shared'))) m.optionalFields = ['shared:1'];
      return;
    }
    this.table.push({
      id: this.nextId++,
      parentId: 1,
      device: '0:99',
      root: '/',
      mountPoint,
      options: ['rw'],
      optionalFields: [],
      fsType: fsType === '' ? 'none' : fsType,
      source,
      superOptions: options,
    });
  }

  async unmount(target: string): Promise<void> {
    this.calls.push({ op: 'unmount', target });
    const mountPoint = await realpath(target).catch(() => path.resolve(target));
    for (let i = this.table.length - 1; i >= 0; i--) {
      if (this.table[i]?.mountPoint === mountPoint) {
        this.table.splice(i, 1);
        return;
      }
    }
    throw new Error(`unmount failed: exit status 32\nUnmounting arguments: ${target}\nOutput: not mounted`);
  }

  list(): Promise<MountInfo[]> {
    return Promise.resolve([...this.table]);
  }

  async memoryFilesystemAt(p: string): Promise<MemoryFilesystem | undefined> {
    return memoryFilesystemIn(this.table, await realpath(p).catch(() => path.resolve(p)));
  }

  mounted(): string[] {
    return this.table.map((m) => m.mountPoint);
  }
}
