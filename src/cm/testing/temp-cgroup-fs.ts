/**
 * Test equipment: a temp folder laid out like /sys/fs/cgroup (v1 mounts or the v2 tree) and a
 * CgroupFs over it that behaves as cgroupfs does where the cgroup code depends on it: mkdir makes a
 * cgroup's interface files with the kernel's defaults, rmdir refuses a cgroup with tasks or child
 * cgroups, writes never create files, cgroup.subtree_control takes `+ctrl` edits, and a mount can
 * be made read-only or left out.
 */
import { constants } from 'node:fs';
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  rmdir,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CgroupFs } from '../cgroup-fs.js';

/** The kernel's "no limit" for memory.limit_in_bytes on a 4 KiB page machine. */
export const V1_MEMORY_UNLIMITED = '9223372036854771712';

export interface TempCgroupV1Layout {
  version: 'v1';
  /** Mount folder names, as a distribution mounts them: 'cpu,cpuacct', 'memory', 'systemd', … */
  mounts: string[];
  /** Extra names pointing at a mount ('cpu' → 'cpu,cpuacct'), as symbolic links. */
  links?: Record<string, string>;
  /** Mounts whose mkdir fails with EROFS. */
  readOnly?: string[];
  /** Huge page units hugetlb has files for ('2MB'). */
  hugePageUnits?: string[];
}

export interface TempCgroupV2Layout {
  version: 'v2';
  /** What the root's cgroup.controllers offers. */
  controllers: string[];
  hugePageUnits?: string[];
}

export type TempCgroupLayout = TempCgroupV1Layout | TempCgroupV2Layout;

const ROOT_CPUS = '0-3';
const ROOT_MEMS = '0';

