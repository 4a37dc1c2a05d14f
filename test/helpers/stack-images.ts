/**
 * Puts the test stack's offline images (pause, busybox) back after a test whose image GC may have
 * removed them: later test files run their pods from these images. `runtime-stack.sh up` is
 * idempotent: containerd keeps running and only missing images are imported again.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export async function restoreStackImages(): Promise<void> {
  await promisify(execFile)('bash', [path.join(repoRoot, 'scripts/runtime-stack.sh'), 'up'], {
    timeout: 180_000,
  });
}
