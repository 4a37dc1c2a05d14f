import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { findTailLineStartIndex, readLogs, type LogOptions } from '../../../src/server/container-logs.js';
import type { LogStream } from '../../../src/server/cri-log-format.js';
import {
  containerIdForLogs,
  decodePodLogOptions,
  toLogOptions,
  validatePodLogOptions,
} from '../../../src/server/container-logs-handler.js';
import type { Pod } from '../../../src/api/core-v1.js';

const dir = mkdtempSync(join(tmpdir(), 'logs-unit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const T0 = '2024-01-01T00:00:0';
/** A CRI log file: [second, stream, tag, text]. */
function criFile(name: string, lines: [number, LogStream, 'F' | 'P', string][]): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    lines.map(([s, stream, tag, text]) => `${T0}${s}.000000001Z ${stream} ${tag} ${text}\n`).join(''),
  );
  return path;
}

const defaults: LogOptions = { tail: -1, bytes: -1, follow: false, timestamps: false };

async function read(
  path: string,
  opts: Partial<LogOptions> = {},
  running = async () => false,
): Promise<string> {
  const out: string[] = [];
  await readLogs(
    path,
    { ...defaults, ...opts },
    async (chunk, stream) => void out.push(stream === 'stderr' ? `[E]${chunk}` : chunk.toString()),
    {
      isContainerRunning: running,
      signal: AbortSignal.timeout(10_000),
    },
  );
  return out.join('');
}

test('findTailLineStartIndex counts complete lines from the end, across read blocks', async () => {
  const path = join(dir, 'tail.txt');
  const long = 'y'.repeat(100_000);
  writeFileSync(path, `a\n${long}\nc\nd`);
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    assert.equal(await findTailLineStartIndex(fh, size, -1), 0);
    // The unfinished "d" is not a line: the last 1 line is "c", so reading starts there.
    assert.equal(await findTailLineStartIndex(fh, size, 1), 2 + long.length + 1);
    assert.equal(await findTailLineStartIndex(fh, size, 2), 2);
    assert.equal(await findTailLineStartIndex(fh, size, 10), 0);
    assert.equal(await findTailLineStartIndex(fh, size, 0), size - 1);
  } finally {
    await fh.close();
  }
});

test('partial lines are joined; stderr goes to its own stream', async () => {
  const path = criFile('partial.log', [
    [1, 'stdout', 'P', 'hello '],
    [1, 'stdout', 'F', 'world'],
    [2, 'stderr', 'F', 'oops'],
  ]);
  assert.equal(await read(path), 'hello world\n[E]oops\n');
});

test('timestamps prefix only the start of each line, in fixed nanoseconds', async () => {
  const path = criFile('ts.log', [
    [1, 'stdout', 'P', 'a'],
    [2, 'stdout', 'F', 'b'],
  ]);
  assert.equal(await read(path, { timestamps: true }), '2024-01-01T00:00:01.000000001Z ab\n');
});

test('tail, limitBytes and since', async () => {
  const path = criFile('opts.log', [
    [1, 'stdout', 'F', 'one'],
    [2, 'stdout', 'F', 'two'],
    [3, 'stdout', 'F', 'three'],
  ]);
  assert.equal(await read(path, { tail: 2 }), 'two\nthree\n');
  assert.equal(await read(path, { tail: 0 }), '');
  assert.equal(await read(path, { bytes: 6 }), 'one\ntw');
  assert.equal(await read(path, { sinceNs: 1704067202_000000000n }), 'two\nthree\n');
  assert.equal(await read(path, { stream: 'stderr' }), '');
});

test('an unparsable line is skipped, not fatal', async () => {
  const path = join(dir, 'bad.log');
  writeFileSync(path, `${T0}1.0Z stdout F ok\nnot a log line\n${T0}2.0Z stdout F fine\n`);
  assert.equal(await read(path), 'ok\nfine\n');
});

test('follow waits for lines, and stops once the container is gone and the file is drained', async () => {
  const path = criFile('follow.log', [[1, 'stdout', 'F', 'first']]);
  let running = true;
  const reading = read(path, { follow: true }, async () => running);
  await new Promise((r) => setTimeout(r, 300));
  appendFileSync(path, `${T0}2.0Z stdout F second\n`);
  await new Promise((r) => setTimeout(r, 300));
  appendFileSync(path, `${T0}3.0Z stdout F third\n`);
  running = false;
  assert.equal(await reading, 'first\nsecond\nthird\n');
});

test('follow reads the rotated file to its end, then the new one', async () => {
  const path = criFile('rot.log', [[1, 'stdout', 'F', 'old-1']]);
  let running = true;
  const reading = read(path, { follow: true }, async () => running);
  await new Promise((r) => setTimeout(r, 200));
  appendFileSync(path, `${T0}2.0Z stdout F old-2\n`);
  renameSync(path, `${path}.20240101-000000`);
  writeFileSync(path, `${T0}3.0Z stdout F new-1\n`);
  await new Promise((r) => setTimeout(r, 1500));
  running = false;
  assert.equal(await reading, 'old-1\nold-2\nnew-1\n');
});

