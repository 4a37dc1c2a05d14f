/**
 * /exec, /attach, /portForward and /run, as upstream's kubelet serves them: options from the query
 * (input/output/error/tty as "1", command repeated; port for WebSocket port-forward; cmd split on
 * spaces for /run), the pod by namespace and name, the running container (or the pod's newest ready
 * sandbox) from the runtime, then the runtime's streaming URL, proxied, translated or tunnelled.
 */
import type { Pod } from '../api/core-v1.js';
import { isNotFound } from '../cri/errors.js';
import type { ExecSyncResponse } from '../cri/types.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { findPodWithUid } from './find-pod.js';
import type { ServerState } from './kubelet-server.js';
import { methodNotAllowed, notFound, sendText, type RequestContext } from './request-context.js';
import { proxyUpgrade } from './stream-proxy.js';
import {
  translateToSpdy,
  tunnelingProtocols,
  tunnelSpdyOverWebSocket,
  wantsStreamTranslation,
  type StreamOptions,
} from './stream-translator.js';
import { isWebSocketRequest } from './websocket.js';

export { StreamRegistry } from './stream-proxy.js';

const log = logger('server');
const GRPC_RESOURCE_EXHAUSTED = 8;

/** Path parameters of /<kind>/{ns}/{pod}[/{uid}]/{container}; undefined when the shape is wrong. */
function containerTarget(
  segments: readonly string[],
): { namespace: string; pod: string; uid: string; container: string } | undefined {
  if (segments.length === 4)
    return { namespace: segments[1]!, pod: segments[2]!, uid: '', container: segments[3]! };
  if (segments.length === 5)
    return { namespace: segments[1]!, pod: segments[2]!, uid: segments[3]!, container: segments[4]! };
  return undefined;
}

/** remotecommand.NewOptions: flags are on only when "1"; stderr is dropped with a TTY. */
export function parseStreamOptions(query: URLSearchParams): StreamOptions | { error: string } {
  const flag = (name: string) => query.get(name) === '1';
  const tty = flag('tty');
  const stdin = flag('input');
  const stdout = flag('output');
  let stderr = flag('error');
  if (tty && stderr) {
    log.warn('Access to exec with tty and stderr is not supported, bypassing stderr');
    stderr = false;
  }
  if (!stdin && !stdout && !stderr) return { error: 'you must specify at least 1 of stdin, stdout, stderr' };
  return { stdin, stdout, stderr, tty };
}

/** portforward.NewV4Options: WebSocket clients name their ports in the query; SPDY clients per stream. */
export function parsePortForwardPorts(query: URLSearchParams): number[] | { error: string } {
  const values = query.getAll('port');
  if (values.length === 0) return { error: 'query parameter "port" is required' };
  const ports: number[] = [];
  for (const v of values) {
    if (v === '') return { error: 'query parameter "port" cannot be empty' };
    for (const p of v.split(',')) {
      if (!/^\d+$/.test(p) || Number(p) > 65535)
        return {
          error: `unable to parse "${v}" as a port: strconv.ParseUint: parsing "${p}": invalid syntax`,
        };
      if (Number(p) < 1) return { error: `port "${v}" must be > 0` };
      ports.push(Number(p));
    }
  }
  return ports;
}

function podFullName(pod: Pod): string {
  return `${pod.metadata.name ?? ''}_${pod.metadata.namespace ?? ''}`;
}

/** streaming.WriteError: the runtime's NotFound is a 404, ResourceExhausted a 429, anything else a 500. */
function writeRuntimeError(ctx: RequestContext, err: unknown): void {
  const code = (err as { cause?: { code?: unknown } }).cause?.code;
  if (isNotFound(err)) return sendText(ctx.res, 404, errorMessage(err));
  if (code === GRPC_RESOURCE_EXHAUSTED)
    return sendText(ctx.res, 429, errorMessage(err), { 'Retry-After': '30' });
  sendText(ctx.res, 500, errorMessage(err));
}

function callOptions(state: ServerState, ctx: RequestContext) {
  return { timeoutMs: state.runtimeRequestTimeoutMs, signal: ctx.signal };
}

/** Upstream findContainer: a running container of the pod, from the runtime (newest first). */
async function findRunningContainer(
  state: ServerState,
  ctx: RequestContext,
  pod: Pod,
  uid: string,
  containerName: string,
): Promise<string | undefined> {
  const labelSelector: Record<string, string> = { 'io.kubernetes.container.name': containerName };
  if (uid !== '') labelSelector['io.kubernetes.pod.uid'] = uid;
  else {
    labelSelector['io.kubernetes.pod.name'] = pod.metadata.name ?? '';
    labelSelector['io.kubernetes.pod.namespace'] = pod.metadata.namespace ?? '';
  }
  const found = await state.host.runtime.listContainers(
    { state: 'CONTAINER_RUNNING', labelSelector },
    callOptions(state, ctx),
  );
  return found.sort((a, b) => b.createdAt - a.createdAt)[0]?.id;
}

export async function serveExec(state: ServerState, ctx: RequestContext): Promise<void> {
  return serveRemoteCommand(state, ctx, 'exec');
}

export async function serveAttach(state: ServerState, ctx: RequestContext): Promise<void> {
  return serveRemoteCommand(state, ctx, 'attach');
}

