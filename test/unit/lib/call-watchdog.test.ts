import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallWatchdog } from '../../../src/lib/call-watchdog.js';

test('a call that answers in time resolves or rejects with its own result', async () => {
  const w = new CallWatchdog(10);
  assert.equal(await w.bounded(Promise.resolve(7), 1000, 'quick'), 7);
  await assert.rejects(w.bounded(Promise.reject(new Error('EACCES')), 1000, 'denied'), /EACCES/);
});

test('a call that never answers is rejected with ETIMEDOUT soon after its deadline', async () => {
  const w = new CallWatchdog(10);
  const started = Date.now();
  // A real call (an fs request, a socket) keeps the process up while it waits; this stand-in cannot.
  const keepAlive = setTimeout(() => undefined, 5000);
  const never = new Promise<never>(() => undefined);
  await assert.rejects(w.bounded(never, 50, 'mkdir /sys/fs/cgroup/x'), (err: NodeJS.ErrnoException) => {
    assert.equal(err.code, 'ETIMEDOUT');
    assert.match(err.message, /mkdir \/sys\/fs\/cgroup\/x: no answer within 50 ms/);
    return true;
  });
  const took = Date.now() - started;
  assert.ok(took >= 50 && took < 2000, `rejected after ${took} ms`);
  // A later answer of a call already given up on changes nothing, and a new call still works.
  assert.equal(await w.bounded(Promise.resolve('ok'), 50, 'again'), 'ok');
  clearTimeout(keepAlive);
});
