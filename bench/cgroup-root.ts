/**
 * A cgroup root of the bench's own for the kubelet under test (--cgroup-root), made and removed
 * with the kubelet's own cgroup manager, as an administrator would make one. A kubelet removes the
 * pod cgroups under its kubepods that belong to no pod it knows, killing their processes; with its
 * own root, the bench's kubelet and any other kubelet on the machine (tests, other runtimes) leave
 * each other's pods alone.
 */
import { CgroupManager } from '../src/cm/cgroup-manager.js';
import { realCgroupFs } from '../src/cm/cgroup-fs.js';
import { parseCgroupfsToCgroupName } from '../src/cm/cgroup-name.js';
import { detectCgroupSubsystems } from '../src/cm/cgroup-subsystems.js';
import { sleep } from './report.js';

export class BenchCgroupRoot {
  private constructor(
    readonly name: string,
    private readonly manager: CgroupManager,
  ) {}

  static async create(name: string): Promise<BenchCgroupRoot> {
    const fs = realCgroupFs();
    const manager = new CgroupManager({ subsystems: await detectCgroupSubsystems(fs), driver: 'cgroupfs' });
    await manager.create(parseCgroupfsToCgroupName(name));
    return new BenchCgroupRoot(name, manager);
  }

  /** Removes the root and what the kubelet left under it (kubepods, the QoS tiers), once their tasks are gone. */
  async destroy(timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const result = await this.manager.destroy(parseCgroupfsToCgroupName(this.name));
      if (result.removed) return;
      // The runtime removes a container's cgroup as its task goes: give it a moment.
      if (Date.now() > deadline)
        throw new Error(`cgroups left under ${this.name}: ${result.busy.join(', ')}`);
      await sleep(200);
    }
  }
}
