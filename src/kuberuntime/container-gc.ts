/**
 * Garbage collection of dead containers, dead sandboxes and pod log folders (upstream:
 * kuberuntime_gc.go containerGC). Running containers and ready sandboxes are never touched: stopping
 * them is the kubelet's decision, not the collector's.
 */
import { lstat, readdir, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Container, PodSandbox, RuntimeService } from '../cri/types.js';
import { isNotFound } from '../cri/errors.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { getContainerInfoFromLabels } from './labels.js';
import { parsePodUidFromLogsDirectory } from './sandbox-config.js';

const log = logger('kuberuntime');

const NS_PER_MS = 1_000_000;

/** Upstream's container GC policy; the defaults are the kubelet's flags' defaults. */
export interface GCPolicy {
  /** --minimum-container-ttl-duration: a dead container younger than this is kept (default 0). */
  minAgeMs: number;
  /** --maximum-dead-containers-per-container: dead attempts kept per container (default 1); negative for no limit. */
  maxPerPodContainer: number;
  /** --maximum-dead-containers: dead containers kept on the node (default -1, no limit). */
  maxContainers: number;
}

export const DEFAULT_GC_POLICY: GCPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

interface ContainerGCInfo {
  id: string;
  name: string;
  createdAtNs: number;
}

interface SandboxGCInfo {
  id: string;
  createdAtNs: number;
  /** Ready, or still has containers. */
  active: boolean;
}

export interface ContainerGCOptions {
  runtimeService: RuntimeService;
  clock: Clock;
  podLogsDir: string;
  /** Where the legacy per-container log symlinks live ('' when they are not made). */
  legacyContainerLogsDir: string;
  policy?: GCPolicy;
  /** Removes a container with its log (the manager's removeContainer). */
  removeContainer(id: string): Promise<void>;
}

export class ContainerGC {
  private readonly policy: GCPolicy;

  constructor(private readonly opts: ContainerGCOptions) {
    this.policy = opts.policy ?? DEFAULT_GC_POLICY;
  }

  /**
   * isPodWanted answers for a pod UID; a pod that is not wanted loses all its dead containers,
   * dead sandboxes and its log folder. The caller must only say "not wanted" once every pod source
   * has reported (upstream's allSourcesReady), or a pod from a late source loses its history.
   */
  async garbageCollect(isPodWanted: (uid: string) => boolean): Promise<void> {
    await this.evictContainers(isPodWanted);
    await this.evictSandboxes(isPodWanted);
    await this.evictPodLogsDirectories(isPodWanted);
  }

  private async evictContainers(isPodWanted: (uid: string) => boolean): Promise<void> {
    const containers = await this.opts.runtimeService.listContainers();
    const newestEvictableNs = (this.opts.clock.now() - this.policy.minAgeMs) * NS_PER_MS;
    const units = new Map<string, ContainerGCInfo[]>();
    const uidOf = new Map<string, string>();
    for (const c of containers) {
      if (c.state === 'CONTAINER_RUNNING') continue;
      // With no minimum age there is nothing to compare (and the runtime's clock may run ahead of ours).
      if (this.policy.minAgeMs > 0 && c.createdAt > newestEvictableNs) continue;
      const uid = getContainerInfoFromLabels(c.labels).podUid;
      const key = `${uid}/${c.metadata.name}`;
      uidOf.set(key, uid);
      const list = units.get(key) ?? [];
      list.push({ id: c.id, name: c.metadata.name, createdAtNs: c.createdAt });
      units.set(key, list);
    }
    for (const list of units.values()) list.sort((a, b) => b.createdAtNs - a.createdAtNs);

    for (const [key, list] of units) {
      if (!isPodWanted(uidOf.get(key) ?? '')) {
        await this.removeOldestN(list, list.length);
        units.delete(key);
      }
    }
    if (this.policy.maxPerPodContainer >= 0) {
      for (const [key, list] of units)
        units.set(key, await this.removeOldestN(list, list.length - this.policy.maxPerPodContainer));
    }
    if (this.policy.maxContainers >= 0) {
      let total = 0;
      for (const list of units.values()) total += list.length;
      if (total > this.policy.maxContainers && units.size > 0) {
        // An equal share per container (at least one), then the oldest overall.
        const perUnit = Math.max(1, Math.floor(this.policy.maxContainers / units.size));
        for (const [key, list] of units)
          units.set(key, await this.removeOldestN(list, list.length - perUnit));
        const flat = [...units.values()].flat().sort((a, b) => b.createdAtNs - a.createdAtNs);
        if (flat.length > this.policy.maxContainers)
          await this.removeOldestN(flat, flat.length - this.policy.maxContainers);
      }
    }
  }

