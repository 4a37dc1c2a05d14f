/**
 * The full status differential (`npm run differential`): every scenario of test/differential at once
 * on one kubelet, each pod's whole status and events against upstream v1.30's. The short form in
 * test/integration/differential-short.test.ts runs a third of them in `npm test`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatReport, runDifferential } from './run-scenarios.js';

/** DIFFERENTIAL_ONLY=<regexp> runs the scenarios whose names match, while working on them. */
const only = process.env.DIFFERENTIAL_ONLY ? new RegExp(process.env.DIFFERENTIAL_ONLY) : undefined;

test(
  'status differential: every scenario matches upstream v1.30 (full form)',
  { timeout: 600_000 },
  async () => {
    const results = await runDifferential((s) => only === undefined || only.test(s.name));
    const report = formatReport(results);
    console.log(report);
    const failed = results.filter((r) => !r.passed && !r.scenario.knownDifferent);
    assert.equal(failed.length, 0, `scenarios differing from upstream:\n${report}`);
  },
);
