import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { FakeClock, realClock } from '../../../src/lib/clock.js';
import {
  decodeHealthCheckRequest,
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  encodeHealthCheckResponse,
  healthServiceDefinition,
  servingStatusNumber,
  type HealthCheckRequest,
  type HealthCheckResponse,
} from '../../../src/prober/grpc-health.js';
import { doGrpcProbe } from '../../../src/prober/grpc-probe.js';

const UA = 'kube-probe/1.30';

async function bind(server: grpc.Server): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    ),
  );
}

function shutdown(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => server.tryShutdown(() => resolve()));
}

describe('health messages', () => {
  test('round-trip through the hand-written codec', () => {
    assert.deepEqual(decodeHealthCheckRequest(encodeHealthCheckRequest({ service: 'api.v1' })), {
      service: 'api.v1',
    });
    assert.deepEqual(decodeHealthCheckRequest(encodeHealthCheckRequest({ service: '' })), { service: '' });
    for (const status of [0, 1, 2, 3, 300]) {
      assert.deepEqual(decodeHealthCheckResponse(encodeHealthCheckResponse({ status })), { status });
    }
  });

  test('unknown fields are skipped', () => {
    // field 2 (varint 150), field 3 (bytes "hi"), then status = SERVING
    const buf = Buffer.from([0x10, 0x96, 0x01, 0x1a, 0x02, 0x68, 0x69, 0x08, 0x01]);
    assert.deepEqual(decodeHealthCheckResponse(buf), { status: 1 });
  });
});

describe('grpc probe against an in-process health server', () => {
  let server: grpc.Server;
  let port: number;
  const statuses = new Map<string, number>();
  let lastUserAgent = '';
  let hold: ((call: grpc.ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>) => void) | undefined;

  before(async () => {
    server = new grpc.Server();
    server.addService(healthServiceDefinition, {
      Check: (
        call: grpc.ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>,
        callback: grpc.sendUnaryData<HealthCheckResponse>,
      ) => {
        lastUserAgent = String(call.metadata.get('user-agent')[0] ?? '');
        if (hold) return hold(call);
        const status = statuses.get(call.request.service);
        if (status === undefined)
          return callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
        callback(null, { status });
      },
    });
    port = await bind(server);
    statuses.set('', servingStatusNumber('SERVING'));
    statuses.set('db', servingStatusNumber('NOT_SERVING'));
  });

  after(() => shutdown(server));

  test('SERVING is a success', async () => {
    const o = await doGrpcProbe('127.0.0.1', '', port, { clock: realClock, timeoutMs: 5000, userAgent: UA });
    assert.deepEqual(o, { result: 'success', output: 'service healthy' });
    assert.match(lastUserAgent, /^kube-probe\/1\.30/);
  });

  test('NOT_SERVING is a failure naming the status', async () => {
    const o = await doGrpcProbe('127.0.0.1', 'db', port, {
      clock: realClock,
      timeoutMs: 5000,
      userAgent: UA,
    });
    assert.deepEqual(o, { result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
  });

  test('an error status is a failure in grpc-go words', async () => {
    const o = await doGrpcProbe('127.0.0.1', 'nope', port, {
      clock: realClock,
      timeoutMs: 5000,
      userAgent: UA,
    });
    assert.deepEqual(o, {
      result: 'failure',
      output: 'error: health rpc probe failed: rpc error: code = NotFound desc = unknown service',
    });
  });

  test('a Check that does not answer in time fails at the clock timeout', async () => {
    const clock = new FakeClock();
    let called!: () => void;
    const inCheck = new Promise<void>((r) => (called = r));
    hold = () => called();
    try {
      const pending = doGrpcProbe('127.0.0.1', '', port, { clock, timeoutMs: 1000, userAgent: UA });
      await inCheck;
      clock.advance(1000);
      assert.deepEqual(await pending, {
        result: 'failure',
        output: 'timeout: health rpc did not complete within 1s',
      });
    } finally {
      hold = undefined;
    }
  });
});

describe('grpc probe without a health service', () => {
  test('UNIMPLEMENTED says the server lacks the health protocol', async () => {
    const server = new grpc.Server();
    const port = await bind(server);
    try {
      const o = await doGrpcProbe('127.0.0.1', '', port, {
        clock: realClock,
        timeoutMs: 5000,
        userAgent: UA,
      });
      assert.equal(o.result, 'failure');
      assert.match(
        o.output,
        /^error: this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\): /,
      );
    } finally {
      await shutdown(server);
    }
  });

  test('nothing listening: the connection is awaited until the timeout', async () => {
    const server = new grpc.Server();
    const port = await bind(server);
    await shutdown(server);
    const clock = new FakeClock();
    const pending = doGrpcProbe('127.0.0.1', '', port, { clock, timeoutMs: 2000, userAgent: UA });
    await new Promise((r) => setTimeout(r, 50));
    clock.advance(2000);
    assert.deepEqual(await pending, {
      result: 'failure',
      output: `timeout: failed to connect service "127.0.0.1:${port}" within 2s: context deadline exceeded`,
    });
  });
});
