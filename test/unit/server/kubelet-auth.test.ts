import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import {
  CachingTokenReviewer,
  WebhookAuthorizer,
  WebhookTokenReviewer,
  type ApiPoster,
  type Authorizer,
  type TokenReviewer,
  type UserInfo,
} from '../../../src/server/delegated-auth.js';
import { ExpiringCache } from '../../../src/server/expiring-cache.js';
import {
  authorizeRequest,
  nodeRequestAttributes,
  RequestAuthenticator,
  WEBSOCKET_BEARER_PROTOCOL_PREFIX,
} from '../../../src/server/kubelet-auth.js';

const alice: UserInfo = { username: 'alice', groups: ['devs'] };
const signal = AbortSignal.timeout(10_000);

function subresources(method: string, path: string, fineGrained = true): string {
  return nodeRequestAttributes(alice, method, path, 'node-1', fineGrained)
    .map((a) => `${a.verb} ${a.subresource}`)
    .join(', ');
}

test('the verb comes from the HTTP method, as upstream maps it', () => {
  assert.equal(subresources('GET', '/exec/ns/p/c'), 'get proxy');
  assert.equal(subresources('POST', '/exec/ns/p/c'), 'create proxy');
  assert.equal(subresources('PUT', '/x'), 'update proxy');
  assert.equal(subresources('PATCH', '/x'), 'patch proxy');
  assert.equal(subresources('DELETE', '/x'), 'delete proxy');
  assert.equal(subresources('HEAD', '/x'), ' proxy');
});

test('paths map to nodes subresources; fine-grained ones are asked before proxy', () => {
  assert.equal(subresources('GET', '/stats/summary'), 'get stats');
  assert.equal(subresources('GET', '/stats'), 'get stats');
  assert.equal(subresources('GET', '/statsfoo'), 'get proxy');
  assert.equal(subresources('GET', '/metrics'), 'get metrics');
  assert.equal(subresources('GET', '/metrics/cadvisor'), 'get metrics');
  assert.equal(subresources('GET', '/logs/'), 'get log');
  assert.equal(subresources('GET', '/logs/syslog'), 'get log');
  assert.equal(subresources('POST', '/checkpoint/ns/p/c'), 'create checkpoint');
  assert.equal(subresources('GET', '/containerLogs/ns/p/c'), 'get proxy');
  assert.equal(subresources('GET', '/spec/'), 'get proxy');
  assert.equal(subresources('GET', '/pods'), 'get pods, get proxy');
  assert.equal(subresources('GET', '/runningpods/'), 'get pods, get proxy');
  assert.equal(subresources('GET', '/healthz/syncloop'), 'get healthz, get proxy');
  assert.equal(subresources('GET', '/configz'), 'get configz, get proxy');
  assert.equal(subresources('GET', '/pods', false), 'get proxy');
  const [a] = nodeRequestAttributes(alice, 'GET', '/stats/', 'node-1', true);
  assert.deepEqual(
    { ...a, user: undefined },
    {
      user: undefined,
      verb: 'get',
      namespace: '',
      apiGroup: '',
      apiVersion: 'v1',
      resource: 'nodes',
      subresource: 'stats',
      name: 'node-1',
      resourceRequest: true,
      path: '/stats/',
    },
  );
});

test('authorizeRequest allows on any yes, lists each no, and is a 500 when the authorizer fails', async () => {
  const only = (sub: string): Authorizer => ({
    authorize: async (a) => ({ decision: a.subresource === sub ? 'allow' : 'noOpinion', reason: '' }),
  });
  const attrs = nodeRequestAttributes(alice, 'GET', '/pods', 'node-1', true);
  assert.deepEqual(await authorizeRequest(only('proxy'), attrs, signal), { allowed: true });
  assert.deepEqual(await authorizeRequest(only('stats'), attrs, signal), {
    allowed: false,
    status: 403,
    message:
      'Forbidden (user=alice, verb=get, resource=nodes, subresource=pods)\n' +
      'Forbidden (user=alice, verb=get, resource=nodes, subresource=proxy)\n',
  });
  const broken: Authorizer = { authorize: async () => Promise.reject(new Error('webhook down')) };
  assert.deepEqual(await authorizeRequest(broken, attrs, signal), {
    allowed: false,
    status: 500,
    message: 'Authorization error (user=alice, verb=get, resource=nodes, subresource=pods)',
  });
});

