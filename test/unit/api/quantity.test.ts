/**
 * The one quantity module against the facts of upstream's resource.Quantity: the parse table, the
 * invalid forms and the canonical strings of apimachinery's quantity_test.go, and the values the
 * kubelet reads off quantities (Value, MilliValue, sums that keep their suffix).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addQuantity,
  approximateValue,
  compareQuantity,
  formatQuantity,
  isZeroQuantity,
  milliQuantity,
  milliValueOf,
  parseQuantity,
  quantityMilliValue,
  quantityOf,
  quantityValue,
  subtractQuantity,
  valueOf,
  type QuantityFormat,
  type ResourceQuantity,
} from '../../../src/api/quantity.js';

/** Upstream's decQuantity(i, exponent, format): i × 10^exponent. */
function dec(i: bigint | number, exponent: number, format: QuantityFormat): ResourceQuantity {
  const scale = exponent + 9;
  const nano = scale >= 0 ? BigInt(i) * 10n ** BigInt(scale) : BigInt(i) / 10n ** BigInt(-scale);
  return { nano, format };
}

const MAX_ALLOWED: ResourceQuantity = { nano: ((1n << 63n) - 1n) * 1_000_000_000n, format: 'BinarySI' };
const Ki = 1024n;

describe('parseQuantity: upstream TestQuantityParse', () => {
  const table: [string, ResourceQuantity][] = [
    ['0', dec(0, 0, 'DecimalSI')],
    ['0n', dec(0, 0, 'DecimalSI')],
    ['0u', dec(0, 0, 'DecimalSI')],
    ['0m', dec(0, 0, 'DecimalSI')],
    ['0Ki', dec(0, 0, 'BinarySI')],
    ['0k', dec(0, 0, 'DecimalSI')],
    ['0Mi', dec(0, 0, 'BinarySI')],
    ['0M', dec(0, 0, 'DecimalSI')],
    ['0Gi', dec(0, 0, 'BinarySI')],
    ['0G', dec(0, 0, 'DecimalSI')],
    ['0Ti', dec(0, 0, 'BinarySI')],
    ['0T', dec(0, 0, 'DecimalSI')],
    ['1', dec(1, 0, 'DecimalSI')],
    ['1Ki', dec(Ki, 0, 'BinarySI')],
    ['8Ki', dec(8n * Ki, 0, 'BinarySI')],
    ['7Mi', dec(7n * Ki ** 2n, 0, 'BinarySI')],
    ['6Gi', dec(6n * Ki ** 3n, 0, 'BinarySI')],
    ['5Ti', dec(5n * Ki ** 4n, 0, 'BinarySI')],
    ['4Pi', dec(4n * Ki ** 5n, 0, 'BinarySI')],
    ['3Ei', dec(3n * Ki ** 6n, 0, 'BinarySI')],
    ['10Ti', dec(10n * Ki ** 4n, 0, 'BinarySI')],
    ['100Ti', dec(100n * Ki ** 4n, 0, 'BinarySI')],
    ['5n', dec(5, -9, 'DecimalSI')],
    ['4u', dec(4, -6, 'DecimalSI')],
    ['3m', dec(3, -3, 'DecimalSI')],
    ['9', dec(9, 0, 'DecimalSI')],
    ['8k', dec(8, 3, 'DecimalSI')],
    ['50k', dec(5, 4, 'DecimalSI')],
    ['7M', dec(7, 6, 'DecimalSI')],
    ['6G', dec(6, 9, 'DecimalSI')],
    ['5T', dec(5, 12, 'DecimalSI')],
    ['40T', dec(4, 13, 'DecimalSI')],
    ['300T', dec(3, 14, 'DecimalSI')],
    ['2P', dec(2, 15, 'DecimalSI')],
    ['1E', dec(1, 18, 'DecimalSI')],
    ['1E-3', dec(1, -3, 'DecimalExponent')],
    ['1e3', dec(1, 3, 'DecimalExponent')],
    ['1E6', dec(1, 6, 'DecimalExponent')],
    ['1e9', dec(1, 9, 'DecimalExponent')],
    ['1E12', dec(1, 12, 'DecimalExponent')],
    ['1e15', dec(1, 15, 'DecimalExponent')],
    ['1E18', dec(1, 18, 'DecimalExponent')],
    ['1e14', dec(1, 14, 'DecimalExponent')],
    ['1e13', dec(1, 13, 'DecimalExponent')],
    ['100.035k', dec(100035, 0, 'DecimalSI')],
    ['0.001', dec(1, -3, 'DecimalSI')],
    ['0.0005k', dec(5, -1, 'DecimalSI')],
    ['0.005', dec(5, -3, 'DecimalSI')],
    ['0.05', dec(5, -2, 'DecimalSI')],
    ['0.5', dec(5, -1, 'DecimalSI')],
    ['0.00050k', dec(5, -1, 'DecimalSI')],
    ['0.00500', dec(5, -3, 'DecimalSI')],
    ['0.05000', dec(5, -2, 'DecimalSI')],
    ['0.50000', dec(5, -1, 'DecimalSI')],
    ['0.5e0', dec(5, -1, 'DecimalExponent')],
    ['0.5e-1', dec(5, -2, 'DecimalExponent')],
    ['0.5e-2', dec(5, -3, 'DecimalExponent')],
    ['10.035M', dec(10035, 3, 'DecimalSI')],
    ['1.2e3', dec(12, 2, 'DecimalExponent')],
    ['1.3E+6', dec(13, 5, 'DecimalExponent')],
    ['1.40e9', dec(14, 8, 'DecimalExponent')],
    ['1.53E12', dec(153, 10, 'DecimalExponent')],
    ['1.6e15', dec(16, 14, 'DecimalExponent')],
    ['1.7E18', dec(17, 17, 'DecimalExponent')],
    ['9.01', dec(901, -2, 'DecimalSI')],
    ['8.1k', dec(81, 2, 'DecimalSI')],
    ['7.123456M', dec(7123456, 0, 'DecimalSI')],
    ['6.987654321G', dec(6987654321, 0, 'DecimalSI')],
    ['5.444T', dec(5444, 9, 'DecimalSI')],
    ['40.1T', dec(401, 11, 'DecimalSI')],
    ['300.2T', dec(3002, 11, 'DecimalSI')],
    ['2.5P', dec(25, 14, 'DecimalSI')],
    ['1.01E', dec(101, 16, 'DecimalSI')],
    // Rounded up to nano precision, or capped.
    ['3.001n', dec(4, -9, 'DecimalSI')],
    ['1.1E-9', dec(2, -9, 'DecimalExponent')],
    ['0.0000000001', dec(1, -9, 'DecimalSI')],
    ['0.0000000005', dec(1, -9, 'DecimalSI')],
    ['0.00000000050', dec(1, -9, 'DecimalSI')],
    ['0.5e-9', dec(1, -9, 'DecimalExponent')],
    ['0.9n', dec(1, -9, 'DecimalSI')],
    ['0.00000012345', dec(124, -9, 'DecimalSI')],
    ['0.00000012354', dec(124, -9, 'DecimalSI')],
    ['9Ei', MAX_ALLOWED],
    ['9223372036854775807Ki', MAX_ALLOWED],
    ['12E', dec(12, 18, 'DecimalSI')],
    // Fractional binary amounts.
    ['100.035Ki', dec(10243584, -2, 'BinarySI')],
    ['0.5Mi', dec(512n * Ki, 0, 'BinarySI')],
    ['0.05Gi', dec(536870912, -1, 'BinarySI')],
    ['0.025Ti', dec(274877906944, -1, 'BinarySI')],
    // Odd but valid.
    ['0.000000000001Ki', dec(2, -9, 'DecimalSI')],
    ['.001', dec(1, -3, 'DecimalSI')],
    ['.0001k', dec(100, -3, 'DecimalSI')],
    ['1.', dec(1, 0, 'DecimalSI')],
    ['1.G', dec(1, 9, 'DecimalSI')],
  ];

  it('reads each form to its exact value and format', () => {
    for (const [input, expected] of table) assert.deepEqual(parseQuantity(input), expected, input);
  });

  it('reads each form with a minus sign as the negative value, same format', () => {
    for (const [input, expected] of table) {
      assert.deepEqual(parseQuantity(`-${input}`), { nano: -expected.nano, format: expected.format }, input);
    }
  });

  it('reads each form with an explicit plus sign as the same value', () => {
    for (const [input, expected] of table) assert.deepEqual(parseQuantity(`+${input}`), expected, input);
  });

  it('refuses the forms upstream refuses', () => {
    const invalid = [
      '',
      '1.1.M',
      '1+1.0M',
      '0.1mi',
      '0.1am',
      'aoeu',
      '.5i',
      '1i',
      '-3.01i',
      '-3.01e-',
      '1e4294967297',
      ' 1',
      '1 ',
    ];
    for (const text of invalid) assert.throws(() => parseQuantity(text), { code: 'INVALID_QUANTITY' }, text);
  });

  it('accepts exponents up to int32 only', () => {
    assert.equal(parseQuantity('1e-2147483647').nano, 1n, 'rounds up to 1n');
    assert.throws(() => parseQuantity('1e-2147483648'), { code: 'INVALID_QUANTITY' });
    assert.throws(() => parseQuantity('1E4294967297'), { code: 'INVALID_QUANTITY' });
  });

  it('reads JSON numbers as their text', () => {
    assert.deepEqual(parseQuantity(250), dec(250, 0, 'DecimalSI'));
    assert.deepEqual(parseQuantity(0.5), dec(5, -1, 'DecimalSI'));
    assert.deepEqual(parseQuantity(1e21), dec(1, 21, 'DecimalExponent'));
    assert.throws(() => parseQuantity(Number.NaN), { code: 'INVALID_QUANTITY' });
  });

  it('parses decimal, binary and exponent forms exactly', () => {
    assert.equal(parseQuantity('1').nano, 1_000_000_000n);
    assert.equal(parseQuantity('100m').nano, 100_000_000n);
    assert.equal(parseQuantity('0.1').nano, 100_000_000n);
    assert.equal(parseQuantity('1Ki').nano, 1024n * 1_000_000_000n);
    assert.equal(parseQuantity('1.5Gi').nano, 1610612736n * 1_000_000_000n);
    assert.equal(parseQuantity('1e3').nano, 1000n * 1_000_000_000n);
    assert.equal(parseQuantity('2k').nano, 2000n * 1_000_000_000n);
    assert.equal(parseQuantity(250).nano, 250n * 1_000_000_000n);
    assert.equal(parseQuantity('1n').nano, 1n);
  });

  it('says what is wrong, as the API server does', () => {
    assert.throws(() => parseQuantity('abc'), /invalid quantity/);
    assert.throws(() => parseQuantity('abc'), /regular expression/);
    assert.throws(() => parseQuantity('1Zi'), /invalid quantity suffix/);
    assert.throws(() => parseQuantity('10MB'), /suffix/);
    assert.throws(() => parseQuantity(''), /invalid quantity/);
    assert.throws(() => parseQuantity(''), /regular expression/);
    assert.throws(() => parseQuantity('12 apples'), /quantities must match/);
    assert.throws(() => parseQuantity('1mi'), /quantities must match/);
  });
});

