import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../../src/lib/clock.js';
import { TokenManager } from '../../../src/volume/token-manager.js';
import type { TokenRequest } from '../../../src/volume/volume-types.js';

/** A TokenRequest API that issues numbered tokens for the lifetime asked, on the test's clock. */
function fakeApi(clock: FakeClock) {
  const calls: { namespace: string; sa: string; tr: TokenRequest }[] = [];
  let failing: Error | undefined;
  let n = 0;
  return {
    calls,
    fail(err: Error | undefined) {
      failing = err;
    },
    getToken(namespace: string, sa: string, tr: TokenRequest): Promise<TokenRequest> {
      calls.push({ namespace, sa, tr });
      if (failing) return Promise.reject(failing);
      const seconds = tr.spec.expirationSeconds ?? 3600;
      return Promise.resolve({
        spec: { ...tr.spec, expirationSeconds: seconds },
        status: {
          token: `token-${++n}`,
          expirationTimestamp: new Date(Math.floor(clock.now() / 1000) * 1000 + seconds * 1000).toISOString(),
        },
      });
    },
  };
}

const request = (uid = 'pod-uid', expirationSeconds = 3600): TokenRequest => ({
  spec: {
    expirationSeconds,
    boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid },
  },
});

test('a token is cached until 80 % of its lifetime has passed, then renewed', async () => {
  const clock = new FakeClock(Date.UTC(2024, 0, 1));
  const api = fakeApi(clock);
  const m = new TokenManager({ getToken: (ns, sa, tr) => api.getToken(ns, sa, tr), clock, random: () => 0 });

  const t1 = await m.getServiceAccountToken('ns', 'default', request());
  assert.equal(t1.status?.token, 'token-1');
  clock.advance(2879_000); // 0.8 * 3600 s less one second
  assert.equal((await m.getServiceAccountToken('ns', 'default', request())).status?.token, 'token-1');
  assert.equal(api.calls.length, 1);
  clock.advance(2_000);
  assert.equal((await m.getServiceAccountToken('ns', 'default', request())).status?.token, 'token-2');
  assert.equal(api.calls.length, 2);
  assert.deepEqual(api.calls[1]?.tr.spec.boundObjectRef, {
    apiVersion: 'v1',
    kind: 'Pod',
    name: 'web',
    uid: 'pod-uid',
  });
});

test('the jitter renews up to 10 s early', async () => {
  const clock = new FakeClock(Date.UTC(2024, 0, 1));
  const api = fakeApi(clock);
  const m = new TokenManager({
    getToken: (ns, sa, tr) => api.getToken(ns, sa, tr),
    clock,
    random: () => 0.99,
  });
  await m.getServiceAccountToken('ns', 'default', request('u', 600));
  clock.advance(480_000 - 9_000 - 1_000); // 80 % of 600 s, less 9 s of jitter, less a second
  await m.getServiceAccountToken('ns', 'default', request('u', 600));
  assert.equal(api.calls.length, 1);
  clock.advance(2_000);
  await m.getServiceAccountToken('ns', 'default', request('u', 600));
  assert.equal(api.calls.length, 2);
});

test('a long-lived token is renewed after 24 h', async () => {
  const clock = new FakeClock(Date.UTC(2024, 0, 1));
  const api = fakeApi(clock);
  const m = new TokenManager({ getToken: (ns, sa, tr) => api.getToken(ns, sa, tr), clock, random: () => 0 });
  const year = 365 * 24 * 3600;
  await m.getServiceAccountToken('ns', 'default', request('u', year));
  clock.advance(24 * 3600 * 1000 - 1000);
  await m.getServiceAccountToken('ns', 'default', request('u', year));
  assert.equal(api.calls.length, 1);
  clock.advance(2000);
  await m.getServiceAccountToken('ns', 'default', request('u', year));
  assert.equal(api.calls.length, 2);
});

test('a failed renewal keeps the old token while it is valid, then fails', async () => {
  const clock = new FakeClock(Date.UTC(2024, 0, 1));
  const api = fakeApi(clock);
  const m = new TokenManager({ getToken: (ns, sa, tr) => api.getToken(ns, sa, tr), clock, random: () => 0 });
  await m.getServiceAccountToken('ns', 'default', request('u', 1000));
  api.fail(new Error('connection refused'));
  clock.advance(900_000);
  assert.equal(
    (await m.getServiceAccountToken('ns', 'default', request('u', 1000))).status?.token,
    'token-1',
  );
  clock.advance(101_000);
  await assert.rejects(
    m.getServiceAccountToken('ns', 'default', request('u', 1000)),
    /expired and refresh failed: connection refused/,
  );
});

test('a first fetch that fails says so; standalone mode words it as upstream', async () => {
  const clock = new FakeClock();
  const m = new TokenManager({
    getToken: () => Promise.reject(new Error('cannot use TokenManager when kubelet is in standalone mode')),
    clock,
  });
  await assert.rejects(
    m.getServiceAccountToken('ns', 'default', request()),
    /^Error: failed to fetch token: cannot use TokenManager when kubelet is in standalone mode$/,
  );
});

test('tokens are cached per audience, lifetime and pod, and forgotten with the pod', async () => {
  const clock = new FakeClock();
  const api = fakeApi(clock);
  const m = new TokenManager({ getToken: (ns, sa, tr) => api.getToken(ns, sa, tr), clock, random: () => 0 });
  await m.getServiceAccountToken('ns', 'default', request('a'));
  await m.getServiceAccountToken('ns', 'default', request('b'));
  await m.getServiceAccountToken('ns', 'default', { spec: { ...request('a').spec, audiences: ['vault'] } });
  await m.getServiceAccountToken('ns', 'default', request('a', 7200));
  assert.equal(m.size, 4);
  assert.equal(api.calls.length, 4);
  m.deleteServiceAccountToken('a');
  assert.equal(m.size, 1);
  await m.getServiceAccountToken('ns', 'default', request('b'));
  assert.equal(api.calls.length, 4);
});

test('expired tokens are dropped from the cache as time passes', async () => {
  const clock = new FakeClock();
  const api = fakeApi(clock);
  const m = new TokenManager({ getToken: (ns, sa, tr) => api.getToken(ns, sa, tr), clock, random: () => 0 });
  await m.getServiceAccountToken('ns', 'default', request('a', 600));
  clock.advance(700_000);
  await m.getServiceAccountToken('ns', 'default', request('b', 600));
  assert.equal(m.size, 1);
});
