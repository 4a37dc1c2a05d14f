/**
 * The status differential's short form: a representative third of test/differential's scenarios
 * (every area), each pod's whole status and events against upstream v1.30's. `npm run differential`
 * runs them all.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatReport, runDifferential } from '../differential/run-scenarios.js';

test(
  'status differential: a third of the scenarios match upstream v1.30 (short form)',
  { timeout: 300_000 },
  async () => {
    const results = await runDifferential((s) => s.short === true);
    const report = formatReport(results);
    console.log(report);
    const failed = results.filter((r) => !r.passed && !r.scenario.knownDifferent);
    assert.equal(failed.length, 0, `scenarios differing from upstream:\n${report}`);
  },
);
