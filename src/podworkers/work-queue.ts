/**
 * Pods waiting for their next sync (upstream: queue.WorkQueue). Pod workers put a pod back after each
 * sync with the delay before it should sync again; the sync loop's 1 s tick takes the pods whose time
 * has come and hands them to the workers.
 */
import type { Clock } from '../lib/clock.js';

export interface WorkQueue {
  /** Schedules uid delayMs from now, replacing any earlier schedule for it (upstream does the same). */
  enqueue(uid: string, delayMs: number): void;
  /** Takes and returns the pods whose time has come. */
  getReady(): string[];
}

export class BasicWorkQueue implements WorkQueue {
  private readonly dueMs = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  enqueue(uid: string, delayMs: number): void {
    this.dueMs.set(uid, this.clock.now() + delayMs);
  }

  getReady(): string[] {
    const now = this.clock.now();
    const ready: string[] = [];
    for (const [uid, due] of this.dueMs) {
      if (due <= now) {
        ready.push(uid);
        this.dueMs.delete(uid);
      }
    }
    return ready;
  }

  get size(): number {
    return this.dueMs.size;
  }
}
