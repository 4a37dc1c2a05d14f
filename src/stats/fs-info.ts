/**
 * Filesystem figures: a file system's size and free space (statfs, as cAdvisor's GetDirFsInfo),
 * and the space and inodes a folder uses (a walk like `du`, as upstream's fs.DiskUsage). Walks are
 * asynchronous and yield between folders, so a large volume never blocks the event loop.
 */
import { lstat, readdir, statfs } from 'node:fs/promises';
import path from 'node:path';
import { errnoCode } from '../cm/cgroup-fs.js';

export interface FsInfo {
  timeMs: number;
  capacityBytes: number;
  availableBytes: number;
  /** capacity minus free blocks (root's reserve counts as used, as cAdvisor counts it). */
  usedBytes: number;
  inodes: number;
  inodesFree: number;
}

export async function fsInfo(dir: string, nowMs: number): Promise<FsInfo> {
  const s = await statfs(dir);
  return {
    timeMs: nowMs,
    capacityBytes: s.blocks * s.bsize,
    availableBytes: s.bavail * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    inodes: s.files,
    inodesFree: s.ffree,
  };
}

export interface DiskUsage {
  /** Allocated bytes (st_blocks × 512), as du reports them. */
  usedBytes: number;
  inodesUsed: number;
}

/** Usage of everything under dir, not following links nor crossing into mounts below it; a missing dir is zero. */
export async function diskUsage(dir: string): Promise<DiskUsage> {
  const out: DiskUsage = { usedBytes: 0, inodesUsed: 0 };
  let rootDev: number;
  try {
    const st = await lstat(dir);
    rootDev = st.dev;
    out.usedBytes += st.blocks * 512;
    out.inodesUsed += 1;
    if (!st.isDirectory()) return out;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return out;
    throw err;
  }
  // Hard links are counted once, as du counts them.
  const seen = new Set<number>();
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop() as string;
    let names: string[];
    try {
      names = await readdir(current);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') continue;
      throw err;
    }
    for (const name of names) {
      const p = path.join(current, name);
      let st;
      try {
        st = await lstat(p);
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') continue;
        throw err;
      }
      if (st.dev !== rootDev) continue;
      if (st.nlink > 1 && !st.isDirectory()) {
        if (seen.has(st.ino)) continue;
        seen.add(st.ino);
      }
      out.usedBytes += st.blocks * 512;
      out.inodesUsed += 1;
      if (st.isDirectory()) pending.push(p);
    }
  }
  return out;
}
