/**
 * The API server as a pod source (upstream pkg/kubelet/config/apiserver.go): a Reflector on the pods
 * bound to this node (`spec.nodeName=<node>`), sending the whole set as a SET on each change, as
 * upstream's UndeltaStore does (the changes that came in one read of the watch as one SET, with each
 * pod's latest version). Mirror pods come too (they are bound to this node): the sync loop
 * tells them apart by their `kubernetes.io/config.mirror` annotation.
 *
 * As upstream, the watch starts only once the node is registered (nodeHasSynced), so that pods are
 * not admitted against a node the API server does not know yet. The first SET marks the source seen.
 */
import type { Pod } from '../api/core-v1.js';
import { Reflector, type ListerWatcher, type ReflectorStatus } from '../k8s/reflector.js';
import { realClock, type Clock } from '../lib/clock.js';
import { logger, type Logger } from '../lib/log.js';
import type { SourceChannel } from './pod-config.js';
import { CONFIG_SOURCE_ANNOTATION } from '../api/pod-source.js';

/** Upstream's WaitForAPIServerSyncPeriod: how often the node's registration is checked before watching. */
export const WAIT_FOR_NODE_SYNC_PERIOD_MS = 1000;

export interface ApiSourceOptions {
  client: ListerWatcher;
  nodeName: string;
  /** PodConfig's 'api' channel. */
  send: SourceChannel;
  /** True once the Node object is registered; the watch waits for it. Absent: start at once. */
  nodeHasSynced?: () => boolean;
  clock?: Clock;
  log?: Logger;
  /** Passed to the reflector; for tests. */
  reflector?: { initialBackoffMs?: number; maxBackoffMs?: number; minWatchTimeoutSeconds?: number };
}

/** Looks up the API server's copy of a pod bound to this node (the status manager compares with it). */
export interface ApiPodLookup {
  getPod(namespace: string, name: string): Pod | undefined;
}

export class ApiSource implements ApiPodLookup {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly reflector: Reflector<Pod>;
  private readonly stopController = new AbortController();
  private running: Promise<void> | undefined;
  private sendScheduled = false;
  // The marked copy of each object the reflector holds. Every SET carries the whole set of pods; an
  // object the watch did not replace is handed over as the same copy again, which PodConfig takes as
  // unchanged without cloning and comparing it (n pods starting would cost n² of those otherwise).
  private readonly marked = new WeakMap<Pod, Pod>();

  constructor(private readonly options: ApiSourceOptions) {
    this.clock = options.clock ?? realClock;
    this.log = options.log ?? logger('config');
    const changed = () => this.scheduleSend();
    this.reflector = new Reflector<Pod>({
      client: options.client,
      ref: { resource: 'pods' },
      fieldSelector: `spec.nodeName=${options.nodeName}`,
      clock: this.clock,
      log: this.log,
      name: `pods spec.nodeName=${options.nodeName}`,
      ...options.reflector,
      handlers: { onAdd: changed, onUpdate: changed, onDelete: changed, onSync: changed },
    });
  }

  start(): void {
    if (this.running) return;
    this.running = this.run();
  }

  /** Stops watching; resolves when the reflector has let go. */
  async stop(): Promise<void> {
    this.stopController.abort(new Error('api source stopped'));
    await this.running;
  }

  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  getPod(namespace: string, name: string): Pod | undefined {
    return this.reflector.get(namespace, name);
  }

  status(): ReflectorStatus {
    return this.reflector.status();
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    const nodeHasSynced = this.options.nodeHasSynced;
    if (nodeHasSynced && !nodeHasSynced()) {
      this.log.info('Waiting for node sync before watching apiserver pods');
      while (!nodeHasSynced()) {
        try {
          await this.clock.sleep(WAIT_FOR_NODE_SYNC_PERIOD_MS, signal);
        } catch {
          return;
        }
        this.log.v(4, 'node sync has not completed yet');
      }
    }
    this.log.info('Watching apiserver');
    await this.reflector.run(signal);
  }

  private markedCopy(pod: Pod): Pod {
    let copy = this.marked.get(pod);
    if (!copy) {
      copy = markSource(pod);
      this.marked.set(pod, copy);
    }
    return copy;
  }

  // One SET for a burst of changes: a list's objects, and every watch event that came in the same
  // read. Each SET costs a pass over every pod (PodConfig's, and the startup observer's), and a busy
  // start reads several events at once; a microtask would send a SET per event, as the watch hands
  // each event over in a microtask of its own. setImmediate waits only for what was already read.
  private scheduleSend(): void {
    if (this.sendScheduled || !this.reflector.hasSynced()) return;
    this.sendScheduled = true;
    setImmediate(() => {
      this.sendScheduled = false;
      if (this.stopController.signal.aborted) return;
      this.options.send({ op: 'SET', pods: this.reflector.list().map((pod) => this.markedCopy(pod)) });
    });
  }
}

/** A copy (as far as is changed) carrying the config.source annotation, as upstream sets on pods it takes in. */
function markSource(pod: Pod): Pod {
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      annotations: { ...pod.metadata.annotations, [CONFIG_SOURCE_ANNOTATION]: 'api' },
    },
  };
}
