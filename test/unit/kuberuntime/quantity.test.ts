import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isZeroQuantity, quantityMilliValue, quantityValue } from '../../../src/kuberuntime/quantity.js';

test('CPU quantities in millicores', () => {
  assert.equal(quantityMilliValue('100m'), 100);
  assert.equal(quantityMilliValue('1'), 1000);
  assert.equal(quantityMilliValue('0.5'), 500);
  assert.equal(quantityMilliValue('.25'), 250);
  assert.equal(quantityMilliValue(2), 2000);
  assert.equal(quantityMilliValue('1500u'), 2, 'rounded up, as Quantity.MilliValue does');
  assert.equal(quantityMilliValue('2e-3'), 2);
});

test('memory quantities in bytes: binary and decimal suffixes, exponents', () => {
  assert.equal(quantityValue('128Mi'), 128 * 1024 * 1024);
  assert.equal(quantityValue('1Gi'), 1024 ** 3);
  assert.equal(quantityValue('1G'), 1e9);
  assert.equal(quantityValue('1k'), 1000);
  assert.equal(quantityValue('1Ki'), 1024);
  assert.equal(quantityValue('1e3'), 1000);
  assert.equal(quantityValue('1.5Gi'), 1.5 * 1024 ** 3);
  assert.equal(quantityValue('100m'), 1, 'rounded up to a whole byte');
  assert.equal(quantityValue(undefined), 0);
});

test('zero and invalid quantities', () => {
  assert.equal(isZeroQuantity('0'), true);
  assert.equal(isZeroQuantity('0Mi'), true);
  assert.equal(isZeroQuantity(undefined), true);
  assert.equal(isZeroQuantity('1m'), false);
  assert.throws(() => quantityValue('12 apples'), /quantities must match/);
  assert.throws(() => quantityValue('1mi'), /quantities must match/);
});
