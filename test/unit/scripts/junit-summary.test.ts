import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  formatDiff,
  formatSummary,
  oneSidedFailures,
  parseJUnit,
} from '../../../scripts/conformance/junit-summary.js';

// The shape ginkgo v2.9 writes with --junit-report: suite nodes and specs as testcases, a failure's
// message XML-escaped in an attribute, skipped specs with an empty <skipped>.
const report = (specs: string): string => `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="0" errors="0" failures="1" time="100">
  <testsuite name="Kubernetes e2e suite" package="/opt" tests="4" skipped="1" failures="1" time="100">
    <properties><property name="SuiteSucceeded" value="false"></property></properties>
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1"></testcase>
${specs}
  </testsuite>
</testsuites>`;

const passed = (name: string): string =>
  `    <testcase name="[It] ${name}" classname="Kubernetes e2e suite" status="passed" time="3"><system-err>log</system-err></testcase>`;
const failed = (name: string, message: string): string =>
  `    <testcase name="[It] ${name}" classname="Kubernetes e2e suite" status="failed" time="9">
      <failure message="${message}" type="failed">[FAILED] ${message}&#xA;In [It] at: x.go:1</failure>
      <system-err>log</system-err>
    </testcase>`;
const skipped = (name: string): string =>
  `    <testcase name="[It] ${name}" classname="Kubernetes e2e suite" status="skipped" time="0"><skipped message="skipped"></skipped></testcase>`;

describe('junit-summary', () => {
  test('reads each spec, its state, and the first line of a failure, unescaped', () => {
    const results = parseJUnit(
      report(
        [
          passed('[sig-node] Pods should get a host IP [NodeConformance]'),
          failed(
            '[sig-node] Pods should support pod readiness gates [NodeConformance]',
            '&#xA;  Timed out after 120s.&#xA;Expected &lt;bool&gt;: false &amp; &quot;x&quot;',
          ),
          skipped('[sig-storage] EmptyDir volumes should support (root,0644,tmpfs)'),
        ].join('\n'),
      ),
    );
    assert.deepEqual(results, [
      { name: '[SynchronizedBeforeSuite]', state: 'passed' },
      { name: '[sig-node] Pods should get a host IP [NodeConformance]', state: 'passed' },
      {
        name: '[sig-node] Pods should support pod readiness gates [NodeConformance]',
        state: 'failed',
        firstLine: 'Timed out after 120s.',
      },
      { name: '[sig-storage] EmptyDir volumes should support (root,0644,tmpfs)', state: 'skipped' },
    ]);
    const text = formatSummary('tskubelet', results);
    assert.match(text, /^tskubelet: 2 passed, 1 failed, 1 skipped \(4 in the report\)\n/);
    assert.match(
      text,
      /FAIL \[sig-node\] Pods should support pod readiness gates.*\n +Timed out after 120s\.\n$/,
    );
  });

  test('a failure without a message attribute takes its body; a timed-out spec counts as failed', () => {
    const results = parseJUnit(
      report(
        [
          `<testcase name="[It] a" status="failed"><failure type="failed">first&#xA;second</failure></testcase>`,
          `<testcase name="[It] b" status="timedout"></testcase>`,
        ].join('\n'),
      ),
    );
    assert.deepEqual(results.slice(1), [
      { name: 'a', state: 'failed', firstLine: 'first' },
      { name: 'b', state: 'failed', firstLine: '(timedout, no message)' },
    ]);
  });

  test('lists the specs that fail on one side and pass on the other, not those failing on both or missing', () => {
    const a = parseJUnit(
      report(
        [failed('one', 'a broke'), failed('both', 'x'), passed('two'), failed('only-in-a', 'y')].join('\n'),
      ),
    );
    const b = parseJUnit(
      report([passed('one'), failed('both', 'x'), failed('two', 'b broke'), skipped('only-in-a')].join('\n')),
    );
    assert.deepEqual(oneSidedFailures(a, b), {
      onlyA: [{ name: 'one', firstLine: 'a broke' }],
      onlyB: [{ name: 'two', firstLine: 'b broke' }],
    });
    assert.equal(
      formatDiff('tskubelet', a, 'upstream', b),
      [
        'fail on tskubelet, pass on upstream: 1',
        '  FAIL one',
        '       a broke',
        'fail on upstream, pass on tskubelet: 1',
        '  FAIL two',
        '       b broke',
        '',
      ].join('\n'),
    );
  });
});
