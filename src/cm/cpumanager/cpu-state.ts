/**
 * The CPU manager's state (upstream: cpumanager/state): the shared pool (the default CPU set) and
 * each container's exclusive CPUs, keyed by pod UID and container name.
 */
import { CPUSet } from './cpu-set.js';

/** podUID → container name → exclusive CPUs. */
export type ContainerCPUAssignments = Map<string, Map<string, CPUSet>>;

export class CPUManagerState {
  private defaultSet = CPUSet.EMPTY;
  private readonly assignments: ContainerCPUAssignments = new Map();

  getDefaultCPUSet(): CPUSet {
    return this.defaultSet;
  }

  setDefaultCPUSet(cpus: CPUSet): void {
    this.defaultSet = cpus;
  }

  getCPUSet(podUID: string, containerName: string): CPUSet | undefined {
    return this.assignments.get(podUID)?.get(containerName);
  }

  /** The container's exclusive CPUs, else the shared pool. */
  getCPUSetOrDefault(podUID: string, containerName: string): CPUSet {
    return this.getCPUSet(podUID, containerName) ?? this.defaultSet;
  }

  setCPUSet(podUID: string, containerName: string, cpus: CPUSet): void {
    let pod = this.assignments.get(podUID);
    if (!pod) this.assignments.set(podUID, (pod = new Map()));
    pod.set(containerName, cpus);
  }

  delete(podUID: string, containerName: string): void {
    const pod = this.assignments.get(podUID);
    if (!pod) return;
    pod.delete(containerName);
    if (pod.size === 0) this.assignments.delete(podUID);
  }

  /** A copy: callers iterate it while deleting. */
  getCPUAssignments(): ContainerCPUAssignments {
    return new Map([...this.assignments].map(([uid, m]) => [uid, new Map(m)]));
  }

  setCPUAssignments(assignments: ContainerCPUAssignments): void {
    this.assignments.clear();
    for (const [uid, m] of assignments) if (m.size > 0) this.assignments.set(uid, new Map(m));
  }
}
