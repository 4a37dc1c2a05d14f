/** --logging-format=json writes component-base's JSON shape; --vmodule raises one component's level. */
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { logger, setLogFormat, setLogSink, setVModule, setVerbosity } from '../../../src/lib/log.js';

const lines: string[] = [];
setLogSink((l) => lines.push(l));
afterEach(() => {
  lines.length = 0;
  setLogFormat('text');
  setVerbosity(0);
  setVModule([]);
});

test('json lines carry ts (Unix milliseconds, a float), msg, v and the key/value pairs', () => {
  setLogFormat('json');
  setVerbosity(2);
  const before = Date.now();
  logger('kubelet').info('Starting tskubelet', { nodeName: 'node-1', pods: 3 });
  logger('kubelet').v(2, 'Detail', { err: new Error('boom'), missing: undefined });
  assert.equal(lines.length, 2);
  const first = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.deepEqual(Object.keys(first), ['ts', 'msg', 'v', 'nodeName', 'pods']);
  assert.equal(typeof first.ts, 'number');
  assert.ok((first.ts as number) >= before - 1 && (first.ts as number) <= Date.now() + 1);
  assert.equal(first.msg, 'Starting tskubelet');
  assert.equal(first.v, 0);
  assert.equal(first.nodeName, 'node-1');
  const second = JSON.parse(lines[1]!) as Record<string, unknown>;
  assert.equal(second.v, 2);
  assert.equal(second.err, 'boom');
  assert.equal(second.missing, null);
});

test('json error lines carry err and no v, as zapr writes them', () => {
  setLogFormat('json');
  logger('server').error('Unable to serve', { err: 'address in use' });
  const line = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(line.msg, 'Unable to serve');
  assert.equal(line.err, 'address in use');
  assert.equal('v' in line, false);
});

test('text stays klog-like', () => {
  logger('kubelet').warn('Careful', { a: 'b' });
  assert.match(lines[0]!, /^W\d{4} \d\d:\d\d:\d\d\.\d{3} \d+ kubelet\] "Careful" a="b"$/);
});

test('--vmodule raises the level of matching components only', () => {
  setVModule([{ filePattern: 'prob*', verbosity: 4 }]);
  logger('prober').v(4, 'shown');
  logger('kubelet').v(4, 'hidden');
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /"shown"/);
  assert.equal(logger('prober').enabled(4), true);
  assert.equal(logger('kubelet').enabled(1), false);
});