test('an aborted follow rejects promptly', async () => {
  const path = criFile('abort.log', [[1, 'stdout', 'F', 'x']]);
  const ac = new AbortController();
  const p = readLogs(path, { ...defaults, follow: true }, async () => undefined, {
    isContainerRunning: async () => true,
    signal: ac.signal,
  });
  setTimeout(() => ac.abort(new Error('client left')), 100);
  await assert.rejects(p, /client left/);
});

test('query decoding and validation follow PodLogOptions', () => {
  const q = (s: string) => new URLSearchParams(s);
  assert.deepEqual(decodePodLogOptions(q('follow&previous=0&timestamps=false')), {
    follow: true,
    previous: false,
    timestamps: false,
  });
  assert.equal(decodePodLogOptions(q('tail=5'))?.tailLines, 5);
  assert.equal(decodePodLogOptions(q('tail=all&tailLines=3'))?.tailLines, undefined);
  assert.equal(decodePodLogOptions(q('tailLines=x')), undefined);
  assert.equal(decodePodLogOptions(q('sinceTime=yesterday')), undefined);
  assert.equal(
    decodePodLogOptions(q('sinceTime=2024-01-01T00:00:01.9Z'))?.sinceTimeNs,
    1704067201_000000000n,
  );
  const v = (s: string) => validatePodLogOptions(decodePodLogOptions(q(s))!);
  assert.deepEqual(v('tailLines=1&limitBytes=1&sinceSeconds=1'), []);
  assert.equal(v('tailLines=-1').length, 1);
  assert.equal(v('limitBytes=0').length, 1);
  assert.equal(v('sinceSeconds=0').length, 1);
  assert.equal(v('sinceSeconds=1&sinceTime=2024-01-01T00:00:00Z').length, 1);
  assert.equal(v('stream=Stdout&tailLines=1').length, 1);
  const opts = toLogOptions(
    decodePodLogOptions(q('sinceSeconds=10&sinceTime=2024-01-01T00:00:00Z'))!,
    1704067300_000,
  );
  assert.equal(opts.sinceNs, 1704067290_000000000n, 'the later of the two wins');
});

test('which container the logs come from, and why there is none', () => {
  const pod = (cs: NonNullable<Pod['status']>['containerStatuses']): Pod => ({
    metadata: { name: 'p' },
    spec: { containers: [{ name: 'c', image: 'i' }] },
    status: { containerStatuses: cs! },
  });
  const base = { name: 'c', ready: false, restartCount: 1, image: 'i', imageID: '' };
  const running = pod([
    {
      ...base,
      containerID: 'containerd://new',
      state: { running: { startedAt: '' } },
      lastState: { terminated: { exitCode: 1, containerID: 'containerd://old' } },
    },
  ]);
  assert.deepEqual(containerIdForLogs(running, 'c', false), { containerId: 'containerd://new' });
  assert.deepEqual(containerIdForLogs(running, 'c', true), { containerId: 'containerd://old' });
  assert.deepEqual(containerIdForLogs(running, 'x', false), {
    error: 'container "x" in pod "p" is not available',
  });
  const fresh = pod([{ ...base, state: { waiting: { reason: 'ImagePullBackOff' } } }]);
  assert.deepEqual(containerIdForLogs(fresh, 'c', true), {
    error: 'previous terminated container "c" in pod "p" not found',
  });
  assert.deepEqual(containerIdForLogs(fresh, 'c', false), {
    error: 'container "c" in pod "p" is waiting to start: trying and failing to pull image',
  });
  const crashLooping = pod([
    {
      ...base,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, containerID: 'containerd://old' } },
    },
  ]);
  assert.deepEqual(containerIdForLogs(crashLooping, 'c', false), { containerId: 'containerd://old' });
});

test('a client that stops reading is given up on after the stall limit; one that drains is waited for', async () => {
  const { EventEmitter } = await import('node:events');
  const { writeWithBackpressure } = await import('../../../src/server/container-logs-handler.js');
  const full = Object.assign(new EventEmitter(), { write: () => false });
  const started = Date.now();
  await assert.rejects(
    writeWithBackpressure(full, Buffer.from('x'), new AbortController().signal, 100),
    /took nothing for 100 ms/,
  );
  assert.ok(Date.now() - started >= 90);
  const draining = Object.assign(new EventEmitter(), { write: () => false });
  const p = writeWithBackpressure(draining, Buffer.from('x'), new AbortController().signal, 10_000);
  setTimeout(() => draining.emit('drain'), 20);
  await p;
  const ac = new AbortController();
  const left = writeWithBackpressure(
    Object.assign(new EventEmitter(), { write: () => false }),
    Buffer.from('x'),
    ac.signal,
    10_000,
  );
  ac.abort(new Error('client left'));
  await assert.rejects(left, /client left/);
});
