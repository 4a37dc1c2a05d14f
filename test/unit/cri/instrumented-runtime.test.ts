import { test } from 'node:test';
import assert from 'node:assert/strict';
import { instrumentCri } from '../../../src/cri/instrumented-runtime.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { MetricsRegistry } from '../../../src/lib/metrics.js';

test('every CRI call is counted by operation type, failures too, and timed', async () => {
  const registry = new MetricsRegistry();
  const fake = new FakeRuntime();
  const runtime = instrumentCri(fake, registry);
  await runtime.version();
  await runtime.listPodSandbox();
  await runtime.listPodSandbox();
  fake.injectError('listContainers', new Error('runtime down'), 1);
  await assert.rejects(runtime.listContainers(), /runtime down/);

  const text = await registry.expose();
  assert.match(text, /kubelet_runtime_operations_total\{operation_type="list_podsandbox"\} 2/);
  assert.match(text, /kubelet_runtime_operations_total\{operation_type="version"\} 1/);
  assert.match(text, /kubelet_runtime_operations_errors_total\{operation_type="list_containers"\} 1/);
  assert.doesNotMatch(text, /kubelet_runtime_operations_errors_total\{operation_type="version"\}/);
  assert.match(
    text,
    /kubelet_runtime_operations_duration_seconds_count\{operation_type="list_podsandbox"\} 2/,
  );
  // Fields and methods that are not CRI calls pass through untouched.
  assert.equal(runtime.runtimeName, 'containerd');
});
