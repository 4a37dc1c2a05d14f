/** Upstream's Test_migrateConfig and Test_groupByPriority cases. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import {
  groupByPriority,
  migrateConfig,
  periodRequestedMs,
} from '../../../src/nodeshutdown/priority-groups.js';

const SYSTEM_CRITICAL = 2_000_000_000;
const HIGHEST_USER_DEFINABLE = 1_000_000_000;

function makePod(name: string, priority?: number): Pod {
  return {
    metadata: { name, namespace: 'default', uid: name },
    spec: { containers: [], ...(priority === undefined ? {} : { priority }) },
  } as Pod;
}

const names = (pods: Pod[]) => pods.map((p) => p.metadata.name);

describe('migrateConfig', () => {
  test('both shutdownGracePeriodRequested and shutdownGracePeriodCriticalPods', () => {
    assert.deepEqual(migrateConfig(300_000, 120_000), [
      { priority: 0, shutdownGracePeriodSeconds: 180 },
      { priority: SYSTEM_CRITICAL, shutdownGracePeriodSeconds: 120 },
    ]);
  });
  test('only shutdownGracePeriodRequested', () => {
    assert.deepEqual(migrateConfig(100_000, 0), [
      { priority: 0, shutdownGracePeriodSeconds: 100 },
      { priority: SYSTEM_CRITICAL, shutdownGracePeriodSeconds: 0 },
    ]);
  });
  test('empty configuration', () => assert.deepEqual(migrateConfig(0, 0), []));
  test('wrong configuration', () => assert.deepEqual(migrateConfig(1000, 100_000), []));
});

describe('groupByPriority', () => {
  test('migrate config', () => {
    const groups = groupByPriority(migrateConfig(300_000, 120_000), [
      makePod('normal-pod', 0),
      makePod('highest-user-definable-pod', HIGHEST_USER_DEFINABLE),
      makePod('critical-pod', SYSTEM_CRITICAL),
    ]);
    assert.deepEqual(
      groups.map((g) => [g.priority, g.shutdownGracePeriodSeconds, names(g.pods)]),
      [
        [0, 180, ['normal-pod', 'highest-user-definable-pod']],
        [SYSTEM_CRITICAL, 120, ['critical-pod']],
      ],
    );
  });

  test('pod priority', () => {
    const groups = groupByPriority(
      [
        { priority: 1, shutdownGracePeriodSeconds: 10 },
        { priority: 2, shutdownGracePeriodSeconds: 20 },
        { priority: 3, shutdownGracePeriodSeconds: 30 },
        { priority: 4, shutdownGracePeriodSeconds: 40 },
      ],
      [0, 1, 2, 3, 4, 5].map((p) => makePod(`pod-${p}`, p)),
    );
    assert.deepEqual(
      groups.map((g) => [g.priority, g.shutdownGracePeriodSeconds, names(g.pods)]),
      [
        [1, 10, ['pod-0', 'pod-1']],
        [2, 20, ['pod-2']],
        [3, 30, ['pod-3']],
        [4, 40, ['pod-4', 'pod-5']],
      ],
    );
  });

  test('a pod between two groups goes to the lower one; no priority counts as 0', () => {
    const groups = groupByPriority(
      [
        { priority: -10, shutdownGracePeriodSeconds: 1 },
        { priority: 100, shutdownGracePeriodSeconds: 2 },
        { priority: 1000, shutdownGracePeriodSeconds: 3 },
      ],
      [makePod('none'), makePod('p500', 500), makePod('p1000', 1000), makePod('p-20', -20)],
    );
    assert.deepEqual(
      groups.map((g) => names(g.pods)),
      [['none', 'p-20'], ['p500'], ['p1000']],
    );
  });

  test('no groups, no pods grouped', () => {
    assert.deepEqual(groupByPriority([], [makePod('a', 1)]), []);
  });
});

test('periodRequested sums every group', () => {
  assert.equal(periodRequestedMs(migrateConfig(300_000, 120_000)), 300_000);
  assert.equal(
    periodRequestedMs([
      { priority: 1, shutdownGracePeriodSeconds: 10 },
      { priority: 2, shutdownGracePeriodSeconds: 20 },
    ]),
    30_000,
  );
});
