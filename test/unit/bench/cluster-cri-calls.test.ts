import assert from 'node:assert/strict';
import { test } from 'node:test';
import { criCallsPerPod, criOperations, podSyncs, podSyncsPerPod } from '../../../bench/cluster-cri-calls.js';

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

test('the pod worker syncs of a window are counted per pod by update type, from the histogram count alone', () => {
  const text = (create: number, sync: number) => `# TYPE kubelet_pod_worker_duration_seconds histogram
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.005"} ${create}
kubelet_pod_worker_duration_seconds_sum{operation_type="create"} 1.5
kubelet_pod_worker_duration_seconds_count{operation_type="create"} ${create}
kubelet_pod_worker_duration_seconds_count{operation_type="sync"} ${sync}
kubelet_runtime_operations_total{operation_type="version"} 1
`;
  assert.deepEqual(podSyncsPerPod(podSyncs(text(0, 4)), podSyncs(text(10, 34)), 10), {
    pod_syncs_create_per_pod: 1,
    pod_syncs_sync_per_pod: 3,
    pod_syncs_per_pod: 4,
  });
});