function request(headers: Record<string, string>, socket: object = {}): IncomingMessage {
  return { headers: { ...headers }, socket } as unknown as IncomingMessage;
}

const reviewer: TokenReviewer = {
  review: async (token) =>
    token === 'good'
      ? { authenticated: true, user: { username: 'bob', groups: ['g'] } }
      : { authenticated: false },
};

test('a good bearer token authenticates, adds system:authenticated and is not passed on', async () => {
  const auth = new RequestAuthenticator({ x509: false, tokenReviewer: reviewer, anonymous: false });
  const req = request({ authorization: 'Bearer good' });
  const r = await auth.authenticate(req, signal);
  assert.deepEqual(r, {
    authenticated: true,
    user: { username: 'bob', groups: ['g', 'system:authenticated'] },
    method: 'token',
  });
  assert.equal(req.headers.authorization, undefined);
});

test('bad credentials are refused even with anonymous on; no credentials are anonymous only when allowed', async () => {
  const withAnon = new RequestAuthenticator({ x509: false, tokenReviewer: reviewer, anonymous: true });
  assert.deepEqual(await withAnon.authenticate(request({ authorization: 'Bearer bad' }), signal), {
    authenticated: false,
    reason: 'invalid bearer token',
  });
  assert.deepEqual(await withAnon.authenticate(request({}), signal), {
    authenticated: true,
    user: { username: 'system:anonymous', groups: ['system:unauthenticated'] },
    method: 'anonymous',
  });
  const noAnon = new RequestAuthenticator({ x509: false, tokenReviewer: reviewer, anonymous: false });
  const r = await noAnon.authenticate(request({}), signal);
  assert.equal(r.authenticated, false);
  // Without a token webhook a bearer token is not a credential at all (upstream has no authenticator for it).
  const anonOnly = new RequestAuthenticator({ x509: false, anonymous: true });
  assert.equal(
    (await anonOnly.authenticate(request({ authorization: 'Bearer x' }), signal)).authenticated,
    true,
  );
});

test('a token in the WebSocket subprotocol authenticates and is removed from the offered protocols', async () => {
  const auth = new RequestAuthenticator({ x509: false, tokenReviewer: reviewer, anonymous: false });
  const encoded = Buffer.from('good').toString('base64url');
  const req = request({
    upgrade: 'websocket',
    'sec-websocket-protocol': `v5.channel.k8s.io, ${WEBSOCKET_BEARER_PROTOCOL_PREFIX}${encoded}`,
  });
  const r = await auth.authenticate(req, signal);
  assert.equal(r.authenticated, true);
  assert.equal(req.headers['sec-websocket-protocol'], 'v5.channel.k8s.io');
});