describe('formatQuantity: upstream TestQuantityString', () => {
  // [quantity, canonical, an alternate text that parses to the same canonical]
  const table: [ResourceQuantity, string, string][] = [
    [dec(Ki ** 3n, 0, 'BinarySI'), '1Gi', '1024Mi'],
    [dec(300n * Ki ** 2n, 0, 'BinarySI'), '300Mi', '307200Ki'],
    [dec(6n * Ki, 0, 'BinarySI'), '6Ki', ''],
    [dec(1001n * Ki ** 3n, 0, 'BinarySI'), '1001Gi', '1025024Mi'],
    [dec(Ki ** 4n, 0, 'BinarySI'), '1Ti', '1024Gi'],
    [dec(5, 0, 'BinarySI'), '5', '5000m'],
    [dec(500, -3, 'BinarySI'), '500m', '0.5'],
    [dec(1, 9, 'DecimalSI'), '1G', '1000M'],
    [dec(1000, 6, 'DecimalSI'), '1G', '0.001T'],
    [dec(1000000, 3, 'DecimalSI'), '1G', ''],
    [dec(1000000000, 0, 'DecimalSI'), '1G', ''],
    [dec(1, -3, 'DecimalSI'), '1m', '1000u'],
    [dec(80, -3, 'DecimalSI'), '80m', ''],
    [dec(1080, -3, 'DecimalSI'), '1080m', '1.08'],
    [dec(108, -2, 'DecimalSI'), '1080m', '1080000000n'],
    [dec(10800, -4, 'DecimalSI'), '1080m', ''],
    [dec(300, 6, 'DecimalSI'), '300M', ''],
    [dec(1, 12, 'DecimalSI'), '1T', ''],
    [dec(1, 18, 'DecimalSI'), '1E', ''],
    [dec(1, 21, 'DecimalSI'), '1e21', '1000E'],
    [dec(5, 21, 'DecimalSI'), '5e21', '5000E'],
    [dec(1, 24, 'DecimalSI'), '1e24', '1000000E'],
    [dec(1, 70, 'BinarySI'), '10e69', ''],
    [dec(2, 70, 'BinarySI'), '20e69', ''],
    [dec(1, 72, 'BinarySI'), '1e72', ''],
    [dec(1234567, 6, 'DecimalSI'), '1234567M', ''],
    [dec(1234567, -3, 'BinarySI'), '1234567m', ''],
    [dec(3, 3, 'DecimalSI'), '3k', ''],
    [dec(1025, 0, 'BinarySI'), '1025', ''],
    [dec(0, 0, 'DecimalSI'), '0', ''],
    [dec(0, 0, 'BinarySI'), '0', ''],
    [dec(1, 9, 'DecimalExponent'), '1e9', '.001e12'],
    [dec(1, -3, 'DecimalExponent'), '1e-3', '0.001e0'],
    [dec(1, -9, 'DecimalExponent'), '1e-9', '1000e-12'],
    [dec(80, -3, 'DecimalExponent'), '80e-3', ''],
    [dec(300, 6, 'DecimalExponent'), '300e6', ''],
    [dec(1, 12, 'DecimalExponent'), '1e12', ''],
    [dec(1, 3, 'DecimalExponent'), '1e3', ''],
    [dec(3, 3, 'DecimalExponent'), '3e3', ''],
    [dec(3, 3, 'DecimalSI'), '3k', ''],
    [dec(0, 0, 'DecimalExponent'), '0', '00'],
    [dec(1, -9, 'DecimalSI'), '1n', ''],
    [dec(80, -9, 'DecimalSI'), '80n', ''],
    [dec(1080, -9, 'DecimalSI'), '1080n', ''],
    [dec(108, -8, 'DecimalSI'), '1080n', ''],
    [dec(10800, -10, 'DecimalSI'), '1080n', ''],
    [dec(1, -6, 'DecimalSI'), '1u', ''],
    [dec(80, -6, 'DecimalSI'), '80u', ''],
    [dec(1080, -6, 'DecimalSI'), '1080u', ''],
  ];

  it('writes each quantity in its canonical form, negatives with a sign', () => {
    for (const [q, canonical] of table) {
      assert.equal(formatQuantity(q), canonical, canonical);
      if (q.nano !== 0n) assert.equal(formatQuantity({ ...q, nano: -q.nano }), `-${canonical}`);
    }
  });

  it('parses the canonical form and the alternate back to the canonical form', () => {
    for (const [q, canonical, alternate] of table) {
      assert.equal(formatQuantity(parseQuantity(canonical)), canonical);
      assert.equal(compareQuantity(parseQuantity(canonical), q), 0, canonical);
      if (alternate) assert.equal(formatQuantity(parseQuantity(alternate)), canonical, alternate);
    }
  });

  it('writes a BinarySI value past Ei in full decimal digits (TestBinarySIPastEiArithmeticRoundTrip)', () => {
    const q = quantityOf(1n << 70n, 'BinarySI');
    assert.equal(formatQuantity(q), '1180591620717411303424');
    assert.equal(compareQuantity(parseQuantity(formatQuantity(q)), q), 0);
  });

  it('writes a BinarySI value that is no multiple of 1024 as its digits (TestBinarySIZeroExponentString)', () => {
    assert.equal(formatQuantity(quantityOf(2000, 'BinarySI')), '2000');
    assert.equal(formatQuantity(quantityOf(-2000, 'BinarySI')), '-2000');
  });

  it('parses then writes as upstream TestQuantityParseEmit', () => {
    const table: [string, string][] = [
      ['1Ki', '1Ki'],
      ['1Mi', '1Mi'],
      ['1Gi', '1Gi'],
      ['1024Mi', '1Gi'],
      ['1000M', '1G'],
      ['.001Ki', '1024m'],
      ['.000001Ki', '1024u'],
      ['.000000001Ki', '1024n'],
      ['.000000000001Ki', '2n'],
    ];
    for (const [input, expected] of table) {
      assert.equal(formatQuantity(parseQuantity(input)), expected, input);
      assert.equal(formatQuantity(parseQuantity(`-${input}`)), `-${expected}`, input);
    }
  });

  it('writes zero as 0 whatever its format (TestQuantityParseZero, TestQuantityCanocicalizeZero)', () => {
    assert.equal(formatQuantity(parseQuantity('0')), '0');
    assert.equal(formatQuantity(subtractQuantity(parseQuantity('1000m'), parseQuantity('1'))), '0');
  });

  it('negates exactly (TestQuantityNeg)', () => {
    assert.equal(formatQuantity(dec(-901, -2, 'DecimalSI')), '-9010m');
  });
});

