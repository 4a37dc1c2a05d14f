import assert from 'node:assert/strict';
import { test } from 'node:test';
import { criCallsPerPod, criOperations } from '../../../bench/cluster-cri-calls.js';

const before = `# HELP kubelet_runtime_operations_total [ALPHA] Cumulative number of runtime operations by operation type.
# TYPE kubelet_runtime_operations_total counter
kubelet_runtime_operations_total{operation_type="list_podsandbox"} 10
kubelet_runtime_operations_total{operation_type="version"} 1
kubelet_runtime_operations_errors_total{operation_type="list_podsandbox"} 3
kubelet_runtime_operations_duration_seconds_count{operation_type="list_podsandbox"} 10
`;
const after = `kubelet_runtime_operations_total{operation_type="list_podsandbox"} 30
kubelet_runtime_operations_total{operation_type="version"} 1
kubelet_runtime_operations_total{operation_type="run_podsandbox"} 10
`;

test('the CRI calls of a window are counted per pod by method, other series left out', () => {
  const ops = criOperations(before);
  assert.deepEqual(
    [...ops],
    [
      ['list_podsandbox', 10],
      ['version', 1],
    ],
  );
  assert.deepEqual(criCallsPerPod(ops, criOperations(after), 10), {
    cri_list_podsandbox_per_pod: 2,
    cri_run_podsandbox_per_pod: 1,
    cri_calls_per_pod: 3,
  });
});
