/**
 * Upstream's fsResourceAnalyzer: the disk usage of each pod's volumes, measured in the background
 * every volumeStatsAggPeriod and served from a cache, so /stats/summary and the eviction manager
 * never walk a volume on their own path. Volumes are split as upstream's GetPodVolumeStats splits
 * them: local ephemeral ones (disk emptyDir, configMap, downwardAPI, gitRepo) count towards the
 * pod's ephemeral storage, the rest are reported only.
 */
import type { Pod, Volume, VolumeSourceKey } from '../api/core-v1.js';
import type { Clock, TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { diskUsage, fsInfo } from './fs-info.js';
import { type VolumeStats } from './summary-types.js';

const log = logger('stats');

/** A floor on the refresh period: a walk of every volume must never run back to back. */
export const MIN_VOLUME_STATS_PERIOD_MS = 1000;

/** The plugin folders (escaped, as on disk) of the volume sources this kubelet mounts. */
const PLUGIN_DIRS: Partial<Record<VolumeSourceKey, string>> = {
  emptyDir: 'kubernetes.io~empty-dir',
  configMap: 'kubernetes.io~configmap',
  secret: 'kubernetes.io~secret',
  projected: 'kubernetes.io~projected',
  downwardAPI: 'kubernetes.io~downward-api',
};

/** Upstream util.IsLocalEphemeralVolume. */
export function isLocalEphemeralVolume(v: Volume): boolean {
  if (v['gitRepo'] || v['configMap'] || v['downwardAPI']) return true;
  const emptyDir = v['emptyDir'] as { medium?: string } | undefined;
  return emptyDir !== undefined && (emptyDir.medium ?? '') === '';
}

export interface PodVolumeStats {
  ephemeral: VolumeStats[];
  persistent: VolumeStats[];
}

export interface FsResourceAnalyzerOptions {
  rootDir: string;
  clock: Clock;
  periodMs: number;
  /** The pods whose volumes to measure (the kubelet's active pods). */
  pods: () => readonly Pod[];
}

export class FsResourceAnalyzer {
  private readonly cache = new Map<string, PodVolumeStats>();
  private timer: TimerHandle | undefined;
  private running = false;
  private stopped = false;
  private readonly periodMs: number;

  constructor(private readonly opts: FsResourceAnalyzerOptions) {
    this.periodMs = Math.max(MIN_VOLUME_STATS_PERIOD_MS, opts.periodMs);
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The last measurement of the pod's volumes; empty until the first walk finished. */
  getPodVolumeStats(pod: Pod): PodVolumeStats {
    return this.cache.get(pod.metadata.uid ?? '') ?? { ephemeral: [], persistent: [] };
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      void this.refresh().finally(() => this.schedule(this.periodMs));
    }, delayMs);
  }

  /** Walks every active pod's volumes once; exported for tests and the bench. */
  async refresh(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const pods = this.opts.pods();
      const live = new Set<string>();
      for (const pod of pods) {
        const uid = pod.metadata.uid;
        if (!uid) continue;
        live.add(uid);
        try {
          this.cache.set(uid, await this.measurePod(pod, uid));
        } catch (err) {
          log.v(2, 'Unable to measure pod volumes', {
            pod: `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`,
            err: errorMessage(err),
          });
        }
      }
      for (const uid of this.cache.keys()) if (!live.has(uid)) this.cache.delete(uid);
    } finally {
      this.running = false;
    }
  }

  private async measurePod(pod: Pod, uid: string): Promise<PodVolumeStats> {
    const out: PodVolumeStats = { ephemeral: [], persistent: [] };
    for (const v of pod.spec?.volumes ?? []) {
      const source = (Object.keys(PLUGIN_DIRS) as VolumeSourceKey[]).find((k) => v[k] !== undefined);
      if (!source) continue;
      const dir = `${this.opts.rootDir}/pods/${uid}/volumes/${PLUGIN_DIRS[source] ?? ''}/${v.name}`;
      const nowMs = this.opts.clock.now();
      let info;
      try {
        info = await fsInfo(dir, nowMs);
      } catch {
        continue; // not mounted (yet, or any more)
      }
      const usage = await diskUsage(dir);
      const stats: VolumeStats = {
        name: v.name,
        time: nowMs,
        availableBytes: info.availableBytes,
        capacityBytes: info.capacityBytes,
        usedBytes: usage.usedBytes,
        inodesFree: info.inodesFree,
        inodes: info.inodes,
        inodesUsed: usage.inodesUsed,
      };
      (isLocalEphemeralVolume(v) ? out.ephemeral : out.persistent).push(stats);
    }
    return out;
  }
}
