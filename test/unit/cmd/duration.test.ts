import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { formatGoDuration, parseGoDurationMs } from '../../../src/lib/go-duration.js';
import { isPercentage } from '../../../src/cmd/kubelet-configuration.js';

describe('parseGoDurationMs', () => {
  const cases: [string, number][] = [
    ['0', 0],
    ['0s', 0],
    ['1m', 60_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['2h', 7_200_000],
    ['2h45m', 9_900_000],
    ['1.5h', 5_400_000],
    ['.5s', 500],
    ['1s500ms', 1500],
    ['-1m', -60_000],
    ['+10s', 10_000],
    ['250us', 0.25],
    ['250µs', 0.25],
    ['1000000ns', 1],
  ];
  for (const [text, ms] of cases) {
    test(`${text} is ${ms} ms`, () => assert.equal(parseGoDurationMs(text), ms));
  }

  test('rejects what Go rejects, with Go wording', () => {
    assert.throws(() => parseGoDurationMs('abc'), { message: 'time: invalid duration "abc"' });
    assert.throws(() => parseGoDurationMs(''), { message: 'time: invalid duration ""' });
    assert.throws(() => parseGoDurationMs('10'), { message: 'time: missing unit in duration "10"' });
    assert.throws(() => parseGoDurationMs('10x'), { message: 'time: unknown unit "x" in duration "10x"' });
    assert.throws(() => parseGoDurationMs('1d'), { message: 'time: unknown unit "d" in duration "1d"' });
    assert.throws(() => parseGoDurationMs('.s'), /invalid duration/);
    assert.throws(() => parseGoDurationMs('1m '), /unknown unit/);
    assert.throws(() => parseGoDurationMs('3000000h'), /invalid duration/);
  });

  test('formats as Go prints durations', () => {
    assert.equal(formatGoDuration(60_000), '1m0s');
    assert.equal(formatGoDuration(90_000), '1m30s');
    assert.equal(formatGoDuration(20_000), '20s');
    assert.equal(formatGoDuration(14_400_000), '4h0m0s');
    assert.equal(formatGoDuration(100), '100ms');
    assert.equal(formatGoDuration(0), '0s');
    assert.equal(parseGoDurationMs(formatGoDuration(9_900_500)), 9_900_500);
  });
});

describe('isPercentage', () => {
  test('percentages', () => {
    assert.ok(isPercentage('10%'));
    assert.ok(isPercentage('7.5%'));
    assert.ok(!isPercentage('10'));
    assert.ok(!isPercentage('%'));
  });
});
