import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exponentialBuckets, MetricsRegistry, renderText } from '../../../src/lib/metrics.js';

test('counters, gauges and histograms render in the Prometheus text format, sorted by name', async () => {
  const r = new MetricsRegistry();
  const ops = r.counter(
    'kubelet_runtime_operations_total',
    'Cumulative number of runtime operations by operation type.',
    ['operation_type'],
  );
  ops.inc({ operation_type: 'list_containers' });
  ops.inc({ operation_type: 'list_containers' }, 2);
  r.gauge('kubelet_running_pods', 'Number of pods that have a running pod sandbox').set(undefined, 3);
  const h = r.histogram(
    'kubelet_pleg_relist_duration_seconds',
    'Duration in seconds for relisting pods in PLEG.',
    [],
    [0.1, 1],
  );
  h.observe(undefined, 0.05);
  h.observe(undefined, 0.5);
  h.observe(undefined, 5);
  assert.equal(
    await r.expose(),
    [
      '# HELP kubelet_pleg_relist_duration_seconds Duration in seconds for relisting pods in PLEG.',
      '# TYPE kubelet_pleg_relist_duration_seconds histogram',
      'kubelet_pleg_relist_duration_seconds_bucket{le="0.1"} 1',
      'kubelet_pleg_relist_duration_seconds_bucket{le="1"} 2',
      'kubelet_pleg_relist_duration_seconds_bucket{le="+Inf"} 3',
      'kubelet_pleg_relist_duration_seconds_sum 5.55',
      'kubelet_pleg_relist_duration_seconds_count 3',
      '# HELP kubelet_running_pods Number of pods that have a running pod sandbox',
      '# TYPE kubelet_running_pods gauge',
      'kubelet_running_pods 3',
      '# HELP kubelet_runtime_operations_total Cumulative number of runtime operations by operation type.',
      '# TYPE kubelet_runtime_operations_total counter',
      'kubelet_runtime_operations_total{operation_type="list_containers"} 3',
      '',
    ].join('\n'),
  );
});

test('label values and help are escaped; empty families are left out', () => {
  const text = renderText([
    {
      name: 'a',
      help: 'line\\one\ntwo',
      type: 'gauge',
      samples: [{ labels: { v: 'q"\\\n' }, value: 1, timestampMs: 1700000000000 }],
    },
    { name: 'b', help: 'nothing', type: 'counter', samples: [] },
  ]);
  assert.equal(text, '# HELP a line\\\\one\\ntwo\n# TYPE a gauge\na{v="q\\"\\\\\\n"} 1 1700000000000\n');
});

test('registering a name twice returns the same metric; a different type is an error; unknown labels are refused', () => {
  const r = new MetricsRegistry();
  const a = r.counter('x_total', 'x', ['k']);
  assert.equal(r.counter('x_total', 'x', ['k']), a);
  assert.throws(() => r.gauge('x_total', 'x'), /already registered/);
  assert.throws(() => a.inc({ nope: '1' }), /unknown label/);
  assert.throws(() => a.inc({ k: 'v' }, -1), /cannot decrease/);
  assert.throws(() => r.counter('bad name', 'x'), /invalid metric name/);
});

test('collectors run at scrape time; timers observe seconds; buckets grow exponentially', async () => {
  const r = new MetricsRegistry();
  let pods = 1;
  r.addCollector(() => [
    { name: 'kubelet_running_pods', help: 'h', type: 'gauge', samples: [{ value: pods }] },
  ]);
  assert.match(await r.expose(), /kubelet_running_pods 1/);
  pods = 2;
  assert.match(await r.expose(), /kubelet_running_pods 2/);
  const h = r.histogram('d_seconds', 'd');
  let now = 1000;
  const stop = h.startTimer(undefined, () => now);
  now = 1250;
  assert.equal(stop(), 0.25);
  assert.equal(h.countOf(), 1);
  assert.deepEqual(exponentialBuckets(1, 2, 4), [1, 2, 4, 8]);
});

test('kubelet_running_pods and kubelet_running_containers come from the runtime at scrape time', async () => {
  const { FakeRuntime } = await import('../../../src/cri/testing/fake-runtime.js');
  const { addRuntimeStateMetrics } = await import('../../../src/server/runtime-state-metrics.js');
  const runtime = new FakeRuntime();
  runtime.addImage('busybox:latest');
  const sandboxConfig = {
    metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 },
    hostname: 'p',
    logDirectory: '/tmp',
    portMappings: [],
    labels: {},
    annotations: {},
  };
  const sandbox = await runtime.runPodSandbox(sandboxConfig, '');
  const container = (name: string) => ({
    metadata: { name, attempt: 0 },
    image: { image: 'busybox:latest' },
    command: [],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: {},
    annotations: {},
    logPath: `${name}.log`,
    stdin: false,
    stdinOnce: false,
    tty: false,
  });
  const running = await runtime.createContainer(sandbox, container('a'), sandboxConfig);
  await runtime.startContainer(running);
  await runtime.createContainer(sandbox, container('b'), sandboxConfig);
  const r = new MetricsRegistry();
  addRuntimeStateMetrics(r, runtime);
  const text = await r.expose();
  assert.match(text, /^kubelet_running_pods 1$/m);
  assert.match(text, /^kubelet_running_containers\{container_state="running"\} 1$/m);
  assert.match(text, /^kubelet_running_containers\{container_state="created"\} 1$/m);
});
