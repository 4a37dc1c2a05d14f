import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { TokenBucketRateLimiter, rateLimiterFor, unlimited } from '../../../src/lib/token-bucket.js';
import { FakeClock } from '../../../src/lib/clock.js';

/** Lets promise callbacks run between clock steps. */
const settle = () => new Promise((r) => setImmediate(r));

describe('TokenBucketRateLimiter', () => {
  it('allows a burst, then qps per second, serving waiters in order', async () => {
    const clock = new FakeClock();
    const limiter = new TokenBucketRateLimiter(2, 3, clock); // kubeAPIQPS 2, kubeAPIBurst 3
    for (let i = 0; i < 3; i++) assert.equal(limiter.tryAccept(), true);
    assert.equal(limiter.tryAccept(), false);
    const done: number[] = [];
    for (let i = 0; i < 3; i++) void limiter.wait().then(() => done.push(i));
    await settle();
    assert.deepEqual(done, []);
    clock.advance(500);
    await settle();
    assert.deepEqual(done, [0]);
    clock.advance(1000);
    await settle();
    assert.deepEqual(done, [0, 1, 2]);
    // The bucket refills to its burst and no further.
    clock.advance(60_000);
    for (let i = 0; i < 3; i++) assert.equal(limiter.tryAccept(), true);
    assert.equal(limiter.tryAccept(), false);
  });

  it('gives the token back when a waiter gives up', async () => {
    const clock = new FakeClock();
    const limiter = new TokenBucketRateLimiter(1, 1, clock);
    assert.equal(limiter.tryAccept(), true);
    const ac = new AbortController();
    const waiting = limiter.wait(ac.signal);
    ac.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    clock.advance(1000);
    assert.equal(limiter.tryAccept(), true);
  });

  it("follows client-go's meaning of 0 and of a negative QPS", () => {
    const clock = new FakeClock();
    const byDefault = rateLimiterFor(0, 0, clock) as TokenBucketRateLimiter;
    assert.deepEqual([byDefault.qps, byDefault.burst], [5, 10]);
    assert.equal(rateLimiterFor(-1, 0, clock), unlimited);
    const kubelet = rateLimiterFor(50, 100, clock) as TokenBucketRateLimiter;
    assert.deepEqual([kubelet.qps, kubelet.burst], [50, 100]);
  });

  it('paces a RestClient: with QPS 10 and burst 2, six requests take at least 400 ms', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"kind":"Namespace","metadata":{"name":"x"}}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new RestClient({ config: { server: url }, qps: 10, burst: 2 });
    try {
      const started = Date.now();
      await Promise.all(Array.from({ length: 6 }, () => client.get({ resource: 'namespaces', name: 'x' })));
      const elapsedMs = Date.now() - started;
      assert.ok(elapsedMs >= 380, `took ${elapsedMs} ms`);
      assert.ok(elapsedMs < 2000, `took ${elapsedMs} ms`);
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
