import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container } from '../../../src/api/core-v1.js';
import { fnv1a32, hashContainer } from '../../../src/kuberuntime/container-hash.js';

const base: Container = { name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] };

test('fnv1a32 matches the reference vectors', () => {
  assert.equal(fnv1a32(Buffer.from('')), 0x811c9dc5);
  assert.equal(fnv1a32(Buffer.from('a')), 0xe40c292c);
  assert.equal(fnv1a32(Buffer.from('foobar')), 0xbf9cf968);
});

test('the hash is stable, lowercase hex without leading zeros', () => {
  const h = hashContainer(base);
  assert.equal(h, hashContainer(structuredClone(base)));
  assert.match(h, /^[1-9a-f][0-9a-f]*$/);
  // Pinned: a change here restarts every container on every node that upgrades.
  assert.equal(h, fnv1a32(Buffer.from('{"image":"busybox:1.36","name":"app"}')).toString(16));
});

test('the hash changes with the image and the name', () => {
  assert.notEqual(hashContainer({ ...base, image: 'busybox:1.37' }), hashContainer(base));
  assert.notEqual(hashContainer({ ...base, name: 'other' }), hashContainer(base));
});

test('fields upstream leaves out of the hash do not change it', () => {
  const h = hashContainer(base);
  assert.equal(hashContainer({ ...base, resources: { limits: { cpu: '1' } } }), h);
  assert.equal(hashContainer({ ...base, command: ['sleep', '1'] }), h);
  assert.equal(hashContainer({ ...base, env: [{ name: 'A', value: 'b' }] }), h);
  assert.equal(hashContainer({ ...base, terminationMessagePath: '/dev/termination-log' }), h);
});
