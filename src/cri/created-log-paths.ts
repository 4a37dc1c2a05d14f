/**
 * The log path of each container this client created, as CRI defines it: the container config's
 * log_path under its sandbox's log_directory (api.proto). The log manager needs it for every running
 * container and would otherwise ask ContainerStatus once per container for what the kubelet itself
 * handed the runtime (upstream asks at every pass).
 */
import path from 'node:path';
import { BoundedMap } from '../lib/bounded-map.js';

// Far more containers than a node runs at once; past it the oldest go (their path is asked for again).
const MAX_PATHS = 4096;

export class CreatedLogPaths {
  private readonly paths = new BoundedMap<string, string>(MAX_PATHS);

  /** Notes a container just created; one without a log directory or log path is not noted. */
  created(containerId: string, logDirectory: string, logPath: string): void {
    if (!containerId || !logDirectory || !logPath) return;
    this.paths.set(containerId, path.join(logDirectory, logPath));
  }

  removed(containerId: string): void {
    this.paths.delete(containerId);
  }

  get(containerId: string): string | undefined {
    return this.paths.get(containerId);
  }
}
