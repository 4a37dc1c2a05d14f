/** The container log manager's pass over the running containers, against a stand-in runtime. */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Container, ContainerStatusResponse } from '../../../src/cri/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import {
  ContainerLogManager,
  type ContainerLogManagerOptions,
} from '../../../src/logs/container-log-manager.js';

test('a pass asks the runtime for a log path once per container, and rotates a log over the limit', async () => {
  setLogSink(() => undefined);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-logrotate-'));
  try {
    const logOf = (id: string) => path.join(dir, `${id}.log`);
    let running = ['c1', 'c2'];
    const statusCalls: string[] = [];
    const reopened: string[] = [];
    const runtimeService: ContainerLogManagerOptions['runtimeService'] = {
      listContainers: async () =>
        running.map((id) => ({ id, state: 'CONTAINER_RUNNING' }) as unknown as Container),
      containerStatus: async (id: string) => {
        statusCalls.push(id);
        return { status: { logPath: logOf(id) }, info: {} } as unknown as ContainerStatusResponse;
      },
      reopenContainerLog: async (id: string) => {
        reopened.push(id);
        await writeFile(logOf(id), '');
      },
    };
    const manager = new ContainerLogManager({
      runtimeService,
      clock: new FakeClock(),
      policy: { maxSizeBytes: 100, maxFiles: 5 },
      maxWorkers: 1,
      monitorIntervalMs: 10_000,
      runtimeRequestTimeoutMs: 2000,
    });
    await writeFile(logOf('c1'), 'x'.repeat(10));
    await writeFile(logOf('c2'), 'x'.repeat(10));

    await manager.rotateLogs();
    assert.deepEqual(statusCalls, ['c1', 'c2']);
    assert.deepEqual(reopened, []);

    // The next pass finds c2's log over the limit through the path it already knows.
    await writeFile(logOf('c2'), 'x'.repeat(200));
    await manager.rotateLogs();
    assert.deepEqual(statusCalls, ['c1', 'c2']);
    assert.deepEqual(reopened, ['c2']);
    const files = (await readdir(dir)).sort();
    assert.equal(files.length, 3);
    assert.match(files[2]!, /^c2\.log\.\d{8}-\d{6}$/);

    // A container that left the listing is forgotten: back under the same ID, it is asked again.
    running = ['c2'];
    await manager.rotateLogs();
    running = ['c1', 'c2'];
    await manager.rotateLogs();
    assert.deepEqual(statusCalls, ['c1', 'c2', 'c1']);
  } finally {
    setLogSink((line) => process.stderr.write(line + '\n'));
    await rm(dir, { recursive: true, force: true });
  }
});

test('a container without a log path is asked once and skipped; a failed ContainerStatus is asked again', async () => {
  setLogSink(() => undefined);
  try {
    const statusCalls: string[] = [];
    let failing = true;
    const runtimeService: ContainerLogManagerOptions['runtimeService'] = {
      listContainers: async () =>
        ['no-log', 'flaky'].map((id) => ({ id, state: 'CONTAINER_RUNNING' }) as unknown as Container),
      containerStatus: async (id: string) => {
        statusCalls.push(id);
        if (id === 'flaky' && failing) throw new Error('runtime busy');
        return { status: { logPath: '' }, info: {} } as unknown as ContainerStatusResponse;
      },
      reopenContainerLog: async () => {
        throw new Error('not expected: nothing to rotate');
      },
    };
    const manager = new ContainerLogManager({
      runtimeService,
      clock: new FakeClock(),
      policy: { maxSizeBytes: 100, maxFiles: 5 },
      maxWorkers: 2,
      monitorIntervalMs: 10_000,
      runtimeRequestTimeoutMs: 2000,
    });
    await manager.rotateLogs();
    failing = false;
    await manager.rotateLogs();
    await manager.rotateLogs();
    assert.deepEqual(statusCalls.sort(), ['flaky', 'flaky', 'no-log']);
  } finally {
    setLogSink((line) => process.stderr.write(line + '\n'));
  }
});

test("the kubelet's own containers' log paths come without a ContainerStatus call", async () => {
  setLogSink(() => undefined);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-logrotate-'));
  try {
    const logOf = (id: string) => path.join(dir, `${id}.log`);
    const statusCalls: string[] = [];
    const runtimeService: ContainerLogManagerOptions['runtimeService'] = {
      listContainers: async () =>
        ['mine', 'other'].map((id) => ({ id, state: 'CONTAINER_RUNNING' }) as unknown as Container),
      containerStatus: async (id: string) => {
        statusCalls.push(id);
        return { status: { logPath: logOf(id) }, info: {} } as unknown as ContainerStatusResponse;
      },
      reopenContainerLog: async () => undefined,
      createdContainerLogPath: (id: string) => (id === 'mine' ? logOf(id) : undefined),
    };
    const manager = new ContainerLogManager({
      runtimeService,
      clock: new FakeClock(),
      policy: { maxSizeBytes: 5, maxFiles: 5 },
      maxWorkers: 1,
      monitorIntervalMs: 10_000,
      runtimeRequestTimeoutMs: 2000,
    });
    await writeFile(logOf('mine'), 'x'.repeat(10));
    await writeFile(logOf('other'), '');
    await manager.rotateLogs();
    assert.deepEqual(statusCalls, ['other']);
    // Rotated through the path it was given.
    assert.ok((await readdir(dir)).some((n) => n.startsWith('mine.log.')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
