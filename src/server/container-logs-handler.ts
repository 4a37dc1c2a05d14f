/**
 * GET /containerLogs/{namespace}/{pod}/{container}: upstream's getContainerLogs and
 * GetKubeletContainerLogs. The query is a v1.PodLogOptions (follow, previous, sinceSeconds, sinceTime,
 * timestamps, tailLines or the legacy tail, limitBytes, stream); the container to read comes from the
 * pod's status (the running one, or the last terminated one for previous=true), its log path from the
 * runtime. Errors keep upstream's codes and words: 400 for a query that does not decode, 422 for
 * options that do not validate, 404 for an unknown pod or container name, 400 for a container with
 * no logs to show.
 */
import type { ContainerStatus, Pod } from '../api/core-v1.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { readLogs, type LogOptions } from './container-logs.js';
import type { LogStream } from './cri-log-format.js';
import { parseRfc3339Nano } from './cri-log-format.js';
import { findPod } from './find-pod.js';
import type { ServerState } from './kubelet-server.js';
import { methodNotAllowed, notFound, sendText, type RequestContext } from './request-context.js';

const log = logger('logs');

/** Upstream's server WriteTimeout: nothing the kubelet writes waits longer than this for a client. */
const MAX_STALL_MS = 4 * 60 * 60_000;

/** v1.PodLogOptions as the query carries it; absent numbers are undefined. */
export interface PodLogOptions {
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  sinceSeconds?: number;
  sinceTimeNs?: bigint;
  tailLines?: number;
  limitBytes?: number;
  stream?: 'Stdout' | 'Stderr' | 'All';
}

/** Go's query conversion for bool: absent is false, "0" and "false" are false, anything else is true. */
function queryBool(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

function queryInt(q: URLSearchParams, name: string): number | undefined | 'invalid' {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^[+-]?\d+$/.test(v)) return 'invalid';
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : 'invalid';
}

/** Decodes the query (the legacy "tail" too: "all" means no tailLines); undefined when it does not decode. */
export function decodePodLogOptions(query: URLSearchParams): PodLogOptions | undefined {
  const q = new URLSearchParams(query);
  const tail = q.get('tail');
  if (tail !== null && tail !== '') {
    if (tail === 'all') q.delete('tailLines');
    else q.set('tailLines', tail);
  }
  const sinceSeconds = queryInt(q, 'sinceSeconds');
  const tailLines = queryInt(q, 'tailLines');
  const limitBytes = queryInt(q, 'limitBytes');
  if (sinceSeconds === 'invalid' || tailLines === 'invalid' || limitBytes === 'invalid') return undefined;
  let sinceTimeNs: bigint | undefined;
  const sinceTime = q.get('sinceTime');
  if (sinceTime !== null && sinceTime !== '') {
    sinceTimeNs = parseRfc3339Nano(sinceTime);
    if (sinceTimeNs === undefined) return undefined;
    // metav1.Time keeps whole seconds.
    sinceTimeNs -= sinceTimeNs % 1_000_000_000n;
  }
  const stream = q.get('stream');
  return {
    follow: queryBool(q, 'follow'),
    previous: queryBool(q, 'previous'),
    timestamps: queryBool(q, 'timestamps'),
    ...(sinceSeconds !== undefined ? { sinceSeconds } : {}),
    ...(sinceTimeNs !== undefined ? { sinceTimeNs } : {}),
    ...(tailLines !== undefined ? { tailLines } : {}),
    ...(limitBytes !== undefined ? { limitBytes } : {}),
    ...(stream !== null && stream !== '' ? { stream: stream as PodLogOptions['stream'] } : {}),
  };
}

