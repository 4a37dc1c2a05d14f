import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BoundedMap } from '../../../src/lib/bounded-map.js';

test('past maxEntries the oldest set goes, and setting a key again makes it the newest', () => {
  const m = new BoundedMap<string, number>(2);
  m.set('a', 1);
  m.set('b', 2);
  m.set('a', 3);
  m.set('c', 4);
  assert.equal(m.size, 2);
  assert.equal(m.has('b'), false);
  assert.equal(m.get('a'), 3);
  assert.equal(m.get('c'), 4);
  assert.equal(m.delete('a'), true);
  assert.equal(m.size, 1);
});
