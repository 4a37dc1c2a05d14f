/**
 * Who a request comes from and what it may do. Authentication follows the real server's union of
 * authenticators: a client certificate signed by the cluster CA (CN = user, O = groups), then a
 * static bearer token, then a service account token; a request with no credentials is
 * system:anonymous. Authorization is a test-supplied policy function, which also answers
 * SubjectAccessReviews, so a kubelet's webhook authorizer sees the same decisions.
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { badRequest, forbidden, invalid, type FieldError } from './api-error.js';
import type { ObjectStore } from './store.js';
import type { ServiceAccountTokenIssuer, UserInfo } from './tokens.js';

export type { UserInfo } from './tokens.js';

/** A user of the test cluster: a static bearer token, a client certificate, or both. */
export interface TestUser {
  name: string;
  uid?: string;
  groups?: string[];
  /** A static bearer token for this user (the --token-auth-file of a real server). */
  token?: string;
}

/** authorizer.Attributes: what a request asks to do. */
export interface AuthorizationAttributes {
  user: UserInfo;
  verb: string;
  resourceRequest: boolean;
  /** The request path; set for non-resource requests. */
  path: string;
  namespace: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  name: string;
}

export interface AuthorizationDecision {
  allowed: boolean;
  /** An explicit deny: no other authorizer would be asked. */
  denied?: boolean;
  reason?: string;
}

export type AuthorizationPolicy = (attrs: AuthorizationAttributes) => boolean | AuthorizationDecision;

/** What system:public-info-viewer lets anyone, authenticated or not, read. */
const PUBLIC_INFO_PATHS = ['/healthz', '/livez', '/readyz', '/version', '/version/'];

function isDiscoveryPath(path: string): boolean {
  return ['/api', '/apis', '/openapi'].some((p) => path === p || path.startsWith(p + '/'));
}

/**
 * The default policy: system:masters and system:nodes may do anything (the node user stands in for
 * the Node authorizer and system:node's RBAC), system:bootstrappers may create and read CSRs (as
 * kubeadm's system:node-bootstrapper binding allows), everyone may read health and version, and any
 * authenticated user may read discovery.
 */
export function defaultAuthorizationPolicy(a: AuthorizationAttributes): AuthorizationDecision {
  for (const group of ['system:masters', 'system:nodes']) {
    if (a.user.groups.includes(group)) return { allowed: true, reason: `allowed: member of group ${group}` };
  }
  // kubeadm binds system:bootstrappers to system:node-bootstrapper: CSRs only.
  if (
    a.user.groups.includes('system:bootstrappers') &&
    a.resourceRequest &&
    a.apiGroup === 'certificates.k8s.io' &&
    a.resource === 'certificatesigningrequests' &&
    a.subresource === '' &&
    ['create', 'get', 'list', 'watch'].includes(a.verb)
  )
    return { allowed: true, reason: 'allowed: system:node-bootstrapper' };
  if (!a.resourceRequest && a.verb === 'get') {
    if (PUBLIC_INFO_PATHS.includes(a.path)) return { allowed: true };
    if (isDiscoveryPath(a.path) && a.user.groups.includes('system:authenticated')) return { allowed: true };
  }
  return { allowed: false };
}

export function decide(policy: AuthorizationPolicy, attrs: AuthorizationAttributes): AuthorizationDecision {
  const d = policy(attrs);
  return typeof d === 'boolean' ? { allowed: d } : d;
}

/** The 403 of responsewriters.Forbidden, worded as its forbiddenMessage writes it. */
export function forbiddenError(a: AuthorizationAttributes, reason: string | undefined) {
  let msg: string;
  if (!a.resourceRequest) {
    msg = `User "${a.user.username}" cannot ${a.verb} path "${a.path}"`;
  } else {
    const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    msg = a.namespace
      ? `User "${a.user.username}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" in the namespace "${a.namespace}"`
      : `User "${a.user.username}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" at the cluster scope`;
  }
  const why = reason ? `${msg}: ${reason}` : msg;
  return forbidden(a.resourceRequest ? { group: a.apiGroup, resource: a.resource } : undefined, a.name, why);
}

export const ANONYMOUS: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

function withAuthenticatedGroup(u: UserInfo): UserInfo {
  return u.groups.includes('system:authenticated')
    ? u
    : { ...u, groups: [...u.groups, 'system:authenticated'] };
}

export class Authenticator {
  constructor(
    private readonly users: readonly TestUser[],
    private readonly issuer: ServiceAccountTokenIssuer,
    private readonly store: ObjectStore,
  ) {}

  private staticToken(token: string): UserInfo | undefined {
    const u = this.users.find((x) => x.token !== undefined && x.token === token);
    if (!u) return undefined;
    return { username: u.name, ...(u.uid ? { uid: u.uid } : {}), groups: [...(u.groups ?? [])] };
  }

