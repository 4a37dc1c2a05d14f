import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  formatRfc3339NanoFixed,
  parseCriLog,
  parseDockerJsonLog,
  parseRfc3339Nano,
  parserFor,
} from '../../../src/server/cri-log-format.js';

const line = (s: string) => Buffer.from(s);

test('a full CRI line keeps its newline; a partial one loses it', () => {
  const full = parseCriLog(line('2016-10-06T00:17:09.669794202Z stdout F log content 1\n'));
  assert.ok(!('error' in full));
  assert.equal(full.stream, 'stdout');
  assert.equal(full.log.toString(), 'log content 1\n');
  assert.equal(full.timestampNs, 1475713029669794202n);

  const partial = parseCriLog(line('2016-10-06T00:17:09.669794203Z stderr P part of a\n'));
  assert.ok(!('error' in partial));
  assert.equal(partial.stream, 'stderr');
  assert.equal(partial.log.toString(), 'part of a');
});

test('tags after a colon are ignored, for forward compatibility', () => {
  const r = parseCriLog(line('2016-10-06T00:17:09Z stdout P:future:tags x\n'));
  assert.ok(!('error' in r));
  assert.equal(r.log.toString(), 'x');
});

test('an empty full line is a newline', () => {
  const r = parseCriLog(line('2016-10-06T00:17:09Z stdout F \n'));
  assert.ok(!('error' in r));
  assert.equal(r.log.toString(), '\n');
});

test('malformed CRI lines say what is wrong', () => {
  assert.deepEqual(parseCriLog(line('nospace')), { error: 'timestamp is not found' });
  assert.match(
    (parseCriLog(line('yesterday stdout F x')) as { error: string }).error,
    /unexpected timestamp format/,
  );
  assert.deepEqual(parseCriLog(line('2016-10-06T00:17:09Z stdout')), { error: 'stream type is not found' });
  assert.deepEqual(parseCriLog(line('2016-10-06T00:17:09Z stdin F x')), {
    error: 'unexpected stream type "stdin"',
  });
  assert.deepEqual(parseCriLog(line('2016-10-06T00:17:09Z stdout F')), { error: 'log tag is not found' });
});

test('Docker JSON lines parse, and the format is chosen from the first line', () => {
  const json = line('{"log":"content 1\\n","stream":"stderr","time":"2016-10-20T18:39:20.57606443Z"}\n');
  const r = parseDockerJsonLog(json);
  assert.ok(!('error' in r));
  assert.equal(r.stream, 'stderr');
  assert.equal(r.log.toString(), 'content 1\n');
  assert.equal(parserFor(json), parseDockerJsonLog);
  assert.equal(parserFor(line('2016-10-06T00:17:09Z stdout F x\n')), parseCriLog);
  assert.equal(parserFor(line('garbage\n')), undefined);
});

test('timestamps parse with any fraction and offset, and print in upstream fixed form', () => {
  assert.equal(parseRfc3339Nano('1970-01-01T00:00:01Z'), 1_000_000_000n);
  assert.equal(parseRfc3339Nano('1970-01-01T00:00:01.5Z'), 1_500_000_000n);
  assert.equal(parseRfc3339Nano('1970-01-01T01:00:01+01:00'), 1_000_000_000n);
  assert.equal(parseRfc3339Nano('1970-01-01T00:00:01'), undefined);
  // Out of range fields are refused, as Go's time.Parse does, not rolled over.
  for (const bad of [
    '2026-13-45T99:99:99Z',
    '2026-00-01T00:00:00Z',
    '2026-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T00:60:00Z',
    '2026-01-01T00:00:60Z',
    '2026-01-01T00:00:00+24:00',
  ])
    assert.equal(parseRfc3339Nano(bad), undefined, bad);
  assert.equal(parseRfc3339Nano('2024-02-29T00:00:00Z'), BigInt(Date.UTC(2024, 1, 29)) * 1_000_000n);
  assert.equal(parseRfc3339Nano('0050-01-01T00:00:00Z'), -60589296000n * 1_000_000_000n);
  assert.equal(formatRfc3339NanoFixed(1475713029669794202n), '2016-10-06T00:17:09.669794202Z');
  assert.equal(formatRfc3339NanoFixed(1_500_000_000n), '1970-01-01T00:00:01.500000000Z');
});
