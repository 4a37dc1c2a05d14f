import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { parseAllYaml11Documents, parseYaml11 } from '../../../src/lib/yaml11.js';

describe('YAML 1.1 as go-yaml v2 reads it', () => {
  test('octal numbers: 0400 is 256, 0644 is 420; quoted stays a string', () => {
    assert.deepEqual(parseYaml11('a: 0400\nb: 0644\nc: "0644"\nd: 0x1F\ne: 1_000\n'), {
      a: 256,
      b: 420,
      c: '0644',
      d: 31,
      e: 1000,
    });
  });

  test('the 1.1 booleans', () => {
    const doc = parseYaml11('[yes, no, on, off, y, n, Yes, OFF, true, False]');
    assert.deepEqual(doc, [true, false, true, false, true, false, true, false, true, false]);
  });

  test('sexagesimal numbers and timestamps stay strings, as go-yaml v2 keeps them for untyped values', () => {
    assert.deepEqual(parseYaml11('a: 1:20\nb: 2024-01-02\nc: 2024-01-02T03:04:05Z\n'), {
      a: '1:20',
      b: '2024-01-02',
      c: '2024-01-02T03:04:05Z',
    });
  });

  test('merge keys work; every document of a stream is returned', () => {
    assert.deepEqual(parseYaml11('base: &b {x: 1}\nother:\n  <<: *b\n  z: 2\n'), {
      base: { x: 1 },
      other: { x: 1, z: 2 },
    });
    assert.equal(parseAllYaml11Documents('a: 1\n---\nb: 2\n').length, 2);
    assert.equal(parseAllYaml11Documents('').length, 0);
  });
});