describe('quantity arithmetic and comparison', () => {
  it('keeps the suffix when a zero is added or taken away (TestQuantityAddZeroPreservesSuffix)', () => {
    const zero = parseQuantity('0');
    for (const text of ['100m', '1Gi']) {
      const value = parseQuantity(text);
      assert.equal(formatQuantity(addQuantity(value, zero)), text);
      assert.equal(formatQuantity(addQuantity(zero, value)), text);
      assert.equal(formatQuantity(subtractQuantity(value, zero)), text);
      assert.equal(formatQuantity(subtractQuantity(zero, value)), `-${text}`);
    }
  });

  it('compares exactly across suffixes (TestQuantityCmp)', () => {
    const cases: [string, string, number][] = [
      ['0', '0', 0],
      ['100m', '50m', 1],
      ['50m', '100m', -1],
      ['10000T', '100Gi', 1],
      ['1Ki', '1024', 0],
      ['0.5', '500m', 0],
    ];
    for (const [x, y, expected] of cases)
      assert.equal(compareQuantity(parseQuantity(x), parseQuantity(y)), expected, `${x} vs ${y}`);
  });

  it('keeps the format of the minuend through a subtraction', () => {
    const memory = parseQuantity('24684092Ki');
    assert.equal(memory.format, 'BinarySI');
    assert.equal(formatQuantity(subtractQuantity(memory, parseQuantity('100Mi'))), '24581692Ki');
    assert.equal(formatQuantity(subtractQuantity(parseQuantity('2'), parseQuantity('100m'))), '1900m');
    assert.equal(formatQuantity(subtractQuantity(parseQuantity('4'), parseQuantity('1'))), '3');
  });

  it('rounds Value and MilliValue away from zero', () => {
    assert.equal(valueOf(parseQuantity('9.01')), 10n);
    assert.equal(valueOf(parseQuantity('-9.01')), -10n);
    assert.equal(milliValueOf(parseQuantity('1500u')), 2n);
    assert.equal(milliValueOf(parseQuantity('-1500u')), -2n);
    assert.equal(valueOf(parseQuantity('1n')), 1n);
  });
});

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
});

