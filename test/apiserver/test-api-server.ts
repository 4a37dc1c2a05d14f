/**
 * TestApiServer: an in-process stand-in for kube-apiserver, for tests only. It serves the resources a
 * kubelet touches over real HTTP(S) on 127.0.0.1 with a random port, with the real server's
 * semantics where a kubelet can see them (see docs/architecture.md, "Tests"). Where it
 * differs from a real cluster, the real one is right.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { realClock, type Clock } from '../../src/lib/clock.js';
import {
  Authenticator,
  defaultAuthorizationPolicy,
  type AuthorizationPolicy,
  type TestUser,
} from './auth.js';
import { CertificateAuthority, type CsrSigningOptions, type KeyPair } from './certs.js';
import type { VersionInfo } from './discovery.js';
import { createRequestHandler, type RequestRecord } from './handlers.js';
import { renderKubeconfig } from './kubeconfig.js';
import { ObjectStore } from './store.js';
import { ServiceAccountTokenIssuer } from './tokens.js';

export type {
  AuthorizationAttributes,
  AuthorizationDecision,
  AuthorizationPolicy,
  TestUser,
} from './auth.js';
export { defaultAuthorizationPolicy } from './auth.js';
export type { KeyPair } from './certs.js';
export type { RequestRecord } from './handlers.js';
export type { DeleteOptions, DeleteResult, ListOptions, ListResult } from './store.js';
export { ObjectStore } from './store.js';
export type { KubeObject } from './resources.js';
export { ApiError } from './api-error.js';

export interface TestApiServerOptions {
  /** Serve plain HTTP: no CA, no client certificates, bearer tokens only. Default: HTTPS. */
  plainHttp?: boolean;
  /** The node whose kubelet the tests run: user `system:node:<nodeName>` in group system:nodes. */
  nodeName?: string;
  /** More users, besides `admin` (system:masters) and the node user. */
  users?: TestUser[];
  /** Decides every request and every SubjectAccessReview. Default: defaultAuthorizationPolicy. */
  authorize?: AuthorizationPolicy;
  /** Drives timestamps, token times, watch timeouts and bookmarks. Default: the real clock. */
  clock?: Clock;
  /** How often a watch with allowWatchBookmarks gets a BOOKMARK. The real server: about a minute. */
  bookmarkIntervalMs?: number;
  /** Events kept for resuming watches; a watch from before them gets 410. */
  historyLimit?: number;
  /** A watch without timeoutSeconds ends after 1 to 2 times this, like the real --min-request-timeout. */
  minRequestTimeoutSeconds?: number;
  /** The `iss` of service account tokens, and by default the API audience. */
  serviceAccountIssuer?: string;
  apiAudiences?: string[];
  version?: VersionInfo;
}

export interface TestApiServer {
  /** `https://127.0.0.1:<port>` (or http://). */
  readonly url: string;
  readonly port: number;
  /** Direct access to the objects, with the same rules as the HTTP API. */
  readonly store: ObjectStore;
  /** The cluster CA, PEM; undefined for a plain HTTP server. */
  readonly caPem: string | undefined;
  /** The user name of the node's kubelet: `system:node:<nodeName>`. */
  readonly nodeUser: string;
  /** The static bearer token of `admin`, a member of system:masters. */
  readonly adminToken: string;
  /** The RS256 public key that verifies service account tokens, PEM. */
  readonly serviceAccountPublicKeyPem: string;
  /** Requests served so far, oldest first (the last 10,000). */
  readonly requests: readonly RequestRecord[];
  readonly paused: boolean;
  /** The static bearer token of a user; throws if it has none. */
  tokenFor(user: string): string;
  /** A client certificate signed by the cluster CA: CN = user, O = groups. HTTPS servers only. */
  issueClientCertificate(user: string, groups?: string[]): Promise<KeyPair>;
  /** Signs a PKCS#10 request with the cluster CA, as a CSR signer would (tests drive signing). */
  signCertificateRequest(csrPem: string, opts: CsrSigningOptions): Promise<string>;
  /**
   * Writes a kubeconfig for user at path, with the CA embedded. The credential defaults to the user's
   * static token if it has one, else a client certificate (groups from the user table or opts.groups).
   */
  writeKubeconfig(
    path: string,
    user: string,
    opts?: { credential?: 'token' | 'certificate'; groups?: string[] },
  ): Promise<void>;
  setAuthorizationPolicy(policy: AuthorizationPolicy): void;
  /** Forgets the watch history: any watch from an older resourceVersion now gets 410 Expired. */
  compact(): void;
  /** An outage: stops listening and cuts every connection; connecting is refused until resume(). */
  pause(): Promise<void>;
  /** Listens again on the same port. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

const DEFAULT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const MAX_REQUEST_RECORDS = 10_000;

class TestApiServerImpl implements TestApiServer {
  readonly requests: RequestRecord[] = [];
  paused = false;
  private stopped = false;
  private policy: AuthorizationPolicy;

  constructor(
    private readonly server: http.Server | https.Server,
    readonly port: number,
    readonly store: ObjectStore,
    private readonly ca: CertificateAuthority | undefined,
    private readonly users: TestUser[],
    readonly nodeUser: string,
    private readonly issuer: ServiceAccountTokenIssuer,
    policy: AuthorizationPolicy,
  ) {
    this.policy = policy;
  }

  get url(): string {
    return `${this.ca ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  get caPem(): string | undefined {
    return this.ca?.certPem;
  }

  get adminToken(): string {
    return this.tokenFor('admin');
  }

  get serviceAccountPublicKeyPem(): string {
    return this.issuer.publicKeyPem;
  }

  currentPolicy(): AuthorizationPolicy {
    return this.policy;
  }

  record(r: RequestRecord): void {
    this.requests.push(r);
    if (this.requests.length > MAX_REQUEST_RECORDS) this.requests.shift();
  }

  tokenFor(user: string): string {
    const u = this.users.find((x) => x.name === user && x.token);
    if (!u?.token) throw new Error(`test API server user ${user} has no static token`);
    return u.token;
  }

  /** Signs a PKCS#10 request with this server's CA (the test's CSR signer). */
  signCertificateRequest(csrPem: string, opts: CsrSigningOptions): Promise<string> {
    if (!this.ca) throw new Error('a plain HTTP test API server has no CA to sign with');
    return this.ca.signCsr(csrPem, opts);
  }

