import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import {
  expand,
  expandContainerCommandAndArgs,
  makeEnvironmentVariables,
  mappingFuncFor,
  type EnvContext,
  type ServiceForEnv,
  type ServiceLister,
} from '../../../src/kuberuntime/container-env.js';
import { isKubeletError } from '../../../src/lib/errors.js';

const vars = mappingFuncFor(
  new Map([
    ['VAR_A', 'A'],
    ['VAR_B', 'B'],
    ['EMPTY', ''],
  ]),
);

test('expansion follows the upstream rules', () => {
  const cases: [string, string][] = [
    ['$(VAR_A)', 'A'],
    ['___$(VAR_A)___', '___A___'],
    ['$(VAR_A)$(VAR_B)', 'AB'],
    ['$(UNKNOWN)', '$(UNKNOWN)'],
    ['$$(VAR_A)', '$(VAR_A)'],
    ['$$$(VAR_A)', '$A'],
    ['$$$$(VAR_A)', '$$(VAR_A)'],
    ['$(VAR_A', '$(VAR_A'],
    ['$VAR_A', '$VAR_A'],
    ['$', '$'],
    ['x$', 'x$'],
    ['$(EMPTY)', ''],
    ['$()', '$()'],
    ['$(VAR_A)$', 'A$'],
    ['($(VAR_A))', '(A)'],
  ];
  for (const [input, want] of cases) assert.equal(expand(input, vars), want, input);
});

function ctx(over: Partial<EnvContext> = {}): EnvContext {
  return {
    podIP: '10.0.0.5',
    podIPs: ['10.0.0.5', 'fd00::5'],
    hostIPs: ['192.168.1.10'],
    nodeName: 'node-a',
    nodeAllocatable: { cpu: '4', memory: '8Gi' },
    sources: {},
    ...over,
  };
}

const pod: Pod = {
  metadata: {
    name: 'web',
    namespace: 'prod',
    uid: 'u-1',
    labels: { b: '2', a: '1' },
    annotations: { note: 'x' },
  },
  spec: { serviceAccountName: 'sa', containers: [] },
};