/** ValidatePodLogOptions: the reasons, empty when valid. */
export function validatePodLogOptions(o: PodLogOptions): string[] {
  const errs: string[] = [];
  if (o.tailLines !== undefined && o.tailLines < 0)
    errs.push('tailLines: must be greater than or equal to 0');
  if (o.limitBytes !== undefined && o.limitBytes < 1) errs.push('limitBytes: must be greater than 0');
  if (o.sinceSeconds !== undefined && o.sinceTimeNs !== undefined)
    errs.push('at most one of `sinceTime` or `sinceSeconds` may be specified');
  if (o.sinceSeconds !== undefined && o.sinceSeconds < 1) errs.push('sinceSeconds: must be greater than 0');
  if (o.stream !== undefined && !['Stdout', 'Stderr', 'All'].includes(o.stream))
    errs.push(`stream: Unsupported value: "${o.stream}"`);
  if (o.stream !== undefined && o.stream !== 'All' && o.tailLines !== undefined)
    errs.push('tailLines: Forbidden: tailLines and specific stream are mutually exclusive for now');
  return errs;
}

/** cri-client's NewLogOptions: since is the later of now-sinceSeconds and sinceTime. */
export function toLogOptions(o: PodLogOptions, nowMs: number): LogOptions {
  let sinceNs: bigint | undefined;
  if (o.sinceSeconds !== undefined) sinceNs = BigInt(nowMs - o.sinceSeconds * 1000) * 1_000_000n;
  if (o.sinceTimeNs !== undefined && (sinceNs === undefined || o.sinceTimeNs > sinceNs))
    sinceNs = o.sinceTimeNs;
  const stream: LogStream | undefined =
    o.stream === 'Stdout' ? 'stdout' : o.stream === 'Stderr' ? 'stderr' : undefined;
  return {
    tail: o.tailLines ?? -1,
    bytes: o.limitBytes ?? -1,
    ...(sinceNs !== undefined ? { sinceNs } : {}),
    follow: o.follow,
    timestamps: o.timestamps,
    ...(stream ? { stream } : {}),
  };
}

function findStatus(pod: Pod, name: string): ContainerStatus | undefined {
  const s = pod.status;
  return (
    s?.containerStatuses?.find((c) => c.name === name) ??
    s?.initContainerStatuses?.find((c) => c.name === name) ??
    (s as { ephemeralContainerStatuses?: ContainerStatus[] } | undefined)?.ephemeralContainerStatuses?.find(
      (c) => c.name === name,
    )
  );
}

/** Upstream validateContainerLogStatus: the container ID to read, or why there is none. */
export function containerIdForLogs(
  pod: Pod,
  containerName: string,
  previous: boolean,
): { containerId: string } | { error: string } {
  const podName = pod.metadata.name ?? '';
  const cs = findStatus(pod, containerName);
  if (!cs) return { error: `container "${containerName}" in pod "${podName}" is not available` };
  const last = cs.lastState?.terminated;
  const { waiting, running, terminated } = cs.state ?? {};
  if (previous) {
    if (!last?.containerID)
      return { error: `previous terminated container "${containerName}" in pod "${podName}" not found` };
    return { containerId: last.containerID };
  }
  if (running)
    return cs.containerID
      ? { containerId: cs.containerID }
      : { error: `container "${containerName}" in pod "${podName}" is waiting to start - no logs yet` };
  if (terminated) {
    if (terminated.containerID) return { containerId: terminated.containerID };
    if (last?.containerID) return { containerId: last.containerID };
    return { error: `container "${containerName}" in pod "${podName}" is terminated` };
  }
  if (last) {
    if (!last.containerID) return { error: `container "${containerName}" in pod "${podName}" is terminated` };
    return { containerId: last.containerID };
  }
  if (waiting) {
    switch (waiting.reason) {
      case 'ErrImagePull':
        return {
          error: `container "${containerName}" in pod "${podName}" is waiting to start: image can't be pulled`,
        };
      case 'ImagePullBackOff':
        return {
          error: `container "${containerName}" in pod "${podName}" is waiting to start: trying and failing to pull image`,
        };
      default:
        return {
          error: `container "${containerName}" in pod "${podName}" is waiting to start: ${waiting.reason ?? ''}`,
        };
    }
  }
  return { error: `container "${containerName}" in pod "${podName}" is waiting to start - no logs yet` };
}

