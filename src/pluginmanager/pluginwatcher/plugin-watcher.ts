/**
 * The plugin watcher (upstream: pluginwatcher.Watcher): watches `<root-dir>/plugins_registry` and
 * the folders under it for unix sockets. A socket created (or found by the walk at start) goes into
 * the desired state; one removed goes out of it. Names starting with `.` are ignored, as upstream.
 *
 * Upstream uses fsnotify (inotify); here fs.watch, one watcher per folder as upstream adds one per
 * folder. fs.watch reports both creation and removal as `rename`, so each event is settled by a
 * stat of the path.
 */
import { watch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import type { DesiredStateOfWorld } from '../cache/desired-state-of-world.js';

const log = logger('pluginwatcher');

export class PluginWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private stopped = false;
  /** Events are handled one at a time, in order, so a quick create-remove ends removed. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly dir: string,
    private readonly desired: DesiredStateOfWorld,
  ) {}

  async start(): Promise<void> {
    log.v(2, 'Plugin Watcher Start', { path: this.dir });
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o755 });
    } catch (err) {
      throw new Error(`error (re-)creating root ${this.dir}: ${errorMessage(err)}`);
    }
    try {
      await this.traversePluginDir(this.dir);
    } catch (err) {
      log.error('Failed to traverse plugin socket path', { path: this.dir, err: errorMessage(err) });
    }
  }

  /** Waits for the events already received to be handled (tests). */
  settled(): Promise<void> {
    return this.queue;
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  private addWatch(dir: string): void {
    if (this.stopped || this.watchers.has(dir)) return;
    const w = watch(dir, { persistent: false }, (_event, name) => {
      if (name === null) return;
      const p = path.join(dir, name.toString());
      this.queue = this.queue.then(() => this.handleEvent(p)).catch(() => undefined);
    });
    w.on('error', (err) => {
      // The folder itself went away: its watcher is done; its sockets go with it.
      log.v(4, 'FsWatcher received error', { path: dir, err: errorMessage(err) });
      w.close();
      this.watchers.delete(dir);
    });
    this.watchers.set(dir, w);
  }

  /** Watches dir and walks it: folders are watched, sockets are added (upstream: traversePluginDir). */
  private async traversePluginDir(dir: string): Promise<void> {
    this.addWatch(dir);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if (dir === this.dir) throw new Error(`error accessing path: ${dir} error: ${errorMessage(err)}`);
      log.error('Error accessing path', { path: dir, err: errorMessage(err) });
      return;
    }
    for (const name of names) {
      const p = path.join(dir, name);
      let st;
      try {
        st = await lstat(p);
      } catch (err) {
        log.error('Error accessing path', { path: p, err: errorMessage(err) });
        continue;
      }
      if (st.isDirectory()) await this.traversePluginDir(p);
      else if (st.isSocket()) this.handleCreate(p, name);
      else log.v(5, 'Ignoring file', { path: p });
    }
  }

  private async handleEvent(p: string): Promise<void> {
    if (this.stopped) return;
    let st;
    try {
      st = await lstat(p);
    } catch {
      this.handleDelete(p);
      return;
    }
    const name = path.basename(p);
    if (name.startsWith('.')) {
      log.v(5, "Ignoring file (starts with '.')", { path: name });
      return;
    }
    if (st.isDirectory()) {
      await this.traversePluginDir(p);
      return;
    }
    if (!st.isSocket()) {
      log.v(5, 'Ignoring non socket file', { path: name });
      return;
    }
    // A socket bound again at the same path is a new plugin: its id changes (upstream's timestamp).
    this.handleCreate(p, name);
  }

  private handleCreate(socketPath: string, name: string): void {
    if (name.startsWith('.')) return;
    log.v(2, 'Adding socket path or updating timestamp to desired state cache', { path: socketPath });
    this.desired.addOrUpdatePlugin(socketPath);
  }

  private handleDelete(p: string): void {
    const w = this.watchers.get(p);
    if (w) {
      w.close();
      this.watchers.delete(p);
    }
    // A removed folder takes its sockets with it.
    for (const plugin of this.desired.pluginsToRegister()) {
      if (plugin.socketPath === p || plugin.socketPath.startsWith(`${p}${path.sep}`)) {
        log.v(2, 'Removing socket path from desired state cache', { path: plugin.socketPath });
        this.desired.removePlugin(plugin.socketPath);
      }
    }
  }
}
