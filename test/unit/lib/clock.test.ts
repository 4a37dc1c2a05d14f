import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { monotonicMs } from '../../../src/lib/clock.js';

describe('monotonicMs', () => {
  it('measures a sleep in milliseconds and never goes back', async () => {
    const t0 = monotonicMs();
    await new Promise((resolve) => setTimeout(resolve, 30));
    const elapsed = monotonicMs() - t0;
    assert.ok(elapsed >= 29 && elapsed < 2000, `elapsed ${elapsed}`);
    let last = monotonicMs();
    for (let i = 0; i < 1000; i++) {
      const now = monotonicMs();
      assert.ok(now >= last);
      last = now;
    }
  });
});