test('value vars expand against earlier ones; fieldRefs give the pod facts', async () => {
  const c: Container = {
    name: 'app',
    env: [
      { name: 'A', value: 'a' },
      { name: 'B', value: '$(A)-b-$(LATER)' },
      { name: 'LATER', value: 'l' },
      { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
      { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
      { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      { name: 'POD_IPS', valueFrom: { fieldRef: { fieldPath: 'status.podIPs' } } },
      { name: 'LABELS', valueFrom: { fieldRef: { fieldPath: 'metadata.labels' } } },
      { name: 'LABEL_A', valueFrom: { fieldRef: { fieldPath: "metadata.labels['a']" } } },
      { name: 'EMPTY', value: '' },
    ],
  };
  const env = Object.fromEntries(
    (await makeEnvironmentVariables(pod, c, ctx())).map((e) => [e.name, e.value]),
  );
  assert.deepEqual(env, {
    A: 'a',
    B: 'a-b-$(LATER)',
    LATER: 'l',
    NAME: 'web',
    NS: 'prod',
    UID: 'u-1',
    NODE: 'node-a',
    SA: 'sa',
    HOST_IP: '192.168.1.10',
    POD_IP: '10.0.0.5',
    POD_IPS: '10.0.0.5,fd00::5',
    LABELS: 'a="1"\nb="2"',
    LABEL_A: '1',
    EMPTY: '',
  });
});

test('command and args expand with the environment', () => {
  const c: Container = {
    name: 'app',
    command: ['sh', '-c', 'echo $(GREETING) $$(GREETING)'],
    args: ['$(MISSING)'],
  };
  assert.deepEqual(expandContainerCommandAndArgs(c, [{ name: 'GREETING', value: 'hi' }]), {
    command: ['sh', '-c', 'echo hi $(GREETING)'],
    args: ['$(MISSING)'],
  });
});

test('resourceFieldRef: limits, requests, divisor, node allocatable for a missing limit', async () => {
  const c: Container = {
    name: 'app',
    resources: { limits: { memory: '128Mi' }, requests: { cpu: '250m' } },
    env: [
      {
        name: 'MEM_LIMIT_MI',
        valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } },
      },
      { name: 'CPU_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
      { name: 'CPU_REQUEST_M', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
      { name: 'CPU_REQUEST', valueFrom: { resourceFieldRef: { resource: 'requests.cpu' } } },
    ],
  };
  const env = Object.fromEntries(
    (await makeEnvironmentVariables(pod, c, ctx())).map((e) => [e.name, e.value]),
  );
  assert.deepEqual(env, { MEM_LIMIT_MI: '128', CPU_LIMIT: '4', CPU_REQUEST_M: '250', CPU_REQUEST: '1' });
});

test('configMap and secret refs: resolved through the sources, optional ones skipped, errors as upstream words them', async () => {
  const sources = {
    getConfigMap: async (_ns: string, name: string) =>
      name === 'cfg' ? { color: 'blue', 'bad key': 'x' } : undefined,
    getSecret: async (_ns: string, name: string) => (name === 'sec' ? { password: 's3cret' } : undefined),
  };
  const c: Container = {
    name: 'app',
    envFrom: [
      { configMapRef: { name: 'cfg' }, prefix: 'CFG_' },
      { secretRef: { name: 'nope', optional: true } },
    ],
    env: [
      { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'color' } } },
      { name: 'PW', valueFrom: { secretKeyRef: { name: 'sec', key: 'password' } } },
      { name: 'OPT', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'missing', optional: true } } },
      { name: 'REF', value: '$(CFG_color)!' },
    ],
  };
  const env = Object.fromEntries(
    (await makeEnvironmentVariables(pod, c, ctx({ sources }))).map((e) => [e.name, e.value]),
  );
  assert.deepEqual(env, { CFG_color: 'blue', COLOR: 'blue', PW: 's3cret', REF: 'blue!' });

  const missingKey: Container = {
    name: 'x',
    env: [{ name: 'K', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'nokey' } } }],
  };
  await assert.rejects(
    makeEnvironmentVariables(pod, missingKey, ctx({ sources })),
    /couldn't find key nokey in ConfigMap prod\/cfg/,
  );
  const missingSecret: Container = {
    name: 'x',
    env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'gone', key: 'k' } } }],
  };
  await assert.rejects(
    makeEnvironmentVariables(pod, missingSecret, ctx({ sources })),
    /secret "gone" not found/,
  );
  await assert.rejects(makeEnvironmentVariables(pod, missingKey, ctx()), (err) => {
    assert.ok(isKubeletError(err, 'CREATE_CONTAINER_CONFIG'));
    assert.equal(err.message, "couldn't get configMap prod/cfg, no kubeClient defined");
    return true;
  });
  const badField: Container = {
    name: 'x',
    env: [{ name: 'K', valueFrom: { fieldRef: { fieldPath: 'spec.bogus' } } }],
  };
  await assert.rejects(makeEnvironmentVariables(pod, badField, ctx()), /unsupported fieldPath: spec.bogus/);
});

const services: Record<string, ServiceForEnv[]> = {
  default: [
    {
      metadata: { name: 'kubernetes', namespace: 'default' },
      spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
    },
    {
      metadata: { name: 'other', namespace: 'default' },
      spec: { clusterIP: '10.96.0.2', ports: [{ port: 1 }] },
    },
  ],
  prod: [
    {
      metadata: { name: 'my-db', namespace: 'prod' },
      spec: {
        clusterIP: '10.96.0.7',
        ports: [
          { port: 5432, protocol: 'TCP' },
          { name: 'metrics', port: 9187, protocol: 'UDP' },
        ],
      },
    },
    { metadata: { name: 'headless', namespace: 'prod' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } },
  ],
};
function lister(byNs: Record<string, ServiceForEnv[]>, synced = true): ServiceLister {
  return { hasSynced: () => synced, list: (ns) => byNs[ns] ?? [] };
}
const serviceSources = { services: lister(services) };