  /** Removes the last toRemove entries (the oldest) and returns the rest. */
  private async removeOldestN(list: ContainerGCInfo[], toRemove: number): Promise<ContainerGCInfo[]> {
    if (toRemove <= 0) return list;
    const keep = list.length - toRemove;
    for (let i = list.length - 1; i >= keep; i--) {
      const c = list[i] as ContainerGCInfo;
      try {
        await this.opts.removeContainer(c.id);
      } catch (err) {
        log.error('Failed to remove container', { containerID: c.id, err: errorMessage(err) });
      }
    }
    // Counted as removed even when removal failed, so as not to remove more than the policy asks.
    return list.slice(0, keep);
  }

  private async evictSandboxes(isPodWanted: (uid: string) => boolean): Promise<void> {
    const containers: Container[] = await this.opts.runtimeService.listContainers();
    const withContainers = new Set(containers.map((c) => c.podSandboxId));
    const sandboxes: PodSandbox[] = await this.opts.runtimeService.listPodSandbox();
    const byPod = new Map<string, SandboxGCInfo[]>();
    for (const s of sandboxes) {
      const list = byPod.get(s.metadata.uid) ?? [];
      list.push({
        id: s.id,
        createdAtNs: s.createdAt,
        active: s.state === 'SANDBOX_READY' || withContainers.has(s.id),
      });
      byPod.set(s.metadata.uid, list);
    }
    for (const [uid, list] of byPod) {
      list.sort((a, b) => b.createdAtNs - a.createdAtNs);
      // A wanted pod keeps its newest sandbox even when dead: it carries the pod's last attempt number.
      const keep = isPodWanted(uid) ? 1 : 0;
      for (const s of list.slice(keep)) if (!s.active) await this.removeSandbox(s.id);
    }
  }

  private async removeSandbox(id: string): Promise<void> {
    // The kubelet stops sandboxes before GC sees them; stopping again guards the rare case it did not.
    try {
      await this.opts.runtimeService.stopPodSandbox(id);
    } catch (err) {
      if (!isNotFound(err)) {
        log.error('Failed to stop sandbox before removing', { sandboxID: id, err: errorMessage(err) });
        return;
      }
    }
    try {
      await this.opts.runtimeService.removePodSandbox(id);
    } catch (err) {
      if (!isNotFound(err)) log.error('Failed to remove sandbox', { sandboxID: id, err: errorMessage(err) });
    }
  }

  private async evictPodLogsDirectories(isPodWanted: (uid: string) => boolean): Promise<void> {
    let names: string[] = [];
    try {
      names = await readdir(this.opts.podLogsDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        log.error('Failed to read pod logs directory', {
          path: this.opts.podLogsDir,
          err: errorMessage(err),
        });
    }
    for (const name of names) {
      if (isPodWanted(parsePodUidFromLogsDirectory(name))) continue;
      try {
        await rm(path.join(this.opts.podLogsDir, name), { recursive: true, force: true });
      } catch (err) {
        log.error('Failed to remove pod logs directory', { path: name, err: errorMessage(err) });
      }
    }
    if (this.opts.legacyContainerLogsDir === '') return;
    let links: string[] = [];
    try {
      links = (await readdir(this.opts.legacyContainerLogsDir)).filter((n) => n.endsWith('.log'));
    } catch {
      return;
    }
    for (const name of links) {
      const link = path.join(this.opts.legacyContainerLogsDir, name);
      try {
        if (!(await lstat(link)).isSymbolicLink()) continue;
        await stat(link);
      } catch (err) {
        // A dangling symlink: its container's log is gone.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') await unlink(link).catch(() => undefined);
      }
    }
  }
}
