import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { IngestStatus } from '../../../src/cri/containerd-content/list-ingest-statuses.js';
import { PullProgressTracker } from '../../../src/images/pull-progress.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink, setVerbosity } from '../../../src/lib/log.js';

function ingest(ref: string, offset: number, total: number, startedAtMs: number): IngestStatus {
  return { ref, offset, total, expected: '', startedAtMs, updatedAtMs: startedAtMs + 1 };
}

/** Lets the tracker's poll (a timer, then a promise) run. */
async function tick(clock: FakeClock, ms: number): Promise<void> {
  clock.advance(ms);
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

function setUp() {
  const clock = new FakeClock();
  let store: IngestStatus[] = [];
  let calls = 0;
  const tracker = new PullProgressTracker({
    clock,
    listStatuses: async () => {
      calls++;
      return store;
    },
  });
  return {
    clock,
    tracker,
    setStore: (s: IngestStatus[]) => (store = s),
    calls: () => calls,
  };
}

test('bytes done grow as ingests write, committed blobs stay counted, and the finished pull is kept with its size', async () => {
  const { clock, tracker, setStore } = setUp();
  const t0 = clock.now();
  const pull = tracker.pullStarted('reg/big:v1');
  setStore([ingest('manifest-sha256:m', 100, 500, t0), ingest('layer-sha256:a', 1000, 10_000, t0)]);
  await tick(clock, 0);
  assert.deepEqual(tracker.inFlight(), [
    { image: 'reg/big:v1', bytesDone: 1100, bytesTotal: 10_500, startedAt: t0 },
  ]);
  // The manifest is committed (its ingest is gone); the layer moved on.
  setStore([ingest('layer-sha256:a', 6000, 10_000, t0)]);
  await tick(clock, 1000);
  assert.deepEqual(
    tracker.inFlight().map((p) => [p.bytesDone, p.bytesTotal]),
    [[6500, 10_500]],
  );
  setStore([]);
  await tick(clock, 1000);
  assert.deepEqual(
    tracker.inFlight().map((p) => [p.bytesDone, p.bytesTotal]),
    [[10_500, 10_500]],
  );
  pull.finished({ ok: true, sizeBytes: 12_345 });
  assert.deepEqual(tracker.inFlight(), []);
  assert.deepEqual(tracker.recent(), [
    { image: 'reg/big:v1', bytes: 12_345, durationMs: 2000, at: t0 + 2000 },
  ]);
});

test('polls only while pulls run; a failed pull is not kept; the newest recent pull comes first and at most 50 are kept', async () => {
  const { clock, tracker, calls } = setUp();
  await tick(clock, 5000);
  assert.equal(calls(), 0, 'no pull, no poll');
  const failed = tracker.pullStarted('reg/missing:v1');
  await tick(clock, 0);
  await tick(clock, 1000);
  assert.equal(calls(), 2);
  failed.finished({ ok: false });
  await tick(clock, 5000);
  assert.equal(calls(), 2, 'polling stopped with the last pull');
  assert.deepEqual(tracker.recent(), []);
  for (let i = 0; i < 60; i++) tracker.pullStarted(`reg/img:${i}`).finished({ ok: true, sizeBytes: i });
  const recent = tracker.recent();
  assert.equal(recent.length, 50);
  assert.equal(recent[0]?.image, 'reg/img:59');
  assert.equal(recent[49]?.image, 'reg/img:10');
});

test('an ingest belongs to the pull that started last before it; a stale partial download is ignored', async () => {
  const { clock, tracker, setStore } = setUp();
  const stale: IngestStatus = {
    ...ingest('layer-sha256:old', 50, 900, 0),
    updatedAtMs: clock.now() - 60_000,
  };
  tracker.pullStarted('reg/one:v1');
  await tick(clock, 500);
  const t1 = clock.now();
  tracker.pullStarted('reg/two:v1');
  setStore([stale, ingest('layer-sha256:x', 10, 100, t1 - 400), ingest('layer-sha256:y', 20, 200, t1 + 1)]);
  await tick(clock, 1000);
  const byImage = new Map(tracker.inFlight().map((p) => [p.image, [p.bytesDone, p.bytesTotal]]));
  assert.deepEqual(byImage.get('reg/one:v1'), [10, 100]);
  assert.deepEqual(byImage.get('reg/two:v1'), [20, 200]);
});

test('a runtime without the content API (UNIMPLEMENTED) is asked once, and pulls still finish', async () => {
  const clock = new FakeClock();
  let calls = 0;
  const tracker = new PullProgressTracker({
    clock,
    listStatuses: async () => {
      calls++;
      throw Object.assign(new Error('12 UNIMPLEMENTED: unknown service'), { code: 12 });
    },
  });
  const p = tracker.pullStarted('reg/a:v1');
  await tick(clock, 0);
  await tick(clock, 3000);
  assert.equal(calls, 1);
  p.finished({ ok: true, sizeBytes: 7 });
  assert.equal(tracker.recent()[0]?.bytes, 7);
  tracker.stop();
});

test('progress is logged at --v=2 every 5 s and at --v=4 every poll', async () => {
  const lines: string[] = [];
  setLogSink((l) => lines.push(l));
  try {
    for (const v of [2, 4]) {
      setVerbosity(v);
      lines.length = 0;
      const { clock, tracker, setStore } = setUp();
      setStore([ingest('layer-sha256:a', 10, 100, clock.now())]);
      const pull = tracker.pullStarted('reg/a:v1');
      await tick(clock, 0);
      for (let i = 0; i < 6; i++) await tick(clock, 1000);
      pull.finished({ ok: true, sizeBytes: 100 });
      const progress = lines.filter((l) => l.includes('"Image pull progress"'));
      assert.equal(progress.length, v === 2 ? 1 : 7, `--v=${v}: ${progress.join('\n')}`);
      assert.match(progress[0] ?? '', /image="reg\/a:v1" bytesDone=10 bytesTotal=100/);
    }
  } finally {
    setVerbosity(0);
    setLogSink((l) => process.stderr.write(l + '\n'));
  }
});
