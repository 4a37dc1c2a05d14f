import path from 'node:path';
import { checkedPodUid } from '../api/pod-uid.js';
import { promiseFileCalls, type FileCalls } from '../lib/memory-fs.js';

const POD_DATA_DIR_NAMES = ['volumes', 'plugins'] as const;
// mkdir's default (the umask applies), as the folders have always been made.
const POD_DATA_DIR_MODE = 0o777;

/**
 * Upstream makes <root>/pods/<uid>/{volumes,plugins} before the containers start. likelyNew: the
 * pod's first sync in this run, when the folders are nearly always not there yet.
 */
export async function makePodDataDirs(
  rootDir: string,
  uid: string,
  files: Pick<FileCalls, 'readdir' | 'stat' | 'mkdir'> = promiseFileCalls,
  opts: { likelyNew?: boolean } = {},
): Promise<void> {
  // Never a folder outside --root-dir, whatever a source said the UID is.
  const podDir = path.join(rootDir, 'pods', checkedPodUid(uid));
  if (opts.likelyNew) {
    // Two mkdirs make them, where a listing that finds no folder came first; each also accepts a
    // folder that is there. Anything else (a file in the way) is looked at one by one below.
    try {
      for (const name of POD_DATA_DIR_NAMES)
        await files.mkdir(path.join(podDir, name), { recursive: true, mode: POD_DATA_DIR_MODE });
      return;
    } catch {
      return makeEach(podDir, files);
    }
  }
  // Every sync makes them, as upstream's does with MkdirAll. On every sync but the pod's first they
  // are there, and one listing of the pod's folder says so for both (a stat each said it before).
  let entries;
  try {
    entries = await files.readdir(podDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return makeEach(podDir, files);
    for (const name of POD_DATA_DIR_NAMES)
      await files.mkdir(path.join(podDir, name), { recursive: true, mode: POD_DATA_DIR_MODE });
    return;
  }
  const present = POD_DATA_DIR_NAMES.every((name) => entries.some((e) => e.name === name && e.isDirectory()));
  // Anything else (one missing, a symlink, a file in the way) is looked at one by one, as before.
  if (!present) await makeEach(podDir, files);
}

async function makeEach(podDir: string, files: Pick<FileCalls, 'stat' | 'mkdir'>): Promise<void> {
  for (const dir of POD_DATA_DIR_NAMES.map((name) => path.join(podDir, name))) {
    let isDirectory: boolean;
    try {
      isDirectory = (await files.stat(dir)).isDirectory();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await files.mkdir(dir, { recursive: true, mode: POD_DATA_DIR_MODE });
      continue;
    }
    if (!isDirectory) throw Object.assign(new Error(`mkdir ${dir}: not a directory`), { code: 'ENOTDIR' });
  }
}
