import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Pod, PodStatus } from '../../../src/api/core-v1.js';
import { PodStartupLatencyTracker } from '../../../src/kubelet/pod-startup-latency-tracker.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { MetricsRegistry } from '../../../src/lib/metrics.js';

const CREATED_MS = Date.parse('2026-11-27T10:00:00Z');

function apiPod(uid: string, status?: PodStatus, hostNetwork = false): Pod {
  return {
    metadata: { name: `p-${uid}`, namespace: 'default', uid, creationTimestamp: '2026-11-27T10:00:00Z' },
    spec: { containers: [{ name: 'c', image: 'busybox' }], hostNetwork },
    status,
  };
}

const running: PodStatus = {
  phase: 'Running',
  startTime: '2026-11-27T10:00:01Z',
  containerStatuses: [
    {
      name: 'c',
      image: 'busybox',
      imageID: '',
      ready: true,
      restartCount: 0,
      state: { running: { startedAt: '2026-11-27T10:00:03Z' } },
    },
  ],
};
const waiting: PodStatus = {
  phase: 'Pending',
  startTime: '2026-11-27T10:00:01Z',
  containerStatuses: [
    {
      name: 'c',
      image: 'busybox',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: 'ContainerCreating' } },
    },
  ],
};

function setup() {
  const clock = new FakeClock(CREATED_MS);
  const registry = new MetricsRegistry();
  const tracker = new PodStartupLatencyTracker(registry, clock);
  const value = async (series: string): Promise<number | undefined> => {
    const line = (await registry.expose()).split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };
  return { clock, tracker, value };
}

describe('PodStartupLatencyTracker', () => {
  test('creation to running-on-watch, less the pulls; the first pod on the pod network also sets its gauge', async () => {
    const { clock, tracker, value } = setup();
    clock.advance(500);
    tracker.observedPodOnWatch(apiPod('a'), clock.now()); // scheduled: no startTime yet
    clock.advance(500);
    tracker.recordImageStartedPulling('a');
    clock.advance(4000);
    tracker.recordImageFinishedPulling('a');
    tracker.recordStatusUpdated(apiPod('a', waiting));
    clock.advance(1000);
    tracker.recordStatusUpdated(apiPod('a', running));
    clock.advance(1000);
    tracker.observedPodOnWatch(apiPod('a', waiting), clock.now()); // an older status on the watch
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 0);
    clock.advance(500);
    tracker.observedPodOnWatch(apiPod('a', running), clock.now());
    // 7.5 s from creation to the watch, 4 s of it pulling.
    assert.equal(await value('kubelet_pod_start_total_duration_seconds_sum'), 7.5);
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_sum'), 3.5);
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 1);
    assert.equal(await value('kubelet_first_network_pod_start_sli_duration_seconds'), 3.5);

    // Observed once: later watch events of the running pod add nothing.
    tracker.observedPodOnWatch(apiPod('a', running), clock.now() + 10_000);
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 1);
  });

  test('the gauge keeps the first network pod; host-network pods count in the histograms only', async () => {
    const { clock, tracker, value } = setup();
    for (const [uid, hostNetwork] of [
      ['h', true],
      ['n1', false],
      ['n2', false],
    ] as const) {
      tracker.observedPodOnWatch(apiPod(uid, undefined, hostNetwork), clock.now());
      tracker.recordStatusUpdated(apiPod(uid, running));
      clock.advance(1000);
      tracker.observedPodOnWatch(apiPod(uid, running, hostNetwork), clock.now());
    }
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 3);
    assert.equal(await value('kubelet_first_network_pod_start_sli_duration_seconds'), 2);
  });

  test('pods already started when first seen, terminal pods and removed pods are not tracked', async () => {
    const { clock, tracker, value } = setup();
    tracker.observedPodOnWatch(apiPod('old', running), clock.now());
    tracker.recordStatusUpdated(apiPod('old', running));
    tracker.observedPodOnWatch(apiPod('old', running), clock.now());
    assert.equal(tracker.tracked, 0, 'a pod with a startTime when first seen was started before');

    tracker.observedPodOnWatch(apiPod('gone'), clock.now());
    tracker.observedPodOnWatch(apiPod('done'), clock.now());
    assert.equal(tracker.tracked, 2);
    tracker.deletePodStartupState('gone');
    tracker.observedPodOnWatch(apiPod('done', { ...running, phase: 'Succeeded' }), clock.now());
    assert.equal(tracker.tracked, 0);
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 0);
  });

  test('a running status the API server never took from this kubelet is not a start it measured', async () => {
    const { clock, tracker, value } = setup();
    tracker.observedPodOnWatch(apiPod('a'), clock.now());
    clock.advance(1000);
    tracker.observedPodOnWatch(apiPod('a', running), clock.now());
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 0);
  });

  test('a status without container statuses is not a start', async () => {
    const { clock, tracker, value } = setup();
    tracker.observedPodOnWatch(apiPod('a'), clock.now());
    tracker.recordStatusUpdated(apiPod('a', { phase: 'Pending' }));
    clock.advance(1000);
    tracker.observedPodOnWatch(apiPod('a', { phase: 'Pending' }), clock.now());
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 0);
    tracker.recordStatusUpdated(apiPod('a', running));
    tracker.observedPodOnWatch(apiPod('a', running), clock.now());
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 1);
  });

  test('the three series exist, at zero, before any start', async () => {
    const { value } = setup();
    assert.equal(await value('kubelet_pod_start_sli_duration_seconds_count'), 0);
    assert.equal(await value('kubelet_pod_start_total_duration_seconds_count'), 0);
    assert.equal(await value('kubelet_first_network_pod_start_sli_duration_seconds'), 0);
  });
});
