import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { checkedPodUid } from '../api/pod-uid.js';

/** Upstream makes <root>/pods/<uid>/{volumes,plugins} before the containers start. */
export async function makePodDataDirs(rootDir: string, uid: string): Promise<void> {
  // Never a folder outside --root-dir, whatever a source said the UID is.
  const podDir = path.join(rootDir, 'pods', checkedPodUid(uid));
  // Every sync makes them, as upstream's does with MkdirAll: a stat each when they are there (every
  // sync but the pod's first), where mkdir -p made a mkdir and a stat each.
  for (const dir of [path.join(podDir, 'volumes'), path.join(podDir, 'plugins')]) {
    let isDirectory: boolean;
    try {
      isDirectory = (await stat(dir)).isDirectory();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await mkdir(dir, { recursive: true });
      continue;
    }
    if (!isDirectory) throw Object.assign(new Error(`mkdir ${dir}: not a directory`), { code: 'ENOTDIR' });
  }
}
