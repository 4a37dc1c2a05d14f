/**
 * Service account tokens: RS256 JWTs with the claims upstream's pkg/serviceaccount writes, the
 * TokenRequest subresource that issues them (bound to a pod, secret or node), and the validation a
 * TokenReview or a bearer token meets (signature, time, audience, bound objects still alive).
 */
import {
  createHash,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import type { Clock } from '../../src/lib/clock.js';
import { badRequest, conflict, invalid } from './api-error.js';
import type { KubeObject } from './resources.js';
import { formatTime, type ObjectStore } from './store.js';

/** Upstream's WarnOnlyBoundTokenExpirationSeconds: the lifetime kubelet projected tokens ask for. */
const WARN_ONLY_EXPIRATION_SECONDS = 3607;
/** ExpirationExtensionSeconds: what such a token really lives, so old clients that never refresh keep working. */
const EXTENDED_EXPIRATION_SECONDS = 24 * 365 * 60 * 60;
/** go-jose's DefaultLeeway, allowed on exp and nbf. */
const LEEWAY_SECONDS = 60;

interface Ref {
  name: string;
  uid: string;
}

export interface ServiceAccountClaims {
  aud: string[];
  exp: number;
  iat: number;
  iss: string;
  jti: string;
  nbf: number;
  sub: string;
  'kubernetes.io': {
    namespace: string;
    node?: Ref;
    pod?: Ref;
    secret?: Ref;
    serviceaccount: Ref;
    warnafter?: number;
  };
}

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

export class ServiceAccountTokenIssuer {
  private readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly keyId: string;

  constructor(
    private readonly clock: Clock,
    readonly issuer: string,
    /** The API server's own audiences: the default of a TokenRequest and what a bearer token must name. */
    readonly apiAudiences: string[],
  ) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.privateKey = privateKey;
    this.publicKey = publicKey;
    this.keyId = b64url(
      createHash('sha256')
        .update(publicKey.export({ type: 'spki', format: 'der' }))
        .digest(),
    );
  }

  get publicKeyPem(): string {
    return createPublicKey(this.privateKey).export({ type: 'spki', format: 'pem' }).toString();
  }

  sign(claims: ServiceAccountClaims): string {
    const head = b64url(JSON.stringify({ alg: 'RS256', kid: this.keyId }));
    const body = b64url(JSON.stringify(claims));
    const signature = sign('sha256', Buffer.from(`${head}.${body}`), this.privateKey);
    return `${head}.${body}.${b64url(signature)}`;
  }

  /** The claims of a token this issuer signed, or undefined when it did not sign it. */
  decode(token: string): ServiceAccountClaims | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    const [head, body, sig] = parts as [string, string, string];
    try {
      const header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as { alg?: string };
      if (header.alg !== 'RS256') return undefined;
      if (!verify('sha256', Buffer.from(`${head}.${body}`), this.publicKey, Buffer.from(sig, 'base64url'))) {
        return undefined;
      }
      const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as ServiceAccountClaims;
      return claims.iss === this.issuer ? claims : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Validates a token against the store as the service account authenticator does. Returns the user,
   * the audiences it was accepted for, or the reason it was not.
   */
  authenticate(
    store: ObjectStore,
    token: string,
    audiences: string[],
  ): { user: UserInfo; audiences: string[] } | { error: string } | undefined {
    const claims = this.decode(token);
    if (!claims) return undefined;
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    if (nowSeconds > claims.exp + LEEWAY_SECONDS) return { error: 'service account token has expired' };
    if (nowSeconds < claims.nbf - LEEWAY_SECONDS) return { error: 'service account token is not valid yet' };
    const wanted = audiences.length > 0 ? audiences : this.apiAudiences;
    const accepted = wanted.filter((a) => claims.aud.includes(a));
    if (accepted.length === 0) return { error: 'token audiences do not match' };

    const k = claims['kubernetes.io'];
    const ns = k.namespace;
    const sa = store.tryGet('serviceaccounts', k.serviceaccount.name, ns);
    if (!sa) return { error: `serviceaccounts "${k.serviceaccount.name}" not found` };
    if (sa.metadata.uid !== k.serviceaccount.uid) {
      return {
        error: `service account UID (${sa.metadata.uid ?? ''}) does not match claim (${k.serviceaccount.uid})`,
      };
    }
    const extra: Record<string, string[]> = {
      'authentication.kubernetes.io/credential-id': [`JTI=${claims.jti}`],
    };
    const bound: [string, Ref | undefined, string][] = [
      ['pods', k.pod, 'pod'],
      ['secrets', k.secret, 'secret'],
    ];
    for (const [resource, ref, what] of bound) {
      if (!ref) continue;
      const o = store.tryGet(resource, ref.name, ns);
      if (!o || this.deletedLongAgo(o, nowSeconds))
        return { error: 'service account token has been invalidated' };
      if (o.metadata.uid !== ref.uid) {
        return {
          error: `${what} UID (${o.metadata.uid ?? ''}) does not match service account ${what} ref claim (${ref.uid})`,
        };
      }
    }
    if (k.pod) {
      extra['authentication.kubernetes.io/pod-name'] = [k.pod.name];
      extra['authentication.kubernetes.io/pod-uid'] = [k.pod.uid];
    }
    if (k.node) {
      extra['authentication.kubernetes.io/node-name'] = [k.node.name];
      extra['authentication.kubernetes.io/node-uid'] = [k.node.uid];
    }
    return {
      user: {
        username: claims.sub,
        uid: k.serviceaccount.uid,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`],
        extra,
      },
      audiences: accepted,
    };
  }

  private deletedLongAgo(o: KubeObject, nowSeconds: number): boolean {
    const ts = o.metadata.deletionTimestamp;
    return ts !== undefined && Date.parse(ts) / 1000 < nowSeconds - LEEWAY_SECONDS;
  }

  /** POST .../serviceaccounts/{name}/token: validates and answers a TokenRequest. */
  createTokenRequest(
    store: ObjectStore,
    namespace: string,
    saName: string,
    body: Record<string, unknown>,
  ): object {
    const sa = store.get('serviceaccounts', saName, namespace);
    const spec = { ...((body.spec as Record<string, unknown> | undefined) ?? {}) };
    const requested = (spec.expirationSeconds as number | undefined) ?? 3600;
    spec.expirationSeconds = requested;
    const kind = { group: 'authentication.k8s.io', kind: 'TokenRequest' };
    if (requested < 600) {
      throw invalid(kind, saName, [
        {
          type: 'FieldValueInvalid',
          field: 'spec.expirationSeconds',
          body: `Invalid value: ${requested}: may not specify a duration less than 10 minutes`,
        },
      ]);
    }
    if (requested > 2 ** 32) {
      throw invalid(kind, saName, [
        {
          type: 'FieldValueInvalid',
          field: 'spec.expirationSeconds',
          body: `Invalid value: ${requested}: may not specify a duration larger than 2^32 seconds`,
        },
      ]);
    }
    const audiences =
      Array.isArray(spec.audiences) && spec.audiences.length > 0
        ? (spec.audiences as string[])
        : this.apiAudiences;
    spec.audiences = audiences;

    const claims: ServiceAccountClaims['kubernetes.io'] = {
      namespace,
      serviceaccount: { name: saName, uid: sa.metadata.uid ?? '' },
    };
    let pod: KubeObject | undefined;
    const ref = spec.boundObjectRef as
      { kind?: string; apiVersion?: string; name?: string; uid?: string } | undefined;
    if (ref) {
      const coreV1 = ref.apiVersion === undefined || ref.apiVersion === 'v1';
      let bound: KubeObject;
      if (coreV1 && ref.kind === 'Pod') {
        bound = store.get('pods', ref.name ?? '', namespace);
        const podSa = (bound.spec as Record<string, unknown> | undefined)?.serviceAccountName;
        if (podSa !== saName) {
          throw badRequest(
            `cannot bind token for serviceaccount "${saName}" to pod running with serviceaccount "${String(podSa ?? '')}"`,
          );
        }
        pod = bound;
        claims.pod = { name: bound.metadata.name ?? '', uid: bound.metadata.uid ?? '' };
      } else if (coreV1 && ref.kind === 'Secret') {
        bound = store.get('secrets', ref.name ?? '', namespace);
        claims.secret = { name: bound.metadata.name ?? '', uid: bound.metadata.uid ?? '' };
      } else if (coreV1 && ref.kind === 'Node') {
        bound = store.get('nodes', ref.name ?? '');
        claims.node = { name: bound.metadata.name ?? '', uid: bound.metadata.uid ?? '' };
      } else {
        // schema.GroupVersionKind.String(): "group/version, Kind=kind", with an empty group for core.
        const apiVersion = ref.apiVersion ?? '';
        const gv = apiVersion.includes('/') ? apiVersion : `/${apiVersion}`;
        throw badRequest(`cannot bind token to object of type ${gv}, Kind=${ref.kind ?? ''}`);
      }
      if (ref.uid && ref.uid !== bound.metadata.uid) {
        throw conflict(
          { group: '', resource: ref.kind ?? '' },
          ref.name ?? '',
          `the UID in the bound object reference (${ref.uid}) does not match the UID in record (${bound.metadata.uid ?? ''}). The object might have been deleted and then recreated`,
        );
      }
    }
    if (pod) {
      const nodeName = (pod.spec as Record<string, unknown> | undefined)?.nodeName;
      const node = typeof nodeName === 'string' && nodeName ? store.tryGet('nodes', nodeName) : undefined;
      if (node) claims.node = { name: node.metadata.name ?? '', uid: node.metadata.uid ?? '' };
    }

    const nowSeconds = Math.floor(this.clock.now() / 1000);
    let lifetime = requested;
    const forApi = audiences.every((a) => this.apiAudiences.includes(a));
    if (pod && requested === WARN_ONLY_EXPIRATION_SECONDS && forApi) {
      claims.warnafter = nowSeconds + requested;
      lifetime = EXTENDED_EXPIRATION_SECONDS;
    }
    const token = this.sign({
      aud: audiences,
      exp: nowSeconds + lifetime,
      iat: nowSeconds,
      iss: this.issuer,
      jti: randomUUID(),
      nbf: nowSeconds,
      sub: `system:serviceaccount:${namespace}:${saName}`,
      'kubernetes.io': claims,
    });
    return {
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { name: saName, namespace, creationTimestamp: null },
      spec,
      // The status tells the requested lifetime, never the extended one.
      status: { token, expirationTimestamp: formatTime((nowSeconds + requested) * 1000) },
    };
  }
}