test('service variables: the master service always, the namespace services with enableServiceLinks, as upstream names them', async () => {
  const c: Container = {
    name: 'app',
    env: [{ name: 'DB', value: 'tcp://$(MY_DB_SERVICE_HOST):$(MY_DB_SERVICE_PORT)' }],
  };
  const env = Object.fromEntries(
    (await makeEnvironmentVariables(pod, c, ctx({ sources: serviceSources }))).map((e) => [e.name, e.value]),
  );
  assert.deepEqual(env, {
    DB: 'tcp://10.96.0.7:5432',
    KUBERNETES_SERVICE_HOST: '10.96.0.1',
    KUBERNETES_SERVICE_PORT: '443',
    KUBERNETES_SERVICE_PORT_HTTPS: '443',
    KUBERNETES_PORT: 'tcp://10.96.0.1:443',
    KUBERNETES_PORT_443_TCP: 'tcp://10.96.0.1:443',
    KUBERNETES_PORT_443_TCP_PROTO: 'tcp',
    KUBERNETES_PORT_443_TCP_PORT: '443',
    KUBERNETES_PORT_443_TCP_ADDR: '10.96.0.1',
    MY_DB_SERVICE_HOST: '10.96.0.7',
    MY_DB_SERVICE_PORT: '5432',
    MY_DB_SERVICE_PORT_METRICS: '9187',
    MY_DB_PORT: 'tcp://10.96.0.7:5432',
    MY_DB_PORT_5432_TCP: 'tcp://10.96.0.7:5432',
    MY_DB_PORT_5432_TCP_PROTO: 'tcp',
    MY_DB_PORT_5432_TCP_PORT: '5432',
    MY_DB_PORT_5432_TCP_ADDR: '10.96.0.7',
    MY_DB_PORT_9187_UDP: 'udp://10.96.0.7:9187',
    MY_DB_PORT_9187_UDP_PROTO: 'udp',
    MY_DB_PORT_9187_UDP_PORT: '9187',
    MY_DB_PORT_9187_UDP_ADDR: '10.96.0.7',
  });

  const unlinked: Pod = { ...pod, spec: { ...pod.spec, enableServiceLinks: false } };
  const names = (
    await makeEnvironmentVariables(unlinked, { name: 'app' }, ctx({ sources: serviceSources }))
  ).map((e) => e.name);
  assert.ok(names.includes('KUBERNETES_SERVICE_HOST'));
  assert.ok(!names.some((n) => n.startsWith('MY_DB_')));

  // The container's own variable wins over a service variable of the same name.
  const own: Container = { name: 'app', env: [{ name: 'KUBERNETES_SERVICE_HOST', value: 'mine' }] };
  const mine = (await makeEnvironmentVariables(pod, own, ctx({ sources: serviceSources }))).filter(
    (e) => e.name === 'KUBERNETES_SERVICE_HOST',
  );
  assert.deepEqual(mine, [{ name: 'KUBERNETES_SERVICE_HOST', value: 'mine' }]);

  // Standalone: no API, no services.
  assert.deepEqual(await makeEnvironmentVariables(pod, { name: 'app' }, ctx()), []);
});

test('services not yet listed: an API pod fails as upstream words it, a static pod starts', async () => {
  const unsynced = ctx({ sources: { services: lister({}, false) } });
  const unlinked: Pod = { ...pod, spec: { ...pod.spec, enableServiceLinks: false } };
  await assert.rejects(
    makeEnvironmentVariables(unlinked, { name: 'app' }, unsynced),
    (err: unknown) =>
      isKubeletError(err) &&
      err.code === 'CREATE_CONTAINER_CONFIG' &&
      err.message === 'services have not yet been read at least once, cannot construct envvars',
  );
  const staticPod: Pod = {
    ...unlinked,
    metadata: { ...pod.metadata, annotations: { 'kubernetes.io/config.source': 'file' } },
  };
  assert.deepEqual(
    await makeEnvironmentVariables(
      staticPod,
      { name: 'app', env: [{ name: 'FOO', value: 'BAR' }] },
      unsynced,
    ),
    [{ name: 'FOO', value: 'BAR' }],
  );
});

