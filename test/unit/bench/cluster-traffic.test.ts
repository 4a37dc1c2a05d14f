import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { embeddedObjectBytes } from '../../../bench/cluster-api.js';
import { AuditReader, otherWriters, parseMetrics, tally, wireDiff } from '../../../bench/cluster-traffic.js';
import { reapedChildrenCpuSeconds } from '../../../bench/proc-stats.js';

/** A protobuf length-delimited field: key (field << 3 | 2), length varint, bytes. */
function field(no: number, bytes: Buffer): Buffer {
  const len: number[] = [];
  let n = bytes.length;
  do {
    len.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>= 7;
  } while (n > 0);
  return Buffer.concat([Buffer.from([(no << 3) | 2, ...len]), bytes]);
}

test('a protobuf watch frame: the length of the embedded object, as the API server counts it', () => {
  const object = Buffer.alloc(300, 7);
  const event = Buffer.concat([field(1, Buffer.from('MODIFIED')), field(2, field(1, object))]);
  // The stream serializer's raw form, and the same in the k8s envelope.
  assert.equal(embeddedObjectBytes(event), 300);
  const envelope = Buffer.concat([Buffer.from('k8s\0'), field(2, event)]);
  assert.equal(embeddedObjectBytes(envelope), 300);
  assert.throws(() => embeddedObjectBytes(field(1, Buffer.from('ADDED'))), /without an object/);
});

test('metrics: watch events per kind between two snapshots', () => {
  const before = parseMetrics(
    [
      '# HELP apiserver_watch_events_total x',
      'apiserver_watch_events_total{group="",kind="Pod",version="v1"} 10',
      'apiserver_watch_events_sizes_sum{group="",kind="Pod",version="v1"} 1000',
      'apiserver_watch_events_sizes_count{group="",kind="Pod",version="v1"} 10',
    ].join('\n'),
  );
  const after = parseMetrics(
    [
      'apiserver_watch_events_total{group="",kind="Pod",version="v1"} 25',
      'apiserver_watch_events_sizes_sum{group="",kind="Pod",version="v1"} 4000',
      'apiserver_watch_events_total{group="",kind="Node",version="v1"} 2',
      'apiserver_watch_events_sizes_sum{group="",kind="Node",version="v1"} 900',
    ].join('\n'),
  );
  assert.deepEqual(wireDiff(before, after).watchEvents, {
    Pod: { events: 15, bytes: 3000 },
    Node: { events: 2, bytes: 900 },
  });
});

test("audit log: the node's requests in a window, counted once each, read as the file grows", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cluster-traffic-'));
  try {
    const file = path.join(dir, 'audit.log');
    const node = 'system:node:bench-node';
    const event = (over: Record<string, unknown>) =>
      JSON.stringify({
        stage: 'ResponseComplete',
        verb: 'patch',
        requestReceivedTimestamp: '2026-12-06T20:00:01.500000Z',
        user: { username: node },
        userAgent: 'kubelet/v1.28.7',
        objectRef: { resource: 'pods', subresource: 'status' },
        requestObject: { status: { phase: 'Running' } },
        responseObject: { kind: 'Pod' },
        ...over,
      });
    await writeFile(
      file,
      [
        event({}),
        // A watch counts when its response starts, not again when it ends.
        event({ verb: 'watch', stage: 'ResponseStarted', objectRef: { resource: 'pods' } }),
        event({ verb: 'watch', stage: 'ResponseComplete', objectRef: { resource: 'pods' } }),
        event({
          verb: 'update',
          objectRef: { resource: 'leases', apiGroup: 'coordination.k8s.io' },
          requestObject: undefined,
        }),
        // Outside the window, and someone else's.
        event({ requestReceivedTimestamp: '2026-12-06T20:00:09Z' }),
        event({ user: { username: 'system:apiserver' }, userAgent: 'kube-apiserver' }),
        event({ user: { username: 'admin' }, userAgent: 'tskubelet-cluster-bench', verb: 'create' }),
      ].join('\n') +
        '\n' +
        event({}).slice(0, 40),
    );
    const reader = new AuditReader(file);
    const first = await reader.readNew();
    assert.equal(first.length, 6, 'the unfinished last line waits');
    const from = Date.parse('2026-12-06T20:00:00Z');
    const to = Date.parse('2026-12-06T20:00:05Z');
    const rows = tally(first, node, from, to);
    const patchBody = Buffer.byteLength(JSON.stringify({ status: { phase: 'Running' } }));
    const pod = Buffer.byteLength(JSON.stringify({ kind: 'Pod' }));
    assert.deepEqual(rows, {
      'patch pods/status': { requests: 1, requestBytes: patchBody, responseBytes: pod },
      'watch pods': { requests: 1, requestBytes: patchBody, responseBytes: pod },
      'update leases.coordination.k8s.io': { requests: 1, requestBytes: 0, responseBytes: pod },
    });
    const others = otherWriters(first, node, 'tskubelet-cluster-bench', from, to);
    assert.deepEqual(
      others.map((r) => r.user),
      ['system:apiserver'],
    );
    await appendFile(file, event({}).slice(40) + '\n');
    const second = await reader.readNew();
    assert.equal(second.length, 1, 'the line finished since');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the CPU of the children a process waited for is counted apart', () => {
  const before = reapedChildrenCpuSeconds(process.pid);
  // A child that spins for 0.3 s of its own CPU (at most 20 s of wall time on a busy machine).
  execFileSync(process.execPath, [
    '-e',
    'const t = Date.now(); while (process.cpuUsage().user < 300000 && Date.now() - t < 20000) {}',
  ]);
  const gained = reapedChildrenCpuSeconds(process.pid) - before;
  assert.ok(gained >= 0.2, `children's CPU grew by ${gained} s`);
});
