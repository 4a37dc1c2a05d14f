/**
 * Who may call the kubelet API, as upstream's kubelet decides it (pkg/kubelet/server/auth.go and the
 * delegating authenticator it builds):
 * - authentication tries a client certificate signed by the client CA (user = CN, groups = O), then a
 *   bearer token through TokenReview (from the Authorization header, or a WebSocket subprotocol
 *   `base64url.bearer.authorization.k8s.io.<token>`); every authenticated user also gets the group
 *   system:authenticated. Bad credentials are a 401 even when anonymous requests are allowed; no
 *   credentials at all make system:anonymous (group system:unauthenticated) when they are.
 * - authorization asks about verb (from the HTTP method) on nodes/<subresource> named after the node:
 *   /stats → stats, /metrics → metrics, /logs → log, /checkpoint → checkpoint, everything else → proxy;
 *   with fine-grained authorization (KubeletFineGrainedAuthz, on by default since 1.33) /pods and
 *   /runningpods/ → pods, /healthz → healthz, /configz → configz, /statusz → statusz are asked first,
 *   falling back to proxy.
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { Authorizer, RequestAttributes, TokenReviewer, UserInfo } from './delegated-auth.js';

const log = logger('auth');

export const ANONYMOUS_USER: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };
const AUTHENTICATED_GROUP = 'system:authenticated';
const CLIENT_AUTH_EKU = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';
/** client-go's WebSocket token carrier: the token, base64url without padding, after this prefix. */
export const WEBSOCKET_BEARER_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

export type AuthenticationResult =
  | { authenticated: true; user: UserInfo; method: 'x509' | 'token' | 'anonymous' }
  | { authenticated: false; reason: string };

export interface AuthenticatorOptions {
  /** Client certificates are checked when the TLS server was given a client CA. */
  x509: boolean;
  /** Bearer tokens are checked when there is a reviewer (authentication.webhook.enabled). */
  tokenReviewer?: TokenReviewer;
  anonymous: boolean;
}

function withAuthenticatedGroup(u: UserInfo): UserInfo {
  return u.groups.includes(AUTHENTICATED_GROUP) ? u : { ...u, groups: [...u.groups, AUTHENTICATED_GROUP] };
}

function asList(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** The bearer token of a request and where it came from, or undefined. */
function bearerToken(req: IncomingMessage): { token: string; via: 'header' | 'websocket' } | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
    if (m) return { token: m[1]!, via: 'header' };
  }
  const protocols = req.headers['sec-websocket-protocol'];
  if (typeof protocols === 'string' && req.headers.upgrade?.toLowerCase() === 'websocket') {
    for (const p of protocols.split(',').map((s) => s.trim())) {
      if (!p.startsWith(WEBSOCKET_BEARER_PROTOCOL_PREFIX)) continue;
      const encoded = p.slice(WEBSOCKET_BEARER_PROTOCOL_PREFIX.length);
      const token = Buffer.from(encoded, 'base64url').toString('utf8');
      if (token !== '') return { token, via: 'websocket' };
    }
  }
  return undefined;
}

