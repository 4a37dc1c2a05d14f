import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCriEndpoint } from '../../../src/cri/cri-endpoint.js';
import { isKubeletError } from '../../../src/lib/errors.js';

test('unix:///path, unix:/path and a bare absolute path all dial the same socket', () => {
  for (const endpoint of [
    'unix:///run/containerd/containerd.sock',
    'unix:/run/containerd/containerd.sock',
    '/run/containerd/containerd.sock',
  ]) {
    assert.deepEqual(parseCriEndpoint(endpoint), {
      grpcTarget: 'unix:///run/containerd/containerd.sock',
      socketPath: '/run/containerd/containerd.sock',
    });
  }
});

test('tcp, npipe, relative paths and empty strings are refused as INVALID_CONFIG', () => {
  for (const endpoint of [
    'tcp://127.0.0.1:1234',
    'npipe:////./pipe/containerd',
    'unix://relative.sock',
    'relative.sock',
    '',
  ]) {
    assert.throws(
      () => parseCriEndpoint(endpoint),
      (err) => isKubeletError(err, 'INVALID_CONFIG'),
      endpoint,
    );
  }
});
