import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatQuantity,
  milliQuantity,
  parseResourceQuantity,
  quantityOf,
  subtractQuantity,
} from '../../../src/nodestatus/resource-quantity.js';

describe('resource quantities as the API prints them', () => {
  it('prints BinarySI byte counts with the largest exact binary suffix', () => {
    assert.equal(formatQuantity(quantityOf(24684092 * 1024, 'BinarySI')), '24684092Ki');
    assert.equal(formatQuantity(quantityOf(2 * 1024 ** 3, 'BinarySI')), '2Gi');
    assert.equal(formatQuantity(quantityOf(2 * 1024 ** 2, 'BinarySI')), '2Mi');
    assert.equal(formatQuantity(quantityOf(0, 'BinarySI')), '0');
    // Not a multiple of 1024: the bytes, as upstream prints an allocatable ephemeral-storage.
    assert.equal(formatQuantity(quantityOf(92159999848, 'BinarySI')), '92159999848');
    // Below 1024 BinarySI falls back to DecimalSI.
    assert.equal(formatQuantity(quantityOf(512, 'BinarySI')), '512');
  });

  it('prints DecimalSI with an SI suffix on a multiple-of-three exponent', () => {
    assert.equal(formatQuantity(milliQuantity(2000)), '2');
    assert.equal(formatQuantity(milliQuantity(1900)), '1900m');
    assert.equal(formatQuantity(milliQuantity(1500)), '1500m');
    assert.equal(formatQuantity(quantityOf(110, 'DecimalSI')), '110');
    assert.equal(formatQuantity(quantityOf(1000, 'DecimalSI')), '1k');
    assert.equal(formatQuantity(quantityOf(1200, 'DecimalSI')), '1200');
    assert.equal(formatQuantity(quantityOf(5_000_000, 'DecimalSI')), '5M');
  });

  it('keeps the format of the minuend through a subtraction', () => {
    const memory = parseResourceQuantity('24684092Ki');
    assert.equal(memory.format, 'BinarySI');
    assert.equal(formatQuantity(subtractQuantity(memory, parseResourceQuantity('100Mi'))), '24581692Ki');
    assert.equal(
      formatQuantity(subtractQuantity(parseResourceQuantity('2'), parseResourceQuantity('100m'))),
      '1900m',
    );
    assert.equal(
      formatQuantity(subtractQuantity(parseResourceQuantity('4'), parseResourceQuantity('1'))),
      '3',
    );
  });
});
