/**
 * The topology manager and the resource managers it asks, put together as upstream's container
 * manager does: the manager first (the others read the affinity it chooses), then its hint
 * providers in upstream's order, which is also the order they allocate in.
 */
import type { HintProvider } from './topologymanager/topology-hint.js';
import type { TopologyManager } from './topologymanager/topology-manager.js';

export interface TopologyHintProviders {
  /** Undefined under cpuManagerPolicy none (upstream's none policy offers no hints and allocates nothing). */
  cpuManager: HintProvider | undefined;
  /** Undefined under memoryManagerPolicy None. */
  memoryManager?: HintProvider | undefined;
  deviceManager: HintProvider;
}

/** Adds the providers: CPU manager, memory manager, device manager (upstream's NewContainerManager). */
export function addTopologyHintProviders(manager: TopologyManager, providers: TopologyHintProviders): void {
  const ordered = [providers.cpuManager, providers.memoryManager, providers.deviceManager];
  for (const p of ordered) if (p) manager.addHintProvider(p);
}
