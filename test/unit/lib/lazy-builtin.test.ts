import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as TraceEvents from 'node:trace_events';
import { lazyBuiltin } from '../../../src/lib/lazy-builtin.js';

// Node's list of the built-ins this process has loaded (not in @types/node).
const loaded = (name: string) =>
  (process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes(`NativeModule ${name}`);

describe('lazyBuiltin', () => {
  it('loads the module on the first call, not before, and returns the same one after', async () => {
    // node:trace_events: a built-in that neither node:test nor tsx loads.
    assert.equal(loaded('trace_events'), false, 'the test needs a module nothing has loaded yet');
    const traceEvents = lazyBuiltin<typeof TraceEvents>('node:trace_events');
    assert.equal(loaded('trace_events'), false);
    const first = traceEvents();
    assert.equal(loaded('trace_events'), true);
    assert.equal(first, traceEvents());
    assert.equal(first.createTracing, (await import('node:trace_events')).createTracing);
  });
});
