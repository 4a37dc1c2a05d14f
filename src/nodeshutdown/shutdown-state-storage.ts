/**
 * <root-dir>/graceful_node_shutdown_state: when the last graceful shutdown started and ended, as
 * upstream writes it (JSON `{"startTime": ..., "endTime": ...}`, Go's zero time for "not yet"),
 * replaced atomically so a machine that powers off mid-write never leaves half a file.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/** Upstream's localStorageStateFile. */
export const LOCAL_STORAGE_STATE_FILE = 'graceful_node_shutdown_state';
/** Go's time.Time zero value as encoding/json writes it. */
const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

/** Milliseconds since the epoch; 0 for "not set". */
export interface ShutdownState {
  startMs: number;
  endMs: number;
}

export class ShutdownStateStorage {
  readonly path: string;

  constructor(stateDirectory: string) {
    this.path = path.join(stateDirectory, LOCAL_STORAGE_STATE_FILE);
  }

  async store(state: ShutdownState): Promise<void> {
    const text = JSON.stringify({ startTime: goTime(state.startMs), endTime: goTime(state.endMs) });
    const tmp = path.join(
      path.dirname(this.path),
      `.tmp-${path.basename(this.path)}${randomBytes(4).toString('hex')}`,
    );
    const f = await open(tmp, 'w', 0o644);
    try {
      await f.writeFile(text);
      await f.sync();
    } finally {
      await f.close();
    }
    try {
      await rename(tmp, this.path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /** The stored state; zeros when there is no file. A file that cannot be parsed is an error. */
  async load(): Promise<ShutdownState> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { startMs: 0, endMs: 0 };
      throw err;
    }
    const doc = JSON.parse(text) as { startTime?: unknown; endTime?: unknown };
    return { startMs: parseGoTime(doc.startTime), endMs: parseGoTime(doc.endTime) };
  }
}

function goTime(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString() : GO_ZERO_TIME;
}

function parseGoTime(v: unknown): number {
  if (v === undefined || v === null || v === GO_ZERO_TIME) return 0;
  if (typeof v !== 'string') throw new Error(`expected a time, got ${JSON.stringify(v)}`);
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw new Error(`expected an RFC 3339 time, got ${JSON.stringify(v)}`);
  return Math.max(ms, 0);
}