/** upstream buildService: one TCP port, no name. */
function svc(name: string, namespace: string, clusterIP: string, port: number): ServiceForEnv {
  return { metadata: { name, namespace }, spec: { clusterIP, ports: [{ port, protocol: 'TCP' }] } };
}

// upstream TestMakeEnvironmentVariables' services: a `kubernetes` in test2 besides the master one,
// and same-named services whose cluster IP is "None" or unset, which give no variables.
const upstreamServices = lister({
  default: [
    svc('kubernetes', 'default', '1.2.3.1', 8081),
    svc('not-special', 'default', '1.2.3.8', 8088),
    svc('not-special', 'default', 'None', 8088),
    svc('not-special', 'default', '', 8088),
  ],
  test1: [svc('test', 'test1', '1.2.3.3', 8083)],
  test2: [
    svc('kubernetes', 'test2', '1.2.3.4', 8084),
    svc('test', 'test2', '1.2.3.5', 8085),
    svc('test', 'test2', 'None', 8085),
    svc('test', 'test2', '', 8085),
  ],
});

function serviceVars(prefix: string, ip: string, port: number): Record<string, string> {
  const url = `tcp://${ip}:${port}`;
  return {
    [`${prefix}_SERVICE_HOST`]: ip,
    [`${prefix}_SERVICE_PORT`]: String(port),
    [`${prefix}_PORT`]: url,
    [`${prefix}_PORT_${port}_TCP`]: url,
    [`${prefix}_PORT_${port}_TCP_PROTO`]: 'tcp',
    [`${prefix}_PORT_${port}_TCP_PORT`]: String(port),
    [`${prefix}_PORT_${port}_TCP_ADDR`]: ip,
  };
}

test("upstream's service cases: master service in the pod's namespace, pod in the master namespace", async () => {
  const envOf = async (namespace: string, enableServiceLinks: boolean) => {
    const p: Pod = { metadata: { name: 'p', namespace }, spec: { enableServiceLinks, containers: [] } };
    const env = await makeEnvironmentVariables(
      p,
      { name: 'c' },
      ctx({ sources: { services: upstreamServices } }),
    );
    return Object.fromEntries(env.map((e) => [e.name, e.value]));
  };
  const master = serviceVars('KUBERNETES', '1.2.3.1', 8081);
  assert.deepEqual(await envOf('test1', false), master, 'api server = Y, kubelet = Y');
  assert.deepEqual(
    await envOf('test1', true),
    { ...serviceVars('TEST', '1.2.3.3', 8083), ...master },
    'service env vars',
  );
  assert.deepEqual(await envOf('test2', false), master, 'master service in pod ns');
  assert.deepEqual(
    await envOf('test2', true),
    { ...serviceVars('TEST', '1.2.3.5', 8085), ...serviceVars('KUBERNETES', '1.2.3.4', 8084) },
    'master service in pod ns, service env vars',
  );
  assert.deepEqual(await envOf('default', false), master, 'pod in master service ns');
  assert.deepEqual(
    await envOf('default', true),
    { ...serviceVars('NOT_SPECIAL', '1.2.3.8', 8088), ...master },
    'pod in master service ns, service env vars',
  );
});

test('envFrom keys that are not variable names are skipped with upstream warning event', async () => {
  const events: string[] = [];
  const c: Container = { name: 'app', envFrom: [{ configMapRef: { name: 'cfg' }, prefix: 'P_' }] };
  const env = await makeEnvironmentVariables(
    pod,
    c,
    ctx({
      sources: { getConfigMap: async () => ({ ok: '1', 'bad key': '2', '1x': '3' }) },
      recorder: { event: (_p, _f, type, reason, message) => events.push(`${type} ${reason} ${message}`) },
    }),
  );
  // With the prefix, `1x` becomes the valid `P_1x`.
  assert.deepEqual(env, [
    { name: 'P_ok', value: '1' },
    { name: 'P_1x', value: '3' },
  ]);
  assert.deepEqual(events, [
    'Warning InvalidEnvironmentVariableNames Keys [P_bad key] from the EnvFrom configMap prod/cfg were skipped since they are considered invalid environment variable names.',
  ]);
});
