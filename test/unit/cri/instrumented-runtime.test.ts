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

test('RunPodSandbox is also timed and its failures counted by runtime handler, as upstream does', async () => {
  const registry = new MetricsRegistry();
  const fake = new FakeRuntime();
  const runtime = instrumentCri(fake, registry);
  const config = {
    metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 },
    hostname: 'p',
    logDirectory: '/tmp/p',
    portMappings: [],
    labels: {},
    annotations: {},
  };
  await runtime.runPodSandbox(config, '');
  fake.injectError('runPodSandbox', new Error('no such handler'), 1);
  await assert.rejects(
    runtime.runPodSandbox({ ...config, metadata: { ...config.metadata, uid: 'v' } }, 'kata'),
  );

  const text = await registry.expose();
  assert.match(text, /^kubelet_run_podsandbox_duration_seconds_count\{runtime_handler=""\} 1$/m);
  assert.match(text, /^kubelet_run_podsandbox_duration_seconds_count\{runtime_handler="kata"\} 1$/m);
  assert.match(text, /^kubelet_run_podsandbox_errors_total\{runtime_handler="kata"\} 1$/m);
  assert.doesNotMatch(text, /^kubelet_run_podsandbox_errors_total\{runtime_handler=""\}/m);
});
