/**
 * Authentication and authorization delegated to the API server, as upstream's kubelet does with
 * `--authentication-token-webhook` and `--authorization-mode=Webhook`: a bearer token is checked with
 * a TokenReview (authentication.k8s.io/v1), an access question with a SubjectAccessReview
 * (authorization.k8s.io/v1). Both go through ApiPoster, which the cluster-mode API client satisfies.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { ExpiringCache } from './expiring-cache.js';

const log = logger('auth');

/** The smallest API client the webhooks need: POST a JSON object, get the JSON answer back. */
export interface ApiPoster {
  /** Rejects on transport errors and non-2xx answers. */
  post(path: string, body: unknown, signal: AbortSignal): Promise<unknown>;
}

/** user.Info: who a request comes from. */
export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export interface TokenReviewResult {
  authenticated: boolean;
  user?: UserInfo;
  /** Why the token was refused, as the reviewer said it. */
  error?: string;
}

export interface TokenReviewer {
  review(token: string, signal: AbortSignal): Promise<TokenReviewResult>;
}

/** authorizer.Attributes for a kubelet API request: always a resource request on nodes/<sub>. */
export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  namespace: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  name: string;
  resourceRequest: boolean;
  path: string;
}

export type Decision = 'allow' | 'deny' | 'noOpinion';

export interface Authorizer {
  /** Rejects when no decision could be had (the webhook is down): upstream answers 500 then. */
  authorize(attrs: RequestAttributes, signal: AbortSignal): Promise<{ decision: Decision; reason: string }>;
}

export const alwaysAllowAuthorizer: Authorizer = {
  authorize: async () => ({ decision: 'allow', reason: '' }),
};

/** Upstream's webhook timeouts: a review gets 10 s, retried with back-off inside that budget. */
const REVIEW_TIMEOUT_MS = 10_000;
const RETRY_INITIAL_MS = 500;
const RETRY_FACTOR = 1.5;
const RETRY_STEPS = 5;

async function postWithRetry(
  poster: ApiPoster,
  path: string,
  body: unknown,
  signal: AbortSignal,
  clock: Clock,
): Promise<unknown> {
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(REVIEW_TIMEOUT_MS)]);
  let delayMs = RETRY_INITIAL_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await poster.post(path, body, deadline);
    } catch (err) {
      if (deadline.aborted || attempt >= RETRY_STEPS || !isRetriable(err)) throw err;
      log.v(2, 'Webhook request failed; retrying', { path, attempt, err: errorMessage(err) });
      await clock.sleep(delayMs * (1 + Math.random() * 0.2), deadline);
      delayMs *= RETRY_FACTOR;
    }
  }
}

/** Server errors, throttling and broken connections are worth another try; a 4xx is an answer. */
function isRetriable(err: unknown): boolean {
  const e = err as { status?: unknown; statusCode?: unknown; httpStatus?: unknown };
  const status = [e.httpStatus, e.status, e.statusCode].find(
    (v): v is number => typeof v === 'number' && v > 0,
  );
  if (status !== undefined) return status === 429 || status >= 500;
  return true;
}

function asRecord(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : {};
}

function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** TokenReview through the API server (upstream: the webhook token authenticator). */
export class WebhookTokenReviewer implements TokenReviewer {
  constructor(
    private readonly poster: ApiPoster,
    private readonly clock: Clock,
    /** spec.audiences; empty means the API server's own audiences. */
    private readonly audiences: string[] = [],
  ) {}

  async review(token: string, signal: AbortSignal): Promise<TokenReviewResult> {
    const body = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      metadata: { creationTimestamp: null },
      spec: { token, ...(this.audiences.length > 0 ? { audiences: this.audiences } : {}) },
    };
    const answer = asRecord(
      await postWithRetry(
        this.poster,
        '/apis/authentication.k8s.io/v1/tokenreviews',
        body,
        signal,
        this.clock,
      ),
    );
    const status = asRecord(answer.status);
    if (status.authenticated !== true) {
      return {
        authenticated: false,
        ...(typeof status.error === 'string' && status.error ? { error: status.error } : {}),
      };
    }
    const u = asRecord(status.user);
    const extra: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(asRecord(u.extra))) extra[k] = stringList(v);
    return {
      authenticated: true,
      user: {
        username: typeof u.username === 'string' ? u.username : '',
        ...(typeof u.uid === 'string' && u.uid ? { uid: u.uid } : {}),
        groups: stringList(u.groups),
        ...(Object.keys(extra).length > 0 ? { extra } : {}),
      },
    };
  }
}

/** Keeps TokenReview answers, good and bad, for ttlMs (upstream: authentication.webhook.cacheTTL, 2m). */
export class CachingTokenReviewer implements TokenReviewer {
  private readonly cache: ExpiringCache<TokenReviewResult>;

  constructor(
    private readonly delegate: TokenReviewer,
    clock: Clock,
    ttlMs: number,
  ) {
    this.cache = new ExpiringCache(clock, () => ttlMs);
  }

  review(token: string, _signal: AbortSignal): Promise<TokenReviewResult> {
    // The key is a digest, so the cache never holds a usable credential.
    const key = createHash('sha256').update(token).digest('hex');
    // Callers with the same token share one review, so it runs on its own deadline, not the first caller's.
    return this.cache.get(key, () => this.delegate.review(token, AbortSignal.timeout(REVIEW_TIMEOUT_MS)));
  }
}

/** SubjectAccessReview through the API server, answers kept as upstream keeps them (allowed 5m, denied 30s). */
export class WebhookAuthorizer implements Authorizer {
  private readonly cache: ExpiringCache<{ decision: Decision; reason: string }>;

  constructor(
    private readonly poster: ApiPoster,
    private readonly clock: Clock,
    authorizedTTLMs: number,
    unauthorizedTTLMs: number,
  ) {
    this.cache = new ExpiringCache(clock, (v) =>
      v.decision === 'allow' ? authorizedTTLMs : unauthorizedTTLMs,
    );
  }

  authorize(attrs: RequestAttributes, _signal: AbortSignal): Promise<{ decision: Decision; reason: string }> {
    const spec = {
      resourceAttributes: {
        ...(attrs.namespace ? { namespace: attrs.namespace } : {}),
        verb: attrs.verb,
        ...(attrs.apiGroup ? { group: attrs.apiGroup } : {}),
        version: attrs.apiVersion,
        resource: attrs.resource,
        ...(attrs.subresource ? { subresource: attrs.subresource } : {}),
        name: attrs.name,
      },
      user: attrs.user.username,
      groups: attrs.user.groups,
      ...(attrs.user.extra ? { extra: attrs.user.extra } : {}),
      ...(attrs.user.uid ? { uid: attrs.user.uid } : {}),
    };
    const key = JSON.stringify(spec);
    return this.cache.get(key, async () => {
      const body = {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        metadata: { creationTimestamp: null },
        spec,
      };
      const answer = asRecord(
        await postWithRetry(
          this.poster,
          '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          body,
          // Shared by every caller asking the same question: its own deadline, not the first caller's.
          AbortSignal.timeout(REVIEW_TIMEOUT_MS),
          this.clock,
        ),
      );
      const status = asRecord(answer.status);
      const reason = typeof status.reason === 'string' ? status.reason : '';
      if (status.allowed === true) return { decision: 'allow', reason };
      return { decision: status.denied === true ? 'deny' : 'noOpinion', reason };
    });
  }
}