async function serveRemoteCommand(
  state: ServerState,
  ctx: RequestContext,
  kind: 'exec' | 'attach',
): Promise<void> {
  const target = containerTarget(ctx.segments);
  if (!target) return notFound(ctx.res);
  if (ctx.method !== 'GET' && ctx.method !== 'POST') return methodNotAllowed(ctx.res);
  const opts = parseStreamOptions(ctx.query);
  if ('error' in opts) return sendText(ctx.res, 400, opts.error);
  const found = findPodWithUid(state, target.namespace, target.pod, target.uid);
  if ('status' in found) return sendText(ctx.res, found.status, found.message);
  const { pod } = found;
  if (!state.sessions.hold(ctx.signal)) return state.sessions.refuse(ctx.res);
  let url: string;
  try {
    const id = await findRunningContainer(state, ctx, pod, target.uid, target.container);
    if (!id) return sendText(ctx.res, 500, `container not found ("${target.container}")`);
    const base = {
      containerId: id,
      tty: opts.tty,
      stdin: opts.stdin,
      stdout: opts.stdout,
      stderr: opts.stderr,
    };
    url =
      kind === 'exec'
        ? await state.host.runtime.exec(
            { ...base, cmd: ctx.query.getAll('command') },
            callOptions(state, ctx),
          )
        : await state.host.runtime.attach(base, callOptions(state, ctx));
  } catch (err) {
    return writeRuntimeError(ctx, err);
  }
  log.v(3, `Serving ${kind}`, {
    pod: podFullName(pod),
    container: target.container,
    user: ctx.user?.username,
  });
  if (ctx.upgrade && isWebSocketRequest(ctx.req) && wantsStreamTranslation(ctx.req))
    return translateToSpdy(ctx, url, opts, state.streamIdleTimeoutMs, state.streams);
  return proxyUpgrade(ctx, url, state.streamIdleTimeoutMs, state.streams);
}

export async function servePortForward(state: ServerState, ctx: RequestContext): Promise<void> {
  const segs = ctx.segments;
  if (segs.length !== 3 && segs.length !== 4) return notFound(ctx.res);
  if (ctx.method !== 'GET' && ctx.method !== 'POST') return methodNotAllowed(ctx.res);
  const [, namespace, podName, uid = ''] = segs as [string, string, string, string?];
  const websocket = ctx.upgrade !== undefined && isWebSocketRequest(ctx.req);
  const tunnel = websocket ? tunnelingProtocols(ctx.req) : undefined;
  let ports: number[] = [];
  if (websocket && !tunnel) {
    const parsed = parsePortForwardPorts(ctx.query);
    if ('error' in parsed) return sendText(ctx.res, 400, parsed.error);
    ports = parsed;
  }
  const found = findPodWithUid(state, namespace, podName, uid);
  if ('status' in found) return sendText(ctx.res, found.status, found.message);
  const { pod } = found;
  if (!state.sessions.hold(ctx.signal)) return state.sessions.refuse(ctx.res);
  let url: string;
  try {
    const sandboxes = await state.host.runtime.listPodSandbox(
      { state: 'SANDBOX_READY', labelSelector: { 'io.kubernetes.pod.uid': pod.metadata.uid ?? '' } },
      callOptions(state, ctx),
    );
    const newest = sandboxes.sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!newest) return sendText(ctx.res, 500, `pod not found ("${podFullName(pod)}")`);
    url = await state.host.runtime.portForward(
      { podSandboxId: newest.id, port: ports },
      callOptions(state, ctx),
    );
  } catch (err) {
    return writeRuntimeError(ctx, err);
  }
  log.v(3, 'Serving port-forward', { pod: podFullName(pod), ports, user: ctx.user?.username });
  if (tunnel) return tunnelSpdyOverWebSocket(ctx, url, tunnel, state.streamIdleTimeoutMs, state.streams);
  return proxyUpgrade(ctx, url, state.streamIdleTimeoutMs, state.streams);
}

/** /run: ExecSync, stdout then stderr in the body; a non-zero exit is a 500 naming the command. */
export async function serveRun(state: ServerState, ctx: RequestContext): Promise<void> {
  const target = containerTarget(ctx.segments);
  if (!target) return notFound(ctx.res);
  if (ctx.method !== 'POST') return methodNotAllowed(ctx.res);
  const found = findPodWithUid(state, target.namespace, target.pod, target.uid);
  if ('status' in found) return sendText(ctx.res, found.status, found.message);
  const { pod } = found;
  // For legacy reasons /run takes one space-separated "cmd", not exec's repeated "command".
  const cmd = (ctx.query.get('cmd') ?? '').split(' ');
  let result: ExecSyncResponse;
  try {
    const id = await findRunningContainer(state, ctx, pod, target.uid, target.container);
    if (!id) return sendText(ctx.res, 500, `container not found ("${target.container}")`);
    result = await state.host.runtime.execSync(id, cmd, 0, callOptions(state, ctx));
  } catch (err) {
    return sendText(ctx.res, 500, errorMessage(err));
  }
  if (result.exitCode !== 0) {
    return sendText(
      ctx.res,
      500,
      `command '${cmd.join(' ')}' exited with ${result.exitCode}: ${result.stderr.toString('utf8')}`,
    );
  }
  const body = Buffer.concat([result.stdout, result.stderr]);
  ctx.res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(body.length) });
  ctx.res.end(body);
}
