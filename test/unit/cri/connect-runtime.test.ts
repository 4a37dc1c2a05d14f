import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { connectRuntime, type RuntimeConnection } from '../../../src/cri/connect-runtime.js';
import { FakeCriServer } from '../../../src/cri/testing/fake-cri-server.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import { setLogSink } from '../../../src/lib/log.js';
import { sleep, waitFor } from '../../helpers/wait.js';
import { simpleContainerConfig } from './cri-fixtures.js';

describe('connectRuntime', () => {
  let dir: string;
  let socketPath: string;
  let logLines: string[];
  const cleanups: (() => unknown)[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cri-connect-'));
    socketPath = join(dir, 'cri.sock');
    logLines = [];
    setLogSink((line) => logLines.push(line));
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    setLogSink((line) => process.stderr.write(line + '\n'));
    rmSync(dir, { recursive: true, force: true });
  });

  const retryLines = (): string[] => logLines.filter((l) => l.includes('Cannot reach the container runtime'));

  async function startServer(): Promise<FakeCriServer> {
    const server = await FakeCriServer.start({ socketPath });
    cleanups.push(() => server.close());
    return server;
  }

  function keep(connection: RuntimeConnection): RuntimeConnection {
    cleanups.push(() => connection.close());
    return connection;
  }

  test('performs the Version and ImageFsInfo handshake and hands back working clients', async () => {
    const server = await startServer();
    const connection = keep(await connectRuntime(`unix://${socketPath}`));
    assert.equal(connection.version.runtimeName, 'fake-cri');
    assert.equal(server.lastRequests.get('Version')?.version, '0.1.0');
    assert.equal(server.callCounts.get('ImageFsInfo'), 1);
    assert.ok(await connection.images.imageStatus({ image: 'busybox' }));
    assert.deepEqual(await connection.runtime.listContainers(), []);
    assert.equal(retryLines().length, 0);
  });

  test('accepts a bare socket path and a separate image endpoint', async () => {
    const server = await startServer();
    const imageServer = await FakeCriServer.start();
    cleanups.push(() => imageServer.close());
    const connection = keep(await connectRuntime(socketPath, { imageEndpoint: imageServer.endpoint }));
    await connection.images.imageFsInfo();
    assert.equal(server.callCounts.get('ImageFsInfo'), undefined);
    assert.equal(imageServer.callCounts.get('ImageFsInfo'), 2);
  });

  test('keeps retrying while the socket is missing and connects once it appears', async () => {
    const connecting = connectRuntime(socketPath, { retryInitialDelayMs: 50, retryMaxDelayMs: 200 });
    await waitFor('two failed attempts', () => retryLines().length >= 2, 5000, 20);
    assert.match(retryLines()[0]!, /ENOENT|unavailable/);
    await startServer();
    const connection = keep(await connecting);
    assert.equal(connection.version.version, '0.1.0');
  });

  test('retries a runtime that answers the handshake with an error', async () => {
    const server = await startServer();
    server.failNext('ImageFsInfo', 12 /* UNIMPLEMENTED */, 'unknown service runtime.v1.ImageService', {
      times: 2,
    });
    const connection = keep(
      await connectRuntime(socketPath, { retryInitialDelayMs: 20, retryMaxDelayMs: 40 }),
    );
    assert.equal(retryLines().length, 2);
    assert.match(retryLines()[0]!, /unknown service runtime\.v1\.ImageService/);
    assert.equal(connection.version.runtimeName, 'fake-cri');
  });

  test('backs off 1 s, then 2 s, on the injected clock', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const connecting = connectRuntime(socketPath, { clock, signal: controller.signal });
    connecting.catch(() => undefined);
    await waitFor('first attempt to fail', () => clock.pendingTimers() === 1, 5000, 10);
    assert.equal(retryLines().length, 1);
    const firstDelayMs = Number(/retryInMs=(\d+)/.exec(retryLines()[0]!)?.[1]);
    assert.ok(firstDelayMs >= 1000 && firstDelayMs <= 1200, `first delay ${firstDelayMs}`);

    clock.advance(firstDelayMs - 1);
    await sleep(50);
    assert.equal(retryLines().length, 1, 'no second attempt before the delay has passed');
    clock.advance(1);
    await waitFor(
      'second attempt to fail',
      () => retryLines().length === 2 && clock.pendingTimers() === 1,
      5000,
      10,
    );
    const secondDelayMs = Number(/retryInMs=(\d+)/.exec(retryLines()[1]!)?.[1]);
    assert.ok(secondDelayMs >= 2000 && secondDelayMs <= 2400, `second delay ${secondDelayMs}`);

    controller.abort(new Error('stop'));
    await assert.rejects(connecting, /stop/);
  });

  test('stops retrying when the signal aborts', async () => {
    const controller = new AbortController();
    const connecting = connectRuntime(socketPath, {
      retryInitialDelayMs: 30,
      retryMaxDelayMs: 30,
      signal: controller.signal,
    });
    await waitFor('a failed attempt', () => retryLines().length >= 1, 5000, 10);
    const reason = new Error('shutting down');
    controller.abort(reason);
    await assert.rejects(connecting, (err) => err === reason);
    const attempts = retryLines().length;
    await sleep(150);
    assert.equal(retryLines().length, attempts, 'no attempts after abort');
  });

  test('rejects an endpoint it cannot dial at all without retrying', async () => {
    await assert.rejects(connectRuntime('tcp://127.0.0.1:1'), (err) => isKubeletError(err, 'INVALID_CONFIG'));
  });

  test('rides out a runtime restart: fails fast while it is down, works on the first call after', async () => {
    const server = await startServer();
    const { runtime, images } = keep(await connectRuntime(socketPath));
    const sandboxId = await runtime.runPodSandbox(
      {
        metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 },
        hostname: 'p',
        logDirectory: dir,
        portMappings: [],
        labels: {},
        annotations: {},
      },
      '',
    );

    // A call in flight when the runtime dies fails instead of waiting out its deadline.
    server.setDelay('ListContainers', 10_000);
    const inFlight = runtime.listContainers(undefined, { timeoutMs: 30_000 }).then(
      () => assert.fail('a call in flight when the runtime stopped succeeded'),
      (err: unknown) => err,
    );
    await waitFor(
      'the call to reach the server',
      () => server.callCounts.get('ListContainers') === 1,
      5000,
      10,
    );
    let started = Date.now();
    await server.stop();
    const inFlightError = await inFlight;
    assert.ok(isKubeletError(inFlightError, 'CRI_UNAVAILABLE'), String(inFlightError));
    assert.ok(Date.now() - started < 2000, `in-flight call took ${Date.now() - started} ms to fail`);
    server.setDelay('ListContainers', 0);

    for (let i = 0; i < 3; i++) {
      started = Date.now();
      await assert.rejects(runtime.listContainers(undefined, { timeoutMs: 30_000 }), (err) =>
        isKubeletError(err, 'CRI_UNAVAILABLE'),
      );
      await assert.rejects(images.imageFsInfo({ timeoutMs: 30_000 }), (err) =>
        isKubeletError(err, 'CRI_UNAVAILABLE'),
      );
      assert.ok(Date.now() - started < 1000, `calls to a stopped runtime took ${Date.now() - started} ms`);
    }

    await server.listen();
    const containerId = await runtime.createContainer(sandboxId, simpleContainerConfig('after-restart'), {
      metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 },
      hostname: 'p',
      logDirectory: dir,
      portMappings: [],
      labels: {},
      annotations: {},
    });
    assert.equal((await runtime.containerStatus(containerId)).status.state, 'CONTAINER_CREATED');
    assert.ok(await images.imageStatus({ image: 'busybox' }));
    assert.ok(logLines.some((l) => l.includes('Container runtime is unavailable')));
    assert.ok(logLines.some((l) => l.includes('Container runtime is available again')));
  });
});
