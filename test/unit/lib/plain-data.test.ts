import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { copyPlainData, plainDataEqual } from '../../../src/lib/plain-data.js';

// Decoded data, and what code builds beside it: undefined fields, -0, NaN, null prototypes.
const plainValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, undefined, 0, -0, NaN, '', 'a', true, false),
    fc.double(),
    fc.string({ maxLength: 4 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'spec', 'status'), tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('copyPlainData', () => {
  it('answers as structuredClone for plain data, sharing no object with the original', () => {
    fc.assert(
      fc.property(plainValue, (value) => {
        const copy = copyPlainData(value);
        assert.ok(isDeepStrictEqual(copy, structuredClone(value)));
        if (typeof value === 'object' && value !== null) assert.notEqual(copy, value);
      }),
    );
  });

  it('keeps fields that are undefined, copies a null-prototype object into a plain one', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { x: 1 });
    const copy = copyPlainData({ a: undefined, bare, list: [1, { b: 2 }] });
    assert.ok(Object.hasOwn(copy, 'a'));
    assert.equal(Object.getPrototypeOf(copy.bare), Object.prototype);
    assert.deepEqual(copy, { a: undefined, bare: { x: 1 }, list: [1, { b: 2 }] });
  });

  it('hands other objects to structuredClone: a Date stays a Date, a function is refused as there', () => {
    const when = new Date(1_700_000_000_000);
    const copy = copyPlainData({ when });
    assert.ok(copy.when instanceof Date);
    assert.notEqual(copy.when, when);
    assert.equal(copy.when.getTime(), when.getTime());
    assert.throws(() => copyPlainData({ f: () => 1 }), { name: 'DataCloneError' });
  });
});

describe('plainDataEqual', () => {
  it('answers as util.isDeepStrictEqual for plain data', () => {
    fc.assert(
      fc.property(plainValue, plainValue, (a, b) => {
        assert.equal(plainDataEqual(a, b), isDeepStrictEqual(a, b));
        assert.equal(plainDataEqual(a, copyPlainData(a)), isDeepStrictEqual(a, structuredClone(a)));
      }),
    );
  });

  it('tells a missing field from an undefined one, -0 from 0, and an array from an object', () => {
    assert.equal(plainDataEqual({ a: undefined }, {}), false);
    assert.equal(plainDataEqual({ a: undefined }, { b: undefined }), false);
    assert.equal(plainDataEqual({ a: 1, b: 2 }, { b: 2, a: 1 }), true);
    assert.equal(plainDataEqual(-0, 0), false);
    assert.equal(plainDataEqual(NaN, NaN), true);
    assert.equal(plainDataEqual([], {}), false);
    assert.equal(plainDataEqual({ 0: 'x' }, ['x']), false);
    assert.equal(plainDataEqual(Object.create(null), {}), false);
  });

  it('hands other objects to util.isDeepStrictEqual', () => {
    assert.equal(plainDataEqual({ t: new Date(5) }, { t: new Date(5) }), true);
    assert.equal(plainDataEqual({ t: new Date(5) }, { t: new Date(6) }), false);
    assert.equal(plainDataEqual(new Map([[1, 2]]), new Map([[1, 3]])), false);
  });
});