describe('values of API quantity fields', () => {
  it('CPU quantities in millicores', () => {
    assert.equal(quantityMilliValue('100m'), 100);
    assert.equal(quantityMilliValue('1'), 1000);
    assert.equal(quantityMilliValue('0.5'), 500);
    assert.equal(quantityMilliValue('.25'), 250);
    assert.equal(quantityMilliValue(2), 2000);
    assert.equal(quantityMilliValue('1500u'), 2, 'rounded up, as Quantity.MilliValue does');
    assert.equal(quantityMilliValue('2e-3'), 2);
  });

  it('memory quantities in bytes: binary and decimal suffixes, exponents', () => {
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

  it('zero and invalid quantities', () => {
    assert.equal(isZeroQuantity('0'), true);
    assert.equal(isZeroQuantity('0Mi'), true);
    assert.equal(isZeroQuantity(undefined), true);
    assert.equal(isZeroQuantity('1m'), false);
    assert.throws(() => quantityValue('12 apples'), /quantities must match/);
    assert.throws(() => quantityValue('1mi'), /quantities must match/);
  });

  it('settings read as plain numbers: binary, decimal, milli and exponent forms', () => {
    const number = (text: string) => approximateValue(parseQuantity(text));
    assert.equal(number('10Mi'), 10 * 1024 * 1024);
    assert.equal(number('1Gi'), 2 ** 30);
    assert.equal(number('1.5Gi'), 1.5 * 2 ** 30);
    assert.equal(number('100M'), 100e6);
    assert.equal(number('500m'), 0.5);
    assert.equal(number('1e3'), 1000);
    assert.equal(number('42'), 42);
    assert.equal(number('1k'), 1000);
  });
});
