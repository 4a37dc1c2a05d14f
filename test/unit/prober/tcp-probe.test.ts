import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { FakeClock, realClock } from '../../../src/lib/clock.js';
import { doTcpProbe } from '../../../src/prober/tcp-probe.js';

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function close(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

test('a port that accepts is a success, and the connection is closed again', async () => {
  let closedByProbe!: () => void;
  const closed = new Promise<void>((r) => (closedByProbe = r));
  const server = net.createServer((socket) => {
    socket.on('close', closedByProbe);
    socket.on('error', () => undefined);
  });
  const port = await listen(server);
  try {
    const o = await doTcpProbe('127.0.0.1', port, { clock: realClock, timeoutMs: 1000 });
    assert.deepEqual(o, { result: 'success', output: '' });
    await closed;
  } finally {
    await close(server);
  }
});

test('a refused connection fails with Go dial message', async () => {
  const server = net.createServer();
  const port = await listen(server);
  await close(server);
  const o = await doTcpProbe('127.0.0.1', port, { clock: realClock, timeoutMs: 1000 });
  assert.deepEqual(o, {
    result: 'failure',
    output: `dial tcp 127.0.0.1:${port}: connect: connection refused`,
  });
});

test('a connection not made within the timeout is an i/o timeout', async () => {
  const clock = new FakeClock();
  const server = net.createServer();
  const port = await listen(server);
  try {
    const pending = doTcpProbe('127.0.0.1', port, { clock, timeoutMs: 1000 });
    // The connect completes on a later turn of the event loop; the clock's deadline comes first.
    clock.advance(1000);
    assert.deepEqual(await pending, { result: 'failure', output: `dial tcp 127.0.0.1:${port}: i/o timeout` });
    assert.equal(clock.pendingTimers(), 0);
  } finally {
    await close(server);
  }
});

test('IPv6 addresses are bracketed in messages', async () => {
  const clock = new FakeClock();
  const pending = doTcpProbe('fd00::1', 8080, { clock, timeoutMs: 1000 });
  clock.advance(1000);
  const o = await pending;
  assert.equal(o.result, 'failure');
  assert.match(o.output, /^dial tcp \[fd00::1\]:8080: /);
});

test('aborting gives an error, not a verdict', async () => {
  const controller = new AbortController();
  controller.abort(new Error('stopped'));
  const o = await doTcpProbe('127.0.0.1', 1, {
    clock: realClock,
    timeoutMs: 1000,
    signal: controller.signal,
  });
  assert.equal(o.result, 'unknown');
  assert.equal(o.error?.message, 'stopped');
});