  /** The user a request authenticates as; undefined when its credentials are bad (a 401). */
  authenticateRequest(req: IncomingMessage): UserInfo | undefined {
    let failed = false;
    const socket = req.socket as Partial<TLSSocket>;
    if (typeof socket.getPeerCertificate === 'function') {
      const cert = socket.getPeerCertificate();
      if (cert && Object.keys(cert).length > 0) {
        const cn = cert.subject?.CN as string | string[] | undefined;
        const username = Array.isArray(cn) ? cn[0] : cn;
        if (socket.authorized && username) {
          const o = cert.subject.O as string | string[] | undefined;
          const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
          return withAuthenticatedGroup({ username, groups });
        }
        failed = true;
      }
    }
    const header = req.headers.authorization;
    if (header !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      const token = m?.[1];
      if (token) {
        const user = this.staticToken(token);
        if (user) return withAuthenticatedGroup(user);
        const sa = this.issuer.authenticate(this.store, token, []);
        if (sa && 'user' in sa) return withAuthenticatedGroup(sa.user);
      }
      failed = true;
    }
    return failed ? undefined : ANONYMOUS;
  }

  /** POST /apis/authentication.k8s.io/v1/tokenreviews. */
  reviewToken(body: Record<string, unknown>): object {
    const spec = (body.spec as { token?: string; audiences?: string[] } | undefined) ?? {};
    if (!spec.token) throw badRequest('token is required for TokenReview in authentication.k8s.io');
    const requested = spec.audiences ?? [];
    let status: Record<string, unknown>;
    const user = this.staticToken(spec.token);
    if (user) {
      // Static tokens carry no audience: they are good for the API server's own audiences only.
      const wanted = requested.length > 0 ? requested : this.issuer.apiAudiences;
      const accepted = wanted.filter((a) => this.issuer.apiAudiences.includes(a));
      status =
        accepted.length > 0
          ? { authenticated: true, user: withAuthenticatedGroup(user), audiences: accepted }
          : { user: {}, error: '[invalid bearer token, token audiences do not match]' };
    } else {
      const sa = this.issuer.authenticate(this.store, spec.token, requested);
      if (sa && 'user' in sa) {
        status = { authenticated: true, user: withAuthenticatedGroup(sa.user), audiences: sa.audiences };
      } else {
        status = { user: {}, error: `[invalid bearer token, ${sa?.error ?? 'token lookup failed'}]` };
      }
    }
    return {
      kind: 'TokenReview',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { creationTimestamp: null },
      spec,
      status,
    };
  }
}

interface SarSpec {
  resourceAttributes?: {
    namespace?: string;
    verb?: string;
    group?: string;
    version?: string;
    resource?: string;
    subresource?: string;
    name?: string;
  };
  nonResourceAttributes?: { path?: string; verb?: string };
  user?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  uid?: string;
}

/** POST /apis/authorization.k8s.io/v1/subjectaccessreviews, answered by the policy. */
export function reviewAccess(policy: AuthorizationPolicy, body: Record<string, unknown>): object {
  const spec = (body.spec as SarSpec | undefined) ?? {};
  const errs: FieldError[] = [];
  if (!spec.resourceAttributes === !spec.nonResourceAttributes) {
    errs.push({
      type: 'FieldValueRequired',
      field: 'spec.resourceAttributes',
      body: 'Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified',
    });
  }
  if (!spec.user && (spec.groups ?? []).length === 0) {
    errs.push({
      type: 'FieldValueInvalid',
      field: 'spec.user',
      body: 'Invalid value: "": at least one of user or group must be specified',
    });
  }
  if (errs.length > 0)
    throw invalid({ group: 'authorization.k8s.io', kind: 'SubjectAccessReview' }, '', errs);
  const user: UserInfo = {
    username: spec.user ?? '',
    ...(spec.uid ? { uid: spec.uid } : {}),
    groups: spec.groups ?? [],
    ...(spec.extra ? { extra: spec.extra } : {}),
  };
  const r = spec.resourceAttributes;
  const attrs: AuthorizationAttributes = r
    ? {
        user,
        verb: r.verb ?? '',
        resourceRequest: true,
        path: '',
        namespace: r.namespace ?? '',
        apiGroup: r.group ?? '',
        apiVersion: r.version ?? '',
        resource: r.resource ?? '',
        subresource: r.subresource ?? '',
        name: r.name ?? '',
      }
    : {
        user,
        verb: spec.nonResourceAttributes?.verb ?? '',
        resourceRequest: false,
        path: spec.nonResourceAttributes?.path ?? '',
        namespace: '',
        apiGroup: '',
        apiVersion: '',
        resource: '',
        subresource: '',
        name: '',
      };
  const d = decide(policy, attrs);
  return {
    kind: 'SubjectAccessReview',
    apiVersion: 'authorization.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec,
    status: {
      allowed: d.allowed,
      ...(d.denied ? { denied: true } : {}),
      ...(d.reason ? { reason: d.reason } : {}),
    },
  };
}
