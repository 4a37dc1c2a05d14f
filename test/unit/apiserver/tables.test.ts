import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../apiserver/resources.js';
import { humanDuration, tableRequest, toTable } from '../../apiserver/tables.js';

const NOW = Date.parse('2024-01-01T12:00:00Z');
const V1 = { version: 'v1', includeObject: 'None' } as const;

function pod(status: object, extra: { spec?: object; deletionTimestamp?: string } = {}): KubeObject {
  return {
    metadata: {
      name: 'p',
      creationTimestamp: '2024-01-01T11:00:00Z',
      ...(extra.deletionTimestamp ? { deletionTimestamp: extra.deletionTimestamp } : {}),
    },
    spec: { containers: [{ name: 'a' }, { name: 'b' }], ...extra.spec },
    status,
  };
}

function cells(o: KubeObject): unknown[] {
  const t = toTable('pods', [o], V1, {}, NOW) as { rows: { cells: unknown[] }[] };
  return t.rows[0]!.cells;
}

describe('server-side printing', () => {
  it('words ages as duration.HumanDuration does', () => {
    assert.deepEqual(
      [5, 150, 600, 3 * 3600, 3.5 * 3600, 30 * 3600, 50 * 3600, 9 * 86400, 800 * 86400].map((s) =>
        humanDuration(s * 1000),
      ),
      ['5s', '2m30s', '10m', '3h', '3h30m', '30h', '2d2h', '9d', '2y70d'],
    );
  });

  it('prints a pod’s READY, STATUS, RESTARTS and AGE as printPod does', () => {
    assert.deepEqual(cells(pod({ phase: 'Pending' })).slice(0, 5), ['p', '0/2', 'Pending', '0', '60m']);
    const running = pod({
      phase: 'Running',
      containerStatuses: [
        { name: 'a', ready: true, restartCount: 0, state: { running: {} } },
        {
          name: 'b',
          ready: false,
          restartCount: 3,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
          lastState: { terminated: { exitCode: 1, finishedAt: '2024-01-01T11:58:00Z' } },
        },
      ],
    });
    assert.deepEqual(cells(running).slice(1, 4), ['1/2', 'CrashLoopBackOff', '3 (2m ago)']);
    const initWaiting = pod(
      {
        phase: 'Pending',
        initContainerStatuses: [{ name: 'i', state: { waiting: { reason: 'PodInitializing' } } }],
      },
      { spec: { initContainers: [{ name: 'i' }] } },
    );
    assert.equal(cells(initWaiting)[2], 'Init:0/1');
    const exited = pod({
      phase: 'Running',
      containerStatuses: [{ name: 'a', ready: false, state: { terminated: { exitCode: 137 } } }],
    });
    assert.equal(cells(exited)[2], 'ExitCode:137');
    assert.equal(
      cells(pod({ phase: 'Running' }, { deletionTimestamp: '2024-01-01T12:00:30Z' }))[2],
      'Terminating',
    );
  });

  it('answers with a Table only when the Accept header asks for one first', () => {
    const kubectl =
      'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
    assert.deepEqual(tableRequest(kubectl, 'pods', null), { version: 'v1', includeObject: 'Metadata' });
    assert.equal(tableRequest('application/json', 'pods', null), undefined);
    assert.equal(tableRequest(kubectl, 'configmaps', null), undefined);
  });
});
