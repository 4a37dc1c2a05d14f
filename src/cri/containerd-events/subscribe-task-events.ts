/**
 * containerd's event stream (`containerd.services.events.v1.Events/Subscribe`), narrowed to the task
 * events an evented PLEG needs: a container's task started, exited, was OOM-killed or was deleted.
 * The messages are generated from containerd 1.6's protos (./proto, `npm run gen:cri`); each envelope
 * carries its event as a typeurl `Any`, decoded here by its type name. The call itself goes over
 * node:http2 with the project's gRPC framing (grpc-over-http2.ts), not grpc-js: this stream is open for
 * as long as the kubelet runs, and grpc-js would cost the kubelet several MiB of memory for it alone.
 *
 * containerd does not replay events: whatever happened while the stream was down is lost. So the
 * stream is re-opened with back-off whenever it breaks, and `onSubscribe` tells the caller each time
 * a new stream starts, so that it can relist to cover the gap (as upstream's evented PLEG does).
 */
import { retryDelayMs } from '../../lib/backoff.js';
import { realClock, type Clock } from '../../lib/clock.js';
import { errorMessage } from '../../lib/errors.js';
import { grpcMethods } from '../../lib/grpc-definitions.js';
import { GrpcStatus, grpcCallError } from '../../lib/grpc-status.js';
import { grpcMessageFrame } from '../../lib/grpc-wire.js';
import { logger } from '../../lib/log.js';
import { parseCriEndpoint } from '../cri-endpoint.js';
import { Http2Connection } from '../http2-connection.js';
import { grpcAnswerHandler, grpcRequestFields } from '../grpc-over-http2.js';
// containerd's proto paths have an `api/` folder of their own, not src/api: the layer rule's pattern does not apply.
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import {
  TaskDelete,
  TaskExit,
  TaskOOM,
  TaskStart,
} from './generated/github.com/containerd/containerd/api/events/task.js';
// eslint-disable-next-line @typescript-eslint/no-restricted-imports
import {
  EventsDefinition,
  SubscribeRequest,
  type Envelope,
} from './generated/github.com/containerd/containerd/api/services/events/v1/events.js';

const log = logger('containerd_events');

const SUBSCRIBE = grpcMethods(EventsDefinition).subscribe;
// grpc-js's default receive limit, which this stream had before; an event is a few hundred bytes.
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
// Events are read as they come, so the window bounds nothing held here: it only spares a burst of
// events (a node's pods starting at once) a WINDOW_UPDATE every 32 KiB.
const WINDOW_BYTES = 1024 * 1024;

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
  /** Called each time a stream breaks (not when signal aborts it), with why, before the back-off. */
  onBreak?: (error: string) => void;
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
  const socketPath = parseCriEndpoint(socket).socketPath;
  const body = grpcMessageFrame(
    SUBSCRIBE.requestSerialize(
      SubscribeRequest.fromPartial({ filters: subscribeFilters(namespace, filters) }),
    ),
  );
  for (let failures = 0; !signal.aborted;) {
    const { gotEvent, error } = await streamOnce(socketPath, namespace, body, onEvent, signal, options);
    if (signal.aborted) break;
    options.onBreak?.(error);
    if (gotEvent) failures = 0;
    const delayMs = retryDelayMs(failures++, initialMs, maxMs);
    log.v(failures > 1 ? 4 : 2, 'containerd event stream broke; re-subscribing', {
      socket,
      err: error,
      retryInMs: delayMs,
    });
    await clock.sleep(delayMs, signal).catch(() => undefined);
  }
}

/**
 * One Subscribe stream, until it ends, fails or signal aborts, on a connection of its own that closes
 * with it. A stream breaks almost only when containerd restarts or drops its socket, which leaves the
 * old connection dead or going away, so keeping it would save nothing; one dial per break (at most
 * one per back-off) is free, and the open socket keeps the process up exactly while a stream is,
 * as grpc-js's channel did while its call was active.
 */
function streamOnce(
  socketPath: string,
  namespace: string,
  body: Buffer,
  onEvent: (event: TaskEvent) => void,
  signal: AbortSignal,
  options: SubscribeTaskEventsOptions,
): Promise<{ gotEvent: boolean; error: string }> {
  return new Promise((resolve) => {
    let gotEvent = false;
    let settled = false;
    let streamId = 0;
    const connection = new Http2Connection(socketPath, { windowBytes: WINDOW_BYTES });
    const finish = (error: string): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      connection.close();
      resolve({ gotEvent, error });
    };
    const onAbort = (): void => {
      connection.cancel(streamId);
      finish('cancelled');
    };
    const handler = grpcAnswerHandler({
      peer: socketPath,
      maxMessageBytes: MAX_MESSAGE_BYTES,
      onMessage: (message) => {
        // After a break or an abort from inside onEvent, the rest of a chunk is not wanted.
        if (settled) return;
        let envelope: Envelope;
        try {
          envelope = SUBSCRIBE.responseDeserialize(message);
        } catch (err) {
          // As grpc-js did: an answer that does not decode ends the call; the re-subscription relists.
          connection.cancel(streamId);
          finish(
            grpcCallError(GrpcStatus.INTERNAL, `an event could not be decoded: ${errorMessage(err)}`).message,
          );
          return;
        }
        gotEvent = true;
        deliver(envelope, onEvent);
      },
      cancel: () => connection.cancel(streamId),
      onEnd: (err) => finish(err ? err.message : 'the stream ended'),
    });
    // containerd reads the namespace of a call from this header (its namespaces package). The call
    // does not wait for containerd: while it is down the connect fails at once, and the loop above
    // owns the back-off.
    streamId = connection.request(
      grpcRequestFields(SUBSCRIBE.path, [['containerd-namespace', namespace]]),
      body,
      handler,
    );
    signal.addEventListener('abort', onAbort, { once: true });
    options.onSubscribe?.();
  });
}

/** Hands one envelope's task event to onEvent; neither a payload that does not decode nor what onEvent throws ends the stream. */
function deliver(envelope: Envelope, onEvent: (event: TaskEvent) => void): void {
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
}
