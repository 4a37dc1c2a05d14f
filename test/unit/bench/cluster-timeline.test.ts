import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { auditTimes, logSeenTimes } from '../../../bench/cluster-timeline.js';

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cluster-timeline-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const USER = 'system:node:bench-node';
const NS = 'cluster-density';

function audit(e: {
  verb: string;
  at: string;
  resource: string;
  subresource?: string;
  name?: string;
  user?: string;
  stage?: string;
  requestObject?: unknown;
}): string {
  return JSON.stringify({
    stage: e.stage ?? 'ResponseComplete',
    verb: e.verb,
    requestReceivedTimestamp: e.at,
    user: { username: e.user ?? USER },
    objectRef: { resource: e.resource, subresource: e.subresource, name: e.name, namespace: NS },
    requestObject: e.requestObject,
  });
}

test('audit log: first status patch, the patch that says Running, token requests by bound pod, in the window', async () => {
  await withDir(async (dir) => {
    const file = path.join(dir, 'audit.log');
    const status = (at: string, name: string, phase?: string, extra: object = {}) =>
      audit({
        verb: 'patch',
        at,
        resource: 'pods',
        subresource: 'status',
        name,
        requestObject: { status: phase ? { phase } : { conditions: [] } },
        ...extra,
      });
    await writeFile(
      file,
      [
        status('2026-12-06T23:00:00.500000Z', 'p0', 'Pending'),
        // Another user's patch, a request still under way and one outside the window are not the node's.
        status('2026-12-06T23:00:00.400000Z', 'p0', 'Running', { user: 'admin' }),
        status('2026-12-06T23:00:00.450000Z', 'p0', 'Running', { stage: 'ResponseStarted' }),
        status('2026-12-06T23:00:09.000000Z', 'p0', 'Running'),
        audit({
          verb: 'create',
          at: '2026-12-06T23:00:00.700000Z',
          resource: 'serviceaccounts',
          subresource: 'token',
          name: 'default',
          requestObject: { spec: { boundObjectRef: { kind: 'Pod', name: 'p0' } } },
        }),
        status('2026-12-06T23:00:02.000000Z', 'p0'),
        status('2026-12-06T23:00:03.000000Z', 'p0', 'Running'),
        status('2026-12-06T23:00:04.000000Z', 'p0', 'Running'),
        '',
      ].join('\n'),
    );
    const from = Date.parse('2026-12-06T23:00:00Z');
    const { times, patches } = auditTimes(file, USER, NS, from, from + 5000);
    assert.deepEqual(times.get('p0'), {
      firstPatch: from + 500,
      token: from + 700,
      runningPatch: from + 3000,
    });
    assert.equal(patches.get('p0'), 4);
  });
});

test("kubelet log: the first SyncLoop ADD of each pod, in either kubelet's text format", async () => {
  await withDir(async (dir) => {
    const file = path.join(dir, 'kubelet.log');
    await writeFile(
      file,
      [
        'I1206 23:00:01.250000   4242 kubelet.go:2330] "SyncLoop ADD" source="api" pods=["cluster-density/cd-u1-0","cluster-density/cd-u1-1"]',
        'I1206 23:00:01.300 4343 kubelet] "SyncLoop" op="ADD" source="api" pods=["cluster-density/cd-t1-2"]',
        'I1206 23:00:02.000 4343 kubelet] "SyncLoop" op="UPDATE" source="api" pods=["cluster-density/cd-t1-3"]',
        'I1206 23:00:03.000 4343 kubelet] "SyncLoop" op="ADD" source="api" pods=["cluster-density/cd-t1-2"]',
        'not a log line',
      ].join('\n'),
    );
    const from = new Date(2026, 11, 6, 23, 0, 0).getTime();
    const seen = logSeenTimes(file, NS, from);
    assert.deepEqual(
      [...seen],
      [
        ['cd-u1-0', from + 1250],
        ['cd-u1-1', from + 1250],
        ['cd-t1-2', from + 1300],
      ],
    );
    assert.equal(logSeenTimes(path.join(dir, 'missing.log'), NS, from).size, 0);
  });
});
