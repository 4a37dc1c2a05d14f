/**
 * The conformance run's cgroup root (--cgroup-root of the kubelet under test), made and removed with
 * the kubelet's own cgroup manager, as bench/cgroup-root.ts does for the bench: a kubelet removes the
 * pod cgroups under its kubepods that belong to no pod it knows, so with a root of its own the node
 * under test leaves every other kubelet's pods on this machine alone.
 *
 * Usage: node --import tsx scripts/conformance/cgroup-root.ts create|destroy NAME
 */
import { CgroupManager } from '../../src/cm/cgroup-manager.js';
import { realCgroupFs } from '../../src/cm/cgroup-fs.js';
import { parseCgroupfsToCgroupName } from '../../src/cm/cgroup-name.js';
import { detectCgroupSubsystems } from '../../src/cm/cgroup-subsystems.js';

const DESTROY_TIMEOUT_MS = 30_000;

async function main(): Promise<void> {
  const [verb, literal] = process.argv.slice(2);
  if ((verb !== 'create' && verb !== 'destroy') || !literal?.startsWith('/') || literal === '/') {
    throw new Error('usage: cgroup-root.ts create|destroy /NAME');
  }
  const fs = realCgroupFs();
  const manager = new CgroupManager({ subsystems: await detectCgroupSubsystems(fs), driver: 'cgroupfs' });
  const name = parseCgroupfsToCgroupName(literal);
  if (verb === 'create') {
    await manager.create(name);
    return;
  }
  // The runtime removes a container's cgroup as its task goes: a busy cgroup gets a moment.
  const deadline = Date.now() + DESTROY_TIMEOUT_MS;
  for (;;) {
    const result = await manager.destroy(name);
    if (result.removed) return;
    if (Date.now() > deadline) throw new Error(`cgroups left under ${literal}: ${result.busy.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

main().catch((err: unknown) => {
  console.error(`cgroup-root: ${(err as Error).message}`);
  process.exit(1);
});
