/**
 * Upstream's realImageGCManager (pkg/kubelet/images/image_gc_manager.go): it remembers when each
 * image was first seen and last used by a container, and every ImageGCPeriod, when the image
 * filesystem is used past imageGCHighThresholdPercent, removes the least recently used images no
 * container uses (dead ones included) until usage is down to imageGCLowThresholdPercent; images
 * younger than imageMinimumGCAge, pinned ones and the sandbox (pause) image are never removed,
 * and images unused for imageMaximumGCAge are removed whatever the usage. Falling short records
 * a FreeDiskSpaceFailed event on the node, a pass that fails a second time in a row an
 * ImageGCFailed one (upstream: kubelet.go StartGarbageCollection). The eviction manager calls
 * deleteUnusedImages under disk pressure.
 */
import type { Image, ImageService, RuntimeService } from '../cri/types.js';
import type { ObjectEventRecorder } from '../events/event-recorder.js';
import { nodeRef } from '../api/node.js';
import type { Clock, TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { FsStats } from '../stats/summary-types.js';

const log = logger('images');

/** Upstream's ImageGCPeriod. */
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

export interface ImageGCPolicy {
  highThresholdPercent: number;
  lowThresholdPercent: number;
  minAgeMs: number;
  /** 0: no maximum age. */
  maxAgeMs: number;
}

interface ImageRecord {
  firstDetectedMs: number;
  lastUsedMs: number;
  size: number;
  pinned: boolean;
}

export interface ImageGCManagerOptions {
  runtimeService: Pick<RuntimeService, 'listContainers'>;
  imageService: Pick<ImageService, 'listImages' | 'removeImage'>;
  /** The image filesystem's size and free space (the stats provider's). */
  imageFsStats: () => Promise<FsStats | undefined>;
  /** The sandbox image (--pod-infra-container-image): never removed, as containerd pins it. */
  sandboxImage: string;
  policy: ImageGCPolicy;
  clock: Clock;
  nodeName: string;
  recorder?: ObjectEventRecorder;
  periodMs?: number;
  runtimeRequestTimeoutMs: number;
}

function normalize(ref: string): string {
  const withTag = /:[^/]+$/.test(ref) || ref.includes('@') ? ref : `${ref}:latest`;
  if (withTag.includes('/') && /[.:]/.test(withTag.split('/')[0] ?? '')) return withTag;
  return withTag.includes('/') ? `docker.io/${withTag}` : `docker.io/library/${withTag}`;
}

export class ImageGCManager {
  private readonly records = new Map<string, ImageRecord>();
  private timer: TimerHandle | undefined;
  private stopped = true;
  private prevGcFailed = false;
  /** Whether one detection succeeded; the images the first finds date from an unknown past, as upstream. */
  private initialized = false;

  constructor(private readonly opts: ImageGCManagerOptions) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      void this.garbageCollect()
        .then(
          () => {
            if (this.prevGcFailed) log.info('Image garbage collection succeeded');
            this.prevGcFailed = false;
          },
          (err: unknown) => this.gcFailed(err),
        )
        .finally(() => this.schedule(this.opts.periodMs ?? IMAGE_GC_PERIOD_MS));
    }, delayMs);
  }

  /** The first failure may be stats not being ready yet: only a repeated one is told on the node. */
  private gcFailed(err: unknown): void {
    if (this.prevGcFailed) {
      log.error('Image garbage collection failed multiple times in a row', { err: errorMessage(err) });
      this.opts.recorder?.eventFor(
        nodeRef(this.opts.nodeName),
        'Warning',
        'ImageGCFailed',
        errorMessage(err),
      );
    } else {
      log.error('Image garbage collection failed once. Stats initialization may not have completed yet', {
        err: errorMessage(err),
      });
    }
    this.prevGcFailed = true;
  }

  private call() {
    return { timeoutMs: this.opts.runtimeRequestTimeoutMs };
  }

  /** Upstream detectImages: records new images, marks those containers use as used now; returns the in-use IDs. */
  private async detectImages(nowMs: number): Promise<{ images: Image[]; inUse: Set<string> }> {
    const [images, containers] = await Promise.all([
      this.opts.imageService.listImages(undefined, this.call()),
      this.opts.runtimeService.listContainers({}, this.call()),
    ]);
    const byRef = new Map<string, string>();
    for (const i of images) {
      byRef.set(i.id, i.id);
      for (const t of i.repoTags) byRef.set(t, i.id);
      for (const d of i.repoDigests) byRef.set(d, i.id);
    }
    const inUse = new Set<string>();
    for (const c of containers) {
      const id = byRef.get(c.imageRef) ?? byRef.get(c.image.image) ?? byRef.get(normalize(c.image.image));
      if (id) inUse.add(id);
    }
    const sandbox = byRef.get(this.opts.sandboxImage) ?? byRef.get(normalize(this.opts.sandboxImage));
    const live = new Set<string>();
    // Upstream's first detection marks what is already there as detected at the zero time, so that
    // imageMinimumGCAge does not shield images the node had before the kubelet (re)started.
    const detectedMs = this.initialized ? nowMs : 0;
    this.initialized = true;
    for (const i of images) {
      live.add(i.id);
      const r = this.records.get(i.id) ?? {
        firstDetectedMs: detectedMs,
        lastUsedMs: 0,
        size: 0,
        pinned: false,
      };
      r.size = i.size;
      r.pinned = i.pinned || i.id === sandbox;
      if (inUse.has(i.id)) r.lastUsedMs = nowMs;
      this.records.set(i.id, r);
    }
    for (const id of this.records.keys()) if (!live.has(id)) this.records.delete(id);
    return { images, inUse };
  }

  /** Upstream GarbageCollect: old images first, then down to the low threshold when over the high one. */
  async garbageCollect(): Promise<void> {
    const now = this.opts.clock.now();
    const { policy } = this.opts;
    // Every pass notes what is there and in use, as upstream's detect loop does beside GC.
    await this.detectImages(now);
    if (policy.maxAgeMs > 0) await this.freeOldImages(now);
    const fs = await this.opts.imageFsStats();
    const capacity = fs?.capacityBytes ?? 0;
    const available = fs?.availableBytes ?? 0;
    if (capacity === 0) {
      const err = new Error('invalid capacity 0 on image filesystem');
      this.opts.recorder?.eventFor(
        nodeRef(this.opts.nodeName),
        'Warning',
        'InvalidDiskCapacity',
        err.message,
      );
      throw err;
    }
    const usagePercent = 100 - Math.trunc((available * 100) / capacity);
    if (usagePercent < policy.highThresholdPercent) return;
    const amountToFree = Math.trunc((capacity * (100 - policy.lowThresholdPercent)) / 100) - available;
    log.info(
      'Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold',
      {
        usage: usagePercent,
        highThreshold: policy.highThresholdPercent,
        amountToFree,
        lowThreshold: policy.lowThresholdPercent,
      },
    );
    const freed = await this.freeSpace(amountToFree, now);
    if (freed < amountToFree) {
      const message = `Failed to garbage collect required amount of images. Attempted to free ${amountToFree} bytes, but only found ${freed} bytes eligible to free.`;
      this.opts.recorder?.eventFor(nodeRef(this.opts.nodeName), 'Warning', 'FreeDiskSpaceFailed', message);
      throw new Error(message);
    }
  }

  /** Upstream DeleteUnusedImages: every image that may be removed, whatever the usage. */
  async deleteUnusedImages(): Promise<void> {
    log.info('Attempting to delete unused images');
    await this.freeSpace(Number.MAX_SAFE_INTEGER, this.opts.clock.now());
  }

  private async freeOldImages(now: number): Promise<void> {
    const { inUse } = await this.detectImages(now);
    for (const [id, r] of this.records) {
      if (inUse.has(id) || r.pinned) continue;
      const lastUsed = r.lastUsedMs || r.firstDetectedMs;
      if (now - lastUsed <= this.opts.policy.maxAgeMs) continue;
      await this.removeImage(id, r);
    }
  }

  /** Least recently used first; in-use, pinned and too young images are kept. Resolves with the bytes freed. */
  private async freeSpace(bytesToFree: number, freeTime: number): Promise<number> {
    const { inUse } = await this.detectImages(freeTime);
    const candidates = [...this.records]
      .filter(([id, r]) => !inUse.has(id) && !r.pinned)
      .sort(([, a], [, b]) => a.lastUsedMs - b.lastUsedMs || a.firstDetectedMs - b.firstDetectedMs);
    let freed = 0;
    for (const [id, r] of candidates) {
      if (freed >= bytesToFree) break;
      if (freeTime - r.firstDetectedMs < this.opts.policy.minAgeMs) {
        log.v(5, "Image ID's age is less than the policy's minAge, not eligible for garbage collection", {
          imageID: id,
        });
        continue;
      }
      if (await this.removeImage(id, r)) freed += r.size;
    }
    return freed;
  }

  private async removeImage(id: string, r: ImageRecord): Promise<boolean> {
    log.info('Removing image to free bytes', { imageID: id, size: r.size });
    try {
      await this.opts.imageService.removeImage({ image: id }, this.call());
      this.records.delete(id);
      return true;
    } catch (err) {
      log.error('Failed to remove image', { imageID: id, err: errorMessage(err) });
      return false;
    }
  }
}