/** Removes the credential from the request once used, so it is never forwarded to the runtime. */
function dropCredential(req: IncomingMessage, via: 'header' | 'websocket'): void {
  if (via === 'header') {
    delete req.headers.authorization;
    return;
  }
  const kept = (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((p) => p !== '' && !p.startsWith(WEBSOCKET_BEARER_PROTOCOL_PREFIX));
  if (kept.length > 0) req.headers['sec-websocket-protocol'] = kept.join(', ');
  else delete req.headers['sec-websocket-protocol'];
}

export class RequestAuthenticator {
  constructor(private readonly opts: AuthenticatorOptions) {}

  async authenticate(req: IncomingMessage, signal: AbortSignal): Promise<AuthenticationResult> {
    const failures: string[] = [];
    if (this.opts.x509) {
      const r = this.fromCertificate(req);
      if (r && 'user' in r)
        return { authenticated: true, user: withAuthenticatedGroup(r.user), method: 'x509' };
      if (r) failures.push(r.failure);
    }
    if (this.opts.tokenReviewer) {
      const found = bearerToken(req);
      if (found) {
        try {
          const review = await this.opts.tokenReviewer.review(found.token, signal);
          if (review.authenticated && review.user) {
            dropCredential(req, found.via);
            return { authenticated: true, user: withAuthenticatedGroup(review.user), method: 'token' };
          }
          failures.push(review.error ? `invalid bearer token, ${review.error}` : 'invalid bearer token');
        } catch (err) {
          log.error('Unable to authenticate the request due to an error', { err: errorMessage(err) });
          failures.push('the token could not be reviewed');
        }
      }
    }
    if (failures.length > 0) return { authenticated: false, reason: failures.join('; ') };
    if (this.opts.anonymous) return { authenticated: true, user: ANONYMOUS_USER, method: 'anonymous' };
    return { authenticated: false, reason: 'no credentials provided and anonymous requests are disabled' };
  }

  /** undefined when the client sent no certificate. */
  private fromCertificate(req: IncomingMessage): { user: UserInfo } | { failure: string } | undefined {
    const socket = req.socket as Partial<TLSSocket>;
    if (typeof socket.getPeerCertificate !== 'function') return undefined;
    const cert = socket.getPeerCertificate();
    if (!cert || Object.keys(cert).length === 0) return undefined;
    if (!socket.authorized) {
      const why = String(socket.authorizationError ?? 'unknown error');
      return { failure: `verifying certificate SN=${cert.serialNumber} failed: ${why}` };
    }
    const ekus = (cert as { ext_key_usage?: string[] }).ext_key_usage;
    if (ekus && !ekus.includes(CLIENT_AUTH_EKU) && !ekus.includes(ANY_EKU)) {
      return {
        failure: `verifying certificate SN=${cert.serialNumber} failed: not valid for client authentication`,
      };
    }
    const cn = asList(cert.subject?.CN)[0] ?? '';
    if (cn === '') return { failure: 'client certificate has no common name' };
    return { user: { username: cn, groups: asList(cert.subject?.O) } };
  }
}

/** Go's isSubpath: path is the prefix itself or lies under it. */
function isSubpath(requestPath: string, prefix: string): boolean {
  const p = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return requestPath === p || (requestPath.startsWith(p) && requestPath[p.length] === '/');
}

const VERBS: Record<string, string> = {
  POST: 'create',
  GET: 'get',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** Upstream's NodeRequestAttributesGetter: the questions to ask, most specific first. */
export function nodeRequestAttributes(
  user: UserInfo,
  method: string,
  requestPath: string,
  nodeName: string,
  fineGrained: boolean,
): RequestAttributes[] {
  const subresources: string[] = [];
  if (fineGrained) {
    if (isSubpath(requestPath, '/pods')) subresources.push('pods');
    else if (isSubpath(requestPath, '/healthz')) subresources.push('healthz');
    else if (isSubpath(requestPath, '/configz')) subresources.push('configz');
    else if (isSubpath(requestPath, '/statusz')) subresources.push('statusz');
    else if (isSubpath(requestPath, '/runningpods/')) subresources.push('pods');
  }
  if (isSubpath(requestPath, '/stats/')) subresources.push('stats');
  else if (isSubpath(requestPath, '/metrics')) subresources.push('metrics');
  else if (isSubpath(requestPath, '/logs/')) subresources.push('log');
  else if (isSubpath(requestPath, '/checkpoint/')) subresources.push('checkpoint');
  else subresources.push('proxy');
  return subresources.map((subresource) => ({
    user,
    verb: VERBS[method] ?? '',
    namespace: '',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'nodes',
    subresource,
    name: nodeName,
    resourceRequest: true,
    path: requestPath,
  }));
}

export type AuthorizationResult = { allowed: true } | { allowed: false; status: 403 | 500; message: string };

/** Upstream's auth filter: allowed when any of the questions is allowed; the 403 lists each refusal. */
export async function authorizeRequest(
  authorizer: Authorizer,
  attrs: readonly RequestAttributes[],
  signal: AbortSignal,
): Promise<AuthorizationResult> {
  let message = '';
  for (const a of attrs) {
    const describe = `(user=${a.user.username}, verb=${a.verb}, resource=${a.resource}, subresource=${a.subresource})`;
    let decision;
    try {
      decision = await authorizer.authorize(a, signal);
    } catch (err) {
      log.error('Authorization error', {
        user: a.user.username,
        verb: a.verb,
        resource: a.resource,
        subresource: a.subresource,
        err: errorMessage(err),
      });
      return { allowed: false, status: 500, message: `Authorization error ${describe}` };
    }
    if (decision.decision === 'allow') return { allowed: true };
    log.v(2, 'Forbidden', {
      user: a.user.username,
      verb: a.verb,
      resource: a.resource,
      subresource: a.subresource,
      reason: decision.reason,
    });
    message += `Forbidden ${describe}\n`;
  }
  return { allowed: false, status: 403, message };
}