function inSpec(pod: Pod, name: string): boolean {
  const spec = pod.spec as Pod['spec'] & { ephemeralContainers?: { name: string }[] };
  return [...spec.containers, ...(spec.initContainers ?? []), ...(spec.ephemeralContainers ?? [])].some(
    (c) => c.name === name,
  );
}

/** "containerd://<id>" → "<id>". */
function runtimeId(containerId: string): string {
  const i = containerId.indexOf('://');
  return i >= 0 ? containerId.slice(i + 3) : containerId;
}

export async function serveContainerLogs(state: ServerState, ctx: RequestContext): Promise<void> {
  const { res, segments } = ctx;
  if (segments.length !== 4) return notFound(res);
  if (ctx.method !== 'GET') return methodNotAllowed(res);
  const [, namespace, podName, containerName] = segments as [string, string, string, string];
  if (podName === '') return sendText(res, 400, '{"message": "Missing podID."}');
  if (containerName === '') return sendText(res, 400, '{"message": "Missing container name."}');
  if (namespace === '') return sendText(res, 400, '{"message": "Missing podNamespace."}');
  const options = decodePodLogOptions(ctx.query);
  if (!options) return sendText(res, 400, '{"message": "Unable to decode query."}');
  const invalid = validatePodLogOptions(options);
  if (invalid.length > 0) {
    log.v(2, 'Invalid container log request', { errors: invalid });
    return sendText(res, 422, '{"message": "Invalid request."}');
  }
  const pod = findPod(state, namespace, podName);
  if (!pod) return sendText(res, 404, `pod "${podName}" does not exist`);
  if (!inSpec(pod, containerName))
    return sendText(res, 404, `container "${containerName}" not found in pod "${podName}"`);
  const chosen = containerIdForLogs(pod, containerName, options.previous);
  if ('error' in chosen) return sendText(res, 400, chosen.error);

  // From here the answer is 200 and streams; a later failure is told in the body (upstream does the same).
  res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  const id = runtimeId(chosen.containerId);
  const call = { timeoutMs: state.runtimeRequestTimeoutMs, signal: ctx.signal };
  let logPath: string;
  try {
    logPath = (await state.host.runtime.containerStatus(id, false, call)).status.logPath;
  } catch (err) {
    log.v(2, 'Container status for logs failed', { containerId: id, err: errorMessage(err) });
    res.end(`unable to retrieve container logs for ${chosen.containerId}`);
    return;
  }
  // A client that stops reading holds the follow no longer than an idle stream may live (upstream: WriteTimeout).
  const stallMs = state.streamIdleTimeoutMs > 0 ? state.streamIdleTimeoutMs : MAX_STALL_MS;
  const sink = (chunk: Buffer): Promise<void> => writeWithBackpressure(res, chunk, ctx.signal, stallMs);
  try {
    await readLogs(logPath, toLogOptions(options, state.clock.now()), sink, {
      signal: ctx.signal,
      isContainerRunning: async () =>
        (await state.host.runtime.containerStatus(id, false, call)).status.state === 'CONTAINER_RUNNING',
    });
    res.end();
  } catch (err) {
    if (ctx.signal.aborted || res.writableNeedDrain) {
      // The client left, or stopped reading: nothing more can reach it.
      res.destroy();
      return;
    }
    log.v(2, 'Reading container logs failed', { containerId: id, err: errorMessage(err) });
    res.end(errorMessage(err));
  }
}

/**
 * Writes and, when the client's buffer is full, waits for it to drain; rejects when the client
 * leaves or has not taken anything for stallMs.
 */
export function writeWithBackpressure(
  res: {
    write(b: Buffer): boolean;
    once(e: 'drain', f: () => void): unknown;
    off(e: 'drain', f: () => void): unknown;
  },
  chunk: Buffer,
  signal: AbortSignal,
  stallMs: number,
): Promise<void> {
  if (res.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const finish = (err?: unknown) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      signal.removeEventListener('abort', onAbort);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onDrain = () => finish();
    const onAbort = () => finish(signal.reason);
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => finish(new Error(`client took nothing for ${stallMs} ms`)), stallMs);
    res.once('drain', onDrain);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