function errno(code: string, message: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: ${message}`) as NodeJS.ErrnoException;
  err.code = code;
  return err;
}

export class TempCgroupTree {
  readonly fs: CgroupFs;

  private constructor(
    readonly root: string,
    readonly layout: TempCgroupLayout,
  ) {
    this.fs = this.makeFs();
  }

  static async create(layout: TempCgroupLayout): Promise<TempCgroupTree> {
    const root = await mkdtemp(path.join(tmpdir(), 'tskubelet-cgroup-'));
    const tree = new TempCgroupTree(root, layout);
    if (layout.version === 'v2') {
      await writeFile(path.join(root, 'cgroup.controllers'), layout.controllers.join(' ') + '\n');
      await writeFile(path.join(root, 'cgroup.subtree_control'), '\n');
      await writeFile(path.join(root, 'cgroup.procs'), '');
      await writeFile(path.join(root, 'cpuset.cpus.effective'), ROOT_CPUS + '\n');
    } else {
      for (const mount of layout.mounts) {
        const dir = path.join(root, mount);
        await mkdir(dir);
        await writeFile(path.join(dir, 'cgroup.procs'), '');
        await writeFile(path.join(dir, 'tasks'), '');
        const subsystems = mount.split(',');
        if (subsystems.includes('cpuset')) {
          await writeFile(path.join(dir, 'cpuset.cpus'), ROOT_CPUS + '\n');
          await writeFile(path.join(dir, 'cpuset.mems'), ROOT_MEMS + '\n');
        }
        if (subsystems.includes('cpu')) await writeFile(path.join(dir, 'cpu.shares'), '1024\n');
      }
      for (const [name, target] of Object.entries(layout.links ?? {}))
        await symlink(target, path.join(root, name));
      // A cgroup2 mount beside the v1 ones, as hybrid machines have it: detection must leave it out.
      await mkdir(path.join(root, 'unified'));
      await writeFile(path.join(root, 'unified', 'cgroup.procs'), '');
      await writeFile(path.join(root, 'unified', 'cgroup.controllers'), '');
    }
    return tree;
  }

  /** The text of a file under the root, trimmed. */
  async read(relative: string): Promise<string> {
    return (await readFile(path.join(this.root, relative), 'utf8')).trim();
  }

  async exists(relative: string): Promise<boolean> {
    return stat(path.join(this.root, relative)).then(
      () => true,
      () => false,
    );
  }

  /** Puts tasks in a cgroup, as if processes ran there. */
  async setProcs(relative: string, pids: number[]): Promise<void> {
    await writeFile(path.join(this.root, relative, 'cgroup.procs'), pids.map((p) => `${p}\n`).join(''));
  }

  async cleanup(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }

  /** The mount folder a path is in (v1), or undefined for v2. */
  private mountOf(p: string): { mount: string; subsystems: string[] } | undefined {
    if (this.layout.version === 'v2') return undefined;
    const first = path.relative(this.root, p).split(path.sep)[0] ?? '';
    const target = this.layout.links?.[first] ?? first;
    return { mount: target, subsystems: target.split(',') };
  }

  private async populateV1(dir: string, subsystems: string[]): Promise<void> {
    const files: Record<string, string> = { 'cgroup.procs': '', tasks: '', notify_on_release: '0\n' };
    if (subsystems.includes('cpu')) {
      files['cpu.shares'] = '1024\n';
      files['cpu.cfs_period_us'] = '100000\n';
      files['cpu.cfs_quota_us'] = '-1\n';
    }
    if (subsystems.includes('cpuacct')) files['cpuacct.usage'] = '0\n';
    if (subsystems.includes('cpuset')) {
      files['cpuset.cpus'] = '\n';
      files['cpuset.mems'] = '\n';
    }
    if (subsystems.includes('memory')) files['memory.limit_in_bytes'] = V1_MEMORY_UNLIMITED + '\n';
    if (subsystems.includes('pids')) files['pids.max'] = 'max\n';
    if (subsystems.includes('hugetlb')) {
      for (const unit of this.layout.hugePageUnits ?? [])
        files[`hugetlb.${unit}.limit_in_bytes`] = V1_MEMORY_UNLIMITED + '\n';
    }
    for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  }

  private async populateV2(dir: string): Promise<void> {
    const parentControl = (
      await readFile(path.join(path.dirname(dir), 'cgroup.subtree_control'), 'utf8')
    ).trim();
    const enabled = parentControl === '' ? [] : parentControl.split(/\s+/);
    const files: Record<string, string> = {
      'cgroup.procs': '',
      'cgroup.type': 'domain\n',
      'cgroup.controllers': enabled.join(' ') + '\n',
      'cgroup.subtree_control': '\n',
    };
    if (enabled.includes('cpu')) {
      files['cpu.weight'] = '100\n';
      files['cpu.max'] = 'max 100000\n';
    }
    if (enabled.includes('cpuset')) files['cpuset.cpus'] = '\n';
    if (enabled.includes('memory')) files['memory.max'] = 'max\n';
    if (enabled.includes('pids')) files['pids.max'] = 'max\n';
    if (enabled.includes('hugetlb')) {
      for (const unit of this.layout.hugePageUnits ?? []) files[`hugetlb.${unit}.max`] = 'max\n';
    }
    for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  }

  private async writeSubtreeControl(file: string, data: string): Promise<void> {
    const dir = path.dirname(file);
    const available = (await readFile(path.join(dir, 'cgroup.controllers'), 'utf8')).trim().split(/\s+/);
    const current = new Set(
      (await readFile(file, 'utf8'))
        .trim()
        .split(/\s+/)
        .filter((c) => c !== ''),
    );
    for (const token of data.trim().split(/\s+/)) {
      const name = token.slice(1);
      // The kernel takes none of a write that names a controller the cgroup does not have.
      if (!available.includes(name)) throw errno('EINVAL', `write ${file}: ${token}`);
      if (token.startsWith('+')) current.add(name);
      else if (token.startsWith('-')) current.delete(name);
      else throw errno('EINVAL', `write ${file}: ${token}`);
    }
    await writeFile(file, [...current].join(' ') + '\n');
  }

  private makeFs(): CgroupFs {
    return {
      readFile: (file) => readFile(file, 'utf8'),
      writeFile: async (file, data) => {
        if (path.basename(file) === 'cgroup.subtree_control') return this.writeSubtreeControl(file, data);
        await writeFile(file, data, { flag: constants.O_WRONLY | constants.O_TRUNC });
      },
      mkdir: async (dir) => {
        const m = this.mountOf(dir);
        if (m && this.layout.version === 'v1' && (this.layout.readOnly ?? []).includes(m.mount))
          throw errno('EROFS', `mkdir ${dir}`);
        try {
          await mkdir(dir);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
          throw err;
        }
        if (m) await this.populateV1(dir, m.subsystems);
        else await this.populateV2(dir);
        return true;
      },
      rmdir: async (dir) => {
        const entries = await readdir(dir, { withFileTypes: true });
        if (entries.some((e) => e.isDirectory())) throw errno('EBUSY', `rmdir ${dir}: child cgroups`);
        const procs = await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
        if (procs.trim() !== '') throw errno('EBUSY', `rmdir ${dir}: tasks`);
        // cgroupfs removes a cgroup with its interface files in one rmdir.
        for (const e of entries) await unlink(path.join(dir, e.name));
        await rmdir(dir);
      },
      readdir: async (dir) =>
        (await readdir(dir, { withFileTypes: true })).map((e) => ({
          name: e.name,
          isDirectoryOrLink: e.isDirectory() || e.isSymbolicLink(),
        })),
      exists: (p) =>
        stat(p).then(
          () => true,
          () => false,
        ),
      realpath: (p) => realpath(p),
    };
  }
}
