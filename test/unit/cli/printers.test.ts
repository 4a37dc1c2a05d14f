import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { humanDuration, podDisplay } from '../../../src/api/pod-display.js';
import { describePod, printEvents, printPods } from '../../../src/cli/printers.js';
import { TABLE, tabwrite } from '../../../src/cli/tabwriter.js';
import type { CoreEvent } from '../../../src/events/event-types.js';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

function pod(name: string, status: Pod['status'], extra: Partial<Pod['spec']> = {}): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, creationTimestamp: ago(300) },
    spec: { containers: [{ name: 'app', image: 'busybox' }], nodeName: 'n1', ...extra },
    status,
  } as Pod;
}

const running = pod('web', {
  phase: 'Running',
  podIP: '10.0.0.5',
  podIPs: [{ ip: '10.0.0.5' }],
  startTime: ago(300),
  conditions: [{ type: 'Ready', status: 'True' }],
  containerStatuses: [
    {
      name: 'app',
      ready: true,
      restartCount: 0,
      image: 'busybox',
      imageID: 'sha256:1',
      containerID: 'containerd://abc',
      state: { running: { startedAt: ago(290) } },
    },
  ],
});
const crashing = pod('crash', {
  phase: 'Running',
  containerStatuses: [
    {
      name: 'app',
      ready: false,
      restartCount: 4,
      image: 'busybox',
      imageID: '',
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 3, reason: 'Error', finishedAt: ago(12) } },
    },
  ],
});
const initializing = pod(
  'init',
  {
    phase: 'Pending',
    initContainerStatuses: [
      {
        name: 'setup',
        ready: false,
        restartCount: 0,
        image: 'busybox',
        imageID: '',
        state: { running: { startedAt: ago(5) } },
      },
    ],
  },
  { initContainers: [{ name: 'setup', image: 'busybox' }] },
);

describe('kubectl columns (printPod)', () => {
  it('READY, STATUS and RESTARTS as kubectl computes them', () => {
    assert.deepEqual(podDisplay(running), { ready: '1/1', status: 'Running', restarts: 0 });
    assert.deepEqual(podDisplay(crashing), {
      ready: '0/1',
      status: 'CrashLoopBackOff',
      restarts: 4,
      lastRestartMs: NOW - 12_000,
    });
    assert.equal(podDisplay(initializing).status, 'Init:0/1');
    const completed = pod('done', {
      phase: 'Succeeded',
      containerStatuses: [
        {
          name: 'app',
          ready: false,
          restartCount: 0,
          image: '',
          imageID: '',
          state: { terminated: { exitCode: 0, reason: 'Completed' } },
        },
      ],
    });
    assert.equal(podDisplay(completed).status, 'Completed');
    const signalled = pod('sig', {
      phase: 'Failed',
      containerStatuses: [
        {
          name: 'app',
          ready: false,
          restartCount: 0,
          image: '',
          imageID: '',
          state: { terminated: { exitCode: 137, signal: 9 } },
        },
      ],
    });
    assert.equal(podDisplay(signalled).status, 'Signal:9');
    assert.equal(
      podDisplay({ ...running, metadata: { ...running.metadata, deletionTimestamp: ago(1) } }).status,
      'Terminating',
    );
  });

  it("durations as apimachinery's HumanDuration", () => {
    const cases: [number, string][] = [
      [0, '0s'],
      [119, '119s'],
      [120, '2m'],
      [125, '2m5s'],
      [600, '10m'],
      [3 * 3600, '3h'],
      [3 * 3600 + 60 * 5, '3h5m'],
      [9 * 3600, '9h'],
      [50 * 3600, '2d2h'],
      [10 * 86400, '10d'],
      [3 * 365 * 86400, '3y'],
    ];
    for (const [s, text] of cases) assert.equal(humanDuration(s * 1000), text, `${s}s`);
    assert.equal(humanDuration(-5000), '<invalid>');
  });
});

describe('tskubelet get pods / events / describe output', () => {
  it('get pods: kubectl columns, tab-aligned', () => {
    assert.equal(
      printPods([crashing, initializing, running], NOW, false),
      [
        'NAME    READY   STATUS             RESTARTS      AGE',
        'crash   0/1     CrashLoopBackOff   4 (12s ago)   5m',
        'init    0/1     Init:0/1           0             5m',
        'web     1/1     Running            0             5m',
        '',
      ].join('\n'),
    );
    assert.match(
      printPods([running], NOW, true),
      /^NAMESPACE {3}NAME {3}READY {3}STATUS {4}RESTARTS {3}AGE\ndefault {5}web /,
    );
  });

  it('events: oldest first, with repeats counted', () => {
    const ev = (reason: string, last: number, count = 1, first = last): CoreEvent => ({
      metadata: { name: reason, namespace: 'default' },
      involvedObject: { kind: 'Pod', name: 'crash', namespace: 'default' },
      reason,
      message: `${reason} happened`,
      source: { component: 'kubelet', host: 'n1' },
      firstTimestamp: ago(first),
      lastTimestamp: ago(last),
      count,
      type: reason === 'BackOff' ? 'Warning' : 'Normal',
    });
    assert.equal(
      printEvents([ev('BackOff', 5, 3, 40), ev('Pulled', 50)], NOW, false),
      [
        'LAST SEEN          TYPE      REASON    OBJECT      MESSAGE',
        '50s                Normal    Pulled    pod/crash   Pulled happened',
        '5s (x3 over 40s)   Warning   BackOff   pod/crash   BackOff happened',
        '',
      ].join('\n'),
    );
  });

  it('describe pod: sections as kubectl describe prints them', () => {
    const out = describePod(
      { ...running, metadata: { ...running.metadata, labels: { app: 'web' } } },
      [
        {
          metadata: { name: 'e1', namespace: 'default' },
          involvedObject: { kind: 'Pod', name: 'web' },
          reason: 'Started',
          message: 'Started container app',
          source: { component: 'kubelet', host: 'n1' },
          firstTimestamp: ago(290),
          lastTimestamp: ago(290),
          count: 1,
          type: 'Normal',
        },
      ],
      NOW,
    );
    assert.match(
      out,
      /^Name: {13}web\nNamespace: {8}default\nPriority: {9}0\nService Account: {2}\nNode: {13}n1\n/,
    );
    assert.match(out, /^Start Time: {7}Thu, 01 Jan 2026 11:55:00 \+0000$/m);
    assert.match(out, /^Labels: {11}app=web$/m);
    assert.match(out, /^Annotations: {6}<none>$/m);
    assert.match(
      out,
      /^Containers:\n {2}app:\n {4}Container ID: {3}containerd:\/\/abc\n {4}Image: {10}busybox\n/m,
    );
    assert.match(out, /^ {4}State: {10}Running\n {6}Started: {6}Thu, 01 Jan 2026 11:55:10 \+0000$/m);
    assert.match(out, /^Conditions:\n {2}Type {11}Status\n {2}Ready {10}True\nVolumes: {9}<none>$/m);
    assert.match(
      out,
      /^Events:\n {2}Type {4}Reason {3}Age {4}From {5}Message\n {2}---- {4}------ {3}---- {3}---- {5}-------\n {2}Normal {2}Started {2}4m50s {2}kubelet {2}Started container app\n$/m,
    );
  });

  it("tabwriter: a column's width is set by its block of lines", () => {
    assert.equal(tabwrite('a\tb\nlonger\tc\nnone\n', TABLE), 'a        b\nlonger   c\nnone\n');
  });
});