  issueClientCertificate(user: string, groups: string[] = []): Promise<KeyPair> {
    if (!this.ca) throw new Error('a plain HTTP test API server takes no client certificates');
    return this.ca.issueClient(user, groups);
  }

  async writeKubeconfig(
    path: string,
    user: string,
    opts: { credential?: 'token' | 'certificate'; groups?: string[] } = {},
  ): Promise<void> {
    const known = this.users.find((u) => u.name === user);
    const credential = opts.credential ?? (known?.token ? 'token' : 'certificate');
    let text: string;
    if (credential === 'token') {
      text = renderKubeconfig({
        server: this.url,
        ...(this.caPem ? { caPem: this.caPem } : {}),
        user,
        token: this.tokenFor(user),
      });
    } else {
      const pair = await this.issueClientCertificate(user, opts.groups ?? known?.groups ?? []);
      text = renderKubeconfig({
        server: this.url,
        ...(this.caPem ? { caPem: this.caPem } : {}),
        user,
        clientCertPem: pair.certPem,
        clientKeyPem: pair.keyPem,
      });
    }
    await writeFile(path, text, { mode: 0o600 });
  }

  setAuthorizationPolicy(policy: AuthorizationPolicy): void {
    this.policy = policy;
  }

  compact(): void {
    this.store.hub.compact();
  }

  async pause(): Promise<void> {
    if (this.paused || this.stopped) return;
    this.paused = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    this.store.hub.closeAll();
    await closed;
  }

  async resume(): Promise<void> {
    if (!this.paused || this.stopped) return;
    await listen(this.server, this.port);
    this.paused = false;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    await this.pause();
    this.stopped = true;
    await this.ca?.dispose();
  }
}

function listen(server: http.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function randomToken(): string {
  return randomBytes(24).toString('base64url');
}

export async function startTestApiServer(opts: TestApiServerOptions = {}): Promise<TestApiServer> {
  const clock = opts.clock ?? realClock;
  const nodeUser = `system:node:${opts.nodeName ?? 'node-1'}`;
  const users: TestUser[] = [
    { name: 'admin', groups: ['system:masters'], token: randomToken() },
    { name: nodeUser, groups: ['system:nodes'], token: randomToken() },
    ...(opts.users ?? []),
  ];
  const ca = opts.plainHttp ? undefined : await CertificateAuthority.create();
  try {
    const serving = ca ? await ca.issueServing('kube-apiserver', ['127.0.0.1'], ['localhost']) : undefined;
    const issuerName = opts.serviceAccountIssuer ?? DEFAULT_ISSUER;
    const issuer = new ServiceAccountTokenIssuer(clock, issuerName, opts.apiAudiences ?? [issuerName]);
    const version = opts.version ?? { major: '1', minor: '32', gitVersion: 'v1.32.4' };
    const store = new ObjectStore({
      clock,
      bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
      historyLimit: opts.historyLimit ?? 10_000,
      rootCaPem: ca?.certPem ?? '',
      backfillPodQosClass: Number.parseInt(version.minor, 10) >= 29,
    });
    const authenticator = new Authenticator(users, issuer, store);
    // The handler needs the server object, which needs the port the handler's server listens on.
    const ref: { impl?: TestApiServerImpl } = {};
    const handler = createRequestHandler({
      store,
      authenticator,
      issuer,
      policy: () => ref.impl!.currentPolicy(),
      serverAddress: () => `127.0.0.1:${ref.impl?.port ?? 0}`,
      version,
      clock,
      minRequestTimeoutSeconds: opts.minRequestTimeoutSeconds ?? 1800,
      record: (r) => ref.impl?.record(r),
    });
    const server =
      ca && serving
        ? https.createServer(
            {
              cert: serving.certPem,
              key: serving.keyPem,
              ca: ca.certPem,
              requestCert: true,
              rejectUnauthorized: false,
            },
            handler,
          )
        : http.createServer(handler);
    // Watches are long-lived; Node's default request timeouts would cut them.
    server.requestTimeout = 0;
    server.headersTimeout = 60_000;
    // Node closes idle keep-alive connections after 5 s; a client reusing one just then sees a reset.
    // Go's API server keeps them for 90 s.
    server.keepAliveTimeout = 90_000;
    const port = await listen(server, 0);
    const impl = new TestApiServerImpl(
      server,
      port,
      store,
      ca,
      users,
      nodeUser,
      issuer,
      opts.authorize ?? defaultAuthorizationPolicy,
    );
    ref.impl = impl;
    return impl;
  } catch (err) {
    await ca?.dispose();
    throw err;
  }
}
