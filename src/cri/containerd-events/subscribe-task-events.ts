/**
 * containerd's event stream (`containerd.services.events.v1.Events/Subscribe`), narrowed to the task
 * events an evented PLEG needs: a container's task started, exited, was OOM-killed or was deleted.
 * The client is generated from containerd 1.6's protos (./proto, `npm run gen:cri`); each envelope
 * carries its event as a typeurl `Any`, decoded here by its type name.
 *
 * containerd does not replay events: whatever happened while the stream was down is lost. So the
 * stream is re-opened with back-off whenever it breaks, and `onSubscribe` tells the caller each time
 * a new stream starts, so that it can relist to cover the gap (as upstream's evented PLEG does).
 */
import * as grpc from '@grpc/grpc-js';
import { retryDelayMs } from '../../lib/backoff.js';
import { realClock, type Clock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import { parseCriEndpoint } from '../cri-endpoint.js';
// containerd's proto paths have an `api/` folder of their own, not src/api: the layer rule's pattern does not apply.
// eslint-disable-next-line no-restricted-imports
import {
  TaskDelete,
  TaskExit,
  TaskOOM,
  TaskStart,
} from './generated/github.com/containerd/containerd/api/events/task.js';
// eslint-disable-next-line no-restricted-imports
import {
  EventsClient,
  SubscribeRequest,
  type Envelope,
} from './generated/github.com/containerd/containerd/api/services/events/v1/events.js';

const log = logger('containerd_events');

/** The containerd namespace the CRI plugin keeps the kubelet's pods in. */
export const K8S_NAMESPACE = 'k8s.io';

/** The topics of the task events this client decodes. */
export const TASK_EVENT_TOPICS = ['/tasks/start', '/tasks/exit', '/tasks/oom', '/tasks/delete'] as const;

interface EventBase {
  namespace: string;
  topic: string;
  /** When containerd published the event. */
  timestamp: Date | undefined;
  /** The container the task belongs to (the CRI container or sandbox ID). */
  containerId: string;
}

/** A task's init process (or an exec, for TaskExit and TaskDelete with an `execId`) started. */
export interface TaskStartEvent extends EventBase {
  type: 'TaskStart';
  pid: number;
}

/** A process of the task exited; `execId` is '' for the container's own process. */
export interface TaskExitEvent extends EventBase {
  type: 'TaskExit';
  execId: string;
  pid: number;
  exitStatus: number;
  exitedAt: Date | undefined;
}

export interface TaskOOMEvent extends EventBase {
  type: 'TaskOOM';
}

export interface TaskDeleteEvent extends EventBase {
  type: 'TaskDelete';
  execId: string;
  pid: number;
  exitStatus: number;
  exitedAt: Date | undefined;
}

export type TaskEvent = TaskStartEvent | TaskExitEvent | TaskOOMEvent | TaskDeleteEvent;

export interface SubscribeTaskEventsOptions {
  /** Called each time a stream is (re)opened: events from before it may have been missed. */
  onSubscribe?: () => void;
  clock?: Clock;
  /** First pause before re-opening a broken stream (default 100 ms); doubles up to maxBackoffMs (default 5 s). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Decodes one envelope into a task event; undefined for any other event (or one whose payload
 * does not decode). The type name is the `Any`'s type URL after its last '/', so
 * `containerd.events.TaskStart` and `type.googleapis.com/containerd.events.TaskStart` both match.
 */
export function taskEventFromEnvelope(envelope: Envelope): TaskEvent | undefined {
  const any = envelope.event;
  if (!any) return undefined;
  const base = { namespace: envelope.namespace, topic: envelope.topic, timestamp: envelope.timestamp };
  const typeName = any.typeUrl.slice(any.typeUrl.lastIndexOf('/') + 1);
  switch (typeName) {
    case 'containerd.events.TaskStart': {
      const e = TaskStart.decode(any.value);
      return { ...base, type: 'TaskStart', containerId: e.containerId, pid: e.pid };
    }
    case 'containerd.events.TaskExit': {
      const e = TaskExit.decode(any.value);
      return {
        ...base,
        type: 'TaskExit',
        containerId: e.containerId,
        execId: e.id === e.containerId ? '' : e.id,
        pid: e.pid,
        exitStatus: e.exitStatus,
        exitedAt: e.exitedAt,
      };
    }
    case 'containerd.events.TaskOOM':
      return { ...base, type: 'TaskOOM', containerId: TaskOOM.decode(any.value).containerId };
    case 'containerd.events.TaskDelete': {
      const e = TaskDelete.decode(any.value);
      return {
        ...base,
        type: 'TaskDelete',
        containerId: e.containerId,
        execId: e.id,
        pid: e.pid,
        exitStatus: e.exitStatus,
        exitedAt: e.exitedAt,
      };
    }
    default:
      return undefined;
  }
}

/**
 * The filters sent to containerd: each of the caller's filters (containerd's filter syntax, e.g.
 * `topic=="/tasks/exit"`; none means every task topic) joined, with ',' (and), to the namespace.
 * containerd passes an event that matches any one filter.
 */
export function subscribeFilters(namespace: string, filters: readonly string[]): string[] {
  const wanted = filters.length > 0 ? filters : TASK_EVENT_TOPICS.map((t) => `topic=="${t}"`);
  return wanted.map((f) => `namespace==${namespace},${f}`);
}

/**
 * Streams the task events of namespace from containerd's socket (`unix:///run/containerd/containerd.sock`
 * or a path) to onEvent until signal aborts, re-opening the stream with back-off whenever it breaks
 * (containerd restarted, socket gone). Resolves once aborted; never rejects for a broken stream.
 * onEvent runs synchronously per event, in containerd's order; what it throws is logged, not fatal.
 */
export async function subscribeTaskEvents(
  socket: string,
  namespace: string,
  filters: readonly string[],
  onEvent: (event: TaskEvent) => void,
  signal: AbortSignal,
  options: SubscribeTaskEventsOptions = {},
): Promise<void> {
  const clock = options.clock ?? realClock;
  const initialMs = options.initialBackoffMs ?? 100;
  const maxMs = options.maxBackoffMs ?? 5000;
  const target = parseCriEndpoint(socket).grpcTarget;
  const client = new EventsClient(target, grpc.credentials.createInsecure(), {
    'grpc.initial_reconnect_backoff_ms': initialMs,
    'grpc.max_reconnect_backoff_ms': maxMs,
  });
  const request = SubscribeRequest.fromPartial({ filters: subscribeFilters(namespace, filters) });
  try {
    for (let failures = 0; !signal.aborted;) {
      const { gotEvent, error } = await streamOnce(client, namespace, request, onEvent, signal, options);
      if (signal.aborted) break;
      if (gotEvent) failures = 0;
      const delayMs = retryDelayMs(failures++, initialMs, maxMs);
      log.v(failures > 1 ? 4 : 2, 'containerd event stream broke; re-subscribing', {
        socket,
        err: error,
        retryInMs: delayMs,
      });
      await clock.sleep(delayMs, signal).catch(() => undefined);
    }
  } finally {
    client.close();
  }
}

/** One Subscribe stream, until it ends, fails or signal aborts. */
function streamOnce(
  client: EventsClient,
  namespace: string,
  request: SubscribeRequest,
  onEvent: (event: TaskEvent) => void,
  signal: AbortSignal,
  options: SubscribeTaskEventsOptions,
): Promise<{ gotEvent: boolean; error: string }> {
  return new Promise((resolve) => {
    let gotEvent = false;
    const metadata = new grpc.Metadata();
    // containerd reads the namespace of a call from this header (its namespaces package).
    metadata.set('containerd-namespace', namespace);
    // grpc-js calls do not wait for a ready channel: while containerd is down this fails at once,
    // and the loop above owns the back-off.
    const call = client.subscribe(request, metadata);
    const onAbort = (): void => call.cancel();
    signal.addEventListener('abort', onAbort, { once: true });
    options.onSubscribe?.();
    let settled = false;
    const finish = (error: string): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      resolve({ gotEvent, error });
    };
    call.on('data', (envelope: Envelope) => {
      gotEvent = true;
      let event: TaskEvent | undefined;
      try {
        event = taskEventFromEnvelope(envelope);
      } catch (err) {
        log.error('Cannot decode a containerd event', { topic: envelope.topic, err: errorMessage(err) });
        return;
      }
      if (!event) return;
      try {
        onEvent(event);
      } catch (err) {
        log.error('A containerd event handler failed', { topic: envelope.topic, err: errorMessage(err) });
      }
    });
    call.on('error', (err: Error) => finish(errorMessage(err)));
    call.on('end', () => finish('the stream ended'));
    call.on('close', () => finish('the stream closed'));
  });
}