test('client certificates: CN is the user, O the groups; an unverified one is a 401', async () => {
  const auth = new RequestAuthenticator({ x509: true, anonymous: true });
  const cert = (authorized: boolean, extra: object = {}) => ({
    authorized,
    authorizationError: authorized ? undefined : 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    getPeerCertificate: () => ({
      subject: { CN: 'carol', O: ['ops', 'system:masters'] },
      serialNumber: '0A',
      ...extra,
    }),
  });
  assert.deepEqual(await auth.authenticate(request({}, cert(true)), signal), {
    authenticated: true,
    user: { username: 'carol', groups: ['ops', 'system:masters', 'system:authenticated'] },
    method: 'x509',
  });
  const bad = await auth.authenticate(request({}, cert(false)), signal);
  assert.equal(bad.authenticated, false);
  assert.match((bad as { reason: string }).reason, /UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
  const serverOnly = await auth.authenticate(
    request({}, cert(true, { ext_key_usage: ['1.3.6.1.5.5.7.3.1'] })),
    signal,
  );
  assert.equal(serverOnly.authenticated, false);
  const none = { getPeerCertificate: () => ({}) };
  assert.equal((await auth.authenticate(request({}, none), signal)).authenticated, true, 'anonymous');
});

function recordingPoster(
  answer: (path: string, body: unknown) => unknown,
): ApiPoster & { calls: { path: string; body: unknown }[] } {
  const calls: { path: string; body: unknown }[] = [];
  return {
    calls,
    post: async (path, body) => {
      calls.push({ path, body });
      return answer(path, body);
    },
  };
}

test('TokenReview: the request upstream sends, the user it reads back, answers kept for the TTL', async () => {
  const clock = new FakeClock();
  const poster = recordingPoster((_p, body) => {
    const token = (body as { spec: { token: string } }).spec.token;
    return token === 'good'
      ? {
          status: {
            authenticated: true,
            user: { username: 'sa', uid: 'u1', groups: ['a'], extra: { k: ['v'] } },
          },
        }
      : { status: { authenticated: false, error: 'token expired' } };
  });
  const cached = new CachingTokenReviewer(new WebhookTokenReviewer(poster, clock), clock, 120_000);
  assert.deepEqual(await cached.review('good', signal), {
    authenticated: true,
    user: { username: 'sa', uid: 'u1', groups: ['a'], extra: { k: ['v'] } },
  });
  assert.deepEqual(poster.calls[0], {
    path: '/apis/authentication.k8s.io/v1/tokenreviews',
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      metadata: { creationTimestamp: null },
      spec: { token: 'good' },
    },
  });
  await cached.review('good', signal);
  assert.deepEqual(await cached.review('bad', signal), { authenticated: false, error: 'token expired' });
  await cached.review('bad', signal);
  assert.equal(poster.calls.length, 2, 'good and bad answers are both kept');
  clock.advance(120_001);
  await cached.review('good', signal);
  assert.equal(poster.calls.length, 3, 'asked again once the TTL ran out');
});

test('SubjectAccessReview: the spec upstream sends; allowed kept 5m, denied 30s; failures not kept', async () => {
  const clock = new FakeClock();
  let allowed = true;
  let fail = false;
  const poster = recordingPoster(() => {
    if (fail) throw Object.assign(new Error('bad request'), { status: 400 });
    return { status: { allowed, reason: allowed ? 'ok' : 'no' } };
  });
  const authz = new WebhookAuthorizer(poster, clock, 300_000, 30_000);
  const [attrs] = nodeRequestAttributes(
    { username: 'bob', uid: 'u', groups: ['g'] },
    'GET',
    '/stats/summary',
    'node-1',
    true,
  );
  assert.deepEqual(await authz.authorize(attrs!, signal), { decision: 'allow', reason: 'ok' });
  assert.deepEqual(poster.calls[0]?.body, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    metadata: { creationTimestamp: null },
    spec: {
      resourceAttributes: {
        verb: 'get',
        version: 'v1',
        resource: 'nodes',
        subresource: 'stats',
        name: 'node-1',
      },
      user: 'bob',
      groups: ['g'],
      uid: 'u',
    },
  });
  allowed = false;
  clock.advance(299_000);
  assert.equal((await authz.authorize(attrs!, signal)).decision, 'allow', 'still the kept answer');
  clock.advance(2_000);
  assert.equal((await authz.authorize(attrs!, signal)).decision, 'noOpinion');
  allowed = true;
  clock.advance(29_000);
  assert.equal((await authz.authorize(attrs!, signal)).decision, 'noOpinion', 'a denial is kept 30s');
  clock.advance(2_000);
  assert.equal((await authz.authorize(attrs!, signal)).decision, 'allow');
  fail = true;
  const [other] = nodeRequestAttributes({ username: 'eve', groups: [] }, 'GET', '/pods', 'node-1', false);
  await assert.rejects(authz.authorize(other!, signal), /bad request/);
  fail = false;
  assert.equal((await authz.authorize(other!, signal)).decision, 'allow', 'a failure is not kept');
});

test('ExpiringCache shares one lookup between concurrent callers and sweeps when full', async () => {
  const clock = new FakeClock();
  const cache = new ExpiringCache<number>(clock, () => 1000, 2);
  let loads = 0;
  const load = () =>
    new Promise<number>((r) => {
      loads++;
      setTimeout(() => r(loads), 10);
    });
  const [a, b] = await Promise.all([cache.get('k', load), cache.get('k', load)]);
  assert.equal(a, b);
  assert.equal(loads, 1);
  await cache.get('k2', load);
  await cache.get('k3', load);
  assert.equal(cache.size(), 2, 'never more than the cap');
});
