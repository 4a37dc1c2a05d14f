import assert from 'node:assert/strict';
import { test } from 'node:test';

import { LateBound } from '../../../src/cmd/late-bound.js';

test('LateBound: a read before the set names what is missing; the value once set, even undefined', () => {
  const ref = new LateBound<number | undefined>('the answer');
  assert.throws(() => ref.get(), /the answer is used before it exists/);
  ref.set(undefined);
  assert.equal(ref.get(), undefined);
});

test('LateBound: a second set is a wiring bug and throws', () => {
  const ref = new LateBound<number>('the answer');
  ref.set(42);
  assert.throws(() => ref.set(43), /the answer is already bound/);
  assert.equal(ref.get(), 42);
});
