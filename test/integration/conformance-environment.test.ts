/**
 * What standalone mode can show of a container's environment, as upstream's node
 * conformance "Variable Expansion" and "Downward API" cases check it (test/e2e/common/node/
 * expansion.go, downwardapi.go): values, `$(VAR)` in env, command and args with `$$` escaping,
 * fieldRef and resourceFieldRef. Without an API client a configMap or secret reference fails the
 * container with CreateContainerConfigError, optional or not (upstream: "no kubeClient defined"),
 * and there are no service variables. The cluster-mode half (configMaps, secrets, services) is in
 * conformance-environment-cluster.test.ts.
 */
import assert from 'node:assert/strict';
import os from 'node:os';
import { afterEach, describe, test } from 'node:test';
import { busybox, containerStatus, makePod, StandaloneNode } from '../helpers/conformance.js';

const ns = `it-conf-env-${process.pid}`;

/** The address the kubelet is told is the node's: what status.hostIP must give. */
function nodeIP(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

/** `env` output as a map (values here have no newlines except where a test says so). */
function parseEnv(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 1));
  }
  return out;
}

describe('conformance: the environment, standalone', () => {
  let node: StandaloneNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  test('values, $(VAR) expansion with $$ escaping in env, command and args', async () => {
    const n = (node = await StandaloneNode.start(ns));
    await n.createPod(
      makePod(ns, 'expansion', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'env',
            image: 'busybox',
            imagePullPolicy: 'IfNotPresent',
            env: [
              { name: 'FOO', value: 'foo-value' },
              { name: 'BAR', value: 'bar-value' },
              { name: 'FOOBAR', value: '$(FOO);;$(BAR)' },
              { name: 'ESCAPED', value: '$$(FOO) and $$$(FOO)' },
              { name: 'LATER_REF', value: '$(DEFINED_LATER)' },
              { name: 'DEFINED_LATER', value: 'x' },
              { name: 'UNCLOSED', value: '$(FOO' },
              { name: 'EMPTY', value: '' },
            ],
            // Single quotes: the shell must print what the kubelet made of the command, not run it.
            command: ['sh', '-c', 'echo \'command: $(FOO) $$(FOO)\'; echo "args: $1 $2"; env', 'sh'],
            args: ['$(FOOBAR)', '$$(BAR)'],
          },
        ],
      }),
    );
    const done = await n.waitPod('expansion', 'Succeeded', (p) => p.status?.phase === 'Succeeded');
    const out = await n.logs(done, 'env');
    assert.match(out, /^command: foo-value \$\(FOO\)$/m);
    assert.match(out, /^args: foo-value;;bar-value \$\(BAR\)$/m);
    const env = parseEnv(out);
    assert.equal(env.get('FOOBAR'), 'foo-value;;bar-value');
    assert.equal(env.get('ESCAPED'), '$(FOO) and $foo-value');
    assert.equal(env.get('LATER_REF'), '$(DEFINED_LATER)', 'only variables defined before expand');
    assert.equal(env.get('UNCLOSED'), '$(FOO');
    assert.equal(env.get('EMPTY'), '');
    // No API, no services.
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), undefined);
  });

  test('the downward API: fieldRef and resourceFieldRef', async () => {
    const hostIP = nodeIP();
    const n = (node = await StandaloneNode.start(ns, [`--node-ip=${hostIP}`]));
    const field = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });
    const resource = (name: string, r: string, divisor?: string, containerName?: string) => ({
      name,
      valueFrom: {
        resourceFieldRef: {
          resource: r,
          ...(divisor ? { divisor } : {}),
          ...(containerName ? { containerName } : {}),
        },
      },
    });
    await n.createPod(
      makePod(
        ns,
        'downward',
        {
          serviceAccountName: 'builder',
          containers: [
            busybox('env', 'env; exec sleep 3600', {
              resources: {
                limits: { cpu: '1250m', memory: '64Mi' },
                requests: { cpu: '250m', memory: '32Mi' },
              },
              env: [
                field('POD_NAME', 'metadata.name'),
                field('POD_NAMESPACE', 'metadata.namespace'),
                field('POD_UID', 'metadata.uid'),
                field('LABEL_APP', "metadata.labels['app']"),
                field('ANNOTATION_NOTE', "metadata.annotations['note']"),
                field('MISSING_LABEL', "metadata.labels['nope']"),
                field('NODE_NAME', 'spec.nodeName'),
                field('SA_NAME', 'spec.serviceAccountName'),
                field('HOST_IP', 'status.hostIP'),
                field('HOST_IPS', 'status.hostIPs'),
                field('POD_IP', 'status.podIP'),
                field('POD_IPS', 'status.podIPs'),
                resource('CPU_LIMIT', 'limits.cpu'),
                resource('CPU_LIMIT_M', 'limits.cpu', '1m'),
                resource('MEMORY_LIMIT_MI', 'limits.memory', '1Mi'),
                resource('CPU_REQUEST_M', 'requests.cpu', '1m'),
                resource('MEMORY_REQUEST', 'requests.memory'),
                resource('OTHER_CPU_LIMIT', 'limits.cpu', '', 'nolimits'),
              ],
            }),
            busybox('nolimits', 'env; exec sleep 3600', {
              env: [resource('CPU_LIMIT', 'limits.cpu'), resource('MEMORY_LIMIT', 'limits.memory')],
            }),
          ],
        },
        { labels: { app: 'downward-test' }, annotations: { note: 'hello annotations' } },
      ),
    );
    const p = await n.waitPod('downward', 'Running', (x) => x.status?.phase === 'Running');
    const env = parseEnv(await n.waitLogs(p, 'env', /POD_IPS=/));
    const podIP = p.status?.podIP ?? '';
    assert.match(podIP, /^\d+\.\d+\.\d+\.\d+$/);
    const want: Record<string, string> = {
      POD_NAME: p.metadata.name ?? '',
      POD_NAMESPACE: ns,
      POD_UID: p.metadata.uid ?? '',
      LABEL_APP: 'downward-test',
      ANNOTATION_NOTE: 'hello annotations',
      MISSING_LABEL: '',
      NODE_NAME: n.kubelet.nodeName,
      SA_NAME: 'builder',
      HOST_IP: hostIP,
      HOST_IPS: hostIP,
      POD_IP: podIP,
      POD_IPS: podIP,
      CPU_LIMIT: '2', // 1250m rounded up to whole CPUs
      CPU_LIMIT_M: '1250',
      MEMORY_LIMIT_MI: '64',
      CPU_REQUEST_M: '250',
      MEMORY_REQUEST: String(32 * 1024 * 1024),
      OTHER_CPU_LIMIT: String(os.cpus().length),
    };
    for (const [k, v] of Object.entries(want)) assert.equal(env.get(k), v, k);
    // No limit: the node's allocatable CPU (no CPU is reserved here).
    const defaults = parseEnv(await n.waitLogs(p, 'nolimits', /MEMORY_LIMIT=/));
    assert.equal(defaults.get('CPU_LIMIT'), String(os.cpus().length));
    const memory = Number(defaults.get('MEMORY_LIMIT'));
    assert.ok(
      memory > 0 && memory <= os.totalmem(),
      `memory limit defaults to at most the machine's (${memory})`,
    );
  });

  test('configMap and secret references without an API client: CreateContainerConfigError, as upstream', async () => {
    const n = (node = await StandaloneNode.start(ns));
    await n.createPod(
      makePod(ns, 'needs-api', {
        containers: [
          busybox('cm', 'env; exec sleep 3600', {
            env: [
              { name: 'K', valueFrom: { configMapKeyRef: { name: 'settings', key: 'k', optional: true } } },
            ],
          }),
          busybox('secret', 'env; exec sleep 3600', {
            envFrom: [{ secretRef: { name: 'creds' }, prefix: 'S_' }],
          }),
        ],
      }),
    );
    const p = await n.waitPod(
      'needs-api',
      'both containers waiting with CreateContainerConfigError',
      (x) =>
        containerStatus(x, 'cm')?.state?.waiting?.reason === 'CreateContainerConfigError' &&
        containerStatus(x, 'secret')?.state?.waiting?.reason === 'CreateContainerConfigError',
    );
    assert.equal(
      containerStatus(p, 'cm')?.state?.waiting?.message,
      `couldn't get configMap ${ns}/settings, no kubeClient defined`,
    );
    assert.equal(
      containerStatus(p, 'secret')?.state?.waiting?.message,
      `couldn't get secret ${ns}/creds, no kubeClient defined`,
    );
    assert.equal(p.status?.phase, 'Pending');
    assert.equal((await n.cri.podContainers(ns, p.metadata.name ?? '')).length, 0, 'nothing was created');
  });
});
