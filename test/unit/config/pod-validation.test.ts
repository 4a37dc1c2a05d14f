import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  parseManifestDocument,
  staticPodFromObject,
  type StaticPodOrigin,
} from '../../../src/config/static-pod-defaults.js';
import { decodePod } from '../../../src/config/pod-schema.js';
import { quantityProblem, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES } from '../../../src/config/pod-validation.js';
import { isKubeletError } from '../../../src/lib/errors.js';

const ORIGIN: StaticPodOrigin = { source: 'file', location: '/m/web.yaml', nodeName: 'node-a' };

type Json = Record<string, unknown>;

/** A valid pod with a probe, a hook, ports, env, resources and volumes of each kind checked. */
function validPod(): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', labels: { app: 'web' }, annotations: { 'example.com/note': 'hi' } },
    spec: {
      terminationGracePeriodSeconds: 30,
      securityContext: { sysctls: [{ name: 'net.ipv4.ip_local_port_range', value: '1024 65535' }] },
      volumes: [
        { name: 'data', emptyDir: {} },
        { name: 'host', hostPath: { path: '/var/log', type: 'Directory' } },
        {
          name: 'cfg',
          configMap: { name: 'cfg', defaultMode: 0o644, items: [{ key: 'a', path: 'a.conf', mode: 0o400 }] },
        },
      ],
      containers: [
        {
          name: 'app',
          image: 'busybox',
          command: ['sleep', '3600'],
          ports: [{ name: 'http', containerPort: 8080 }],
          env: [
            { name: 'A', value: '1' },
            { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          ],
          resources: { limits: { memory: '64Mi', cpu: '100m' } },
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
          livenessProbe: { exec: { command: ['true'] }, periodSeconds: 5 },
          readinessProbe: { httpGet: { port: 'http', path: '/' } },
          lifecycle: { preStop: { sleep: { seconds: 5 } } },
        },
      ],
    },
  };
}

/** Sets a value at a dotted path with [i] indexes, creating nothing: the path must exist up to its last part. */
function withField(pod: Json, path: string, value: unknown): Json {
  const parts = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let node: Record<string, unknown> = pod;
  for (const p of parts.slice(0, -1)) node = node[p] as Record<string, unknown>;
  node[parts[parts.length - 1]!] = value;
  return pod;
}

function refusal(obj: unknown): string {
  try {
    staticPodFromObject(obj, ORIGIN, ORIGIN.location);
  } catch (err) {
    assert.ok(isKubeletError(err, 'INVALID_MANIFEST'), String(err));
    return err.message;
  }
  assert.fail('expected the pod to be refused');
}

function refusedAt(path: string, value: unknown, expected: RegExp): void {
  const msg = refusal(withField(validPod(), path, value));
  assert.match(msg, expected, `${path} = ${JSON.stringify(value)}`);
  assert.ok(msg.startsWith('/m/web.yaml: invalid pod: '), msg);
}

describe('pod validation: the valid pod passes', () => {
  test('all the parts of the valid pod', () => {
    const pod = staticPodFromObject(validPod(), ORIGIN, ORIGIN.location);
    assert.equal(pod.metadata.name, 'web-node-a');
    assert.equal(pod.spec.containers[0]?.livenessProbe?.periodSeconds, 5);
  });

  test('YAML 1.1: defaultMode 0400 is 256 and mode 0644 is 420, both accepted', () => {
    const yaml = `
apiVersion: v1
kind: Pod
metadata: { name: modes }
spec:
  volumes:
  - name: s
    secret: { secretName: s, defaultMode: 0400, items: [{ key: k, path: p, mode: 0644 }] }
  containers: [{ name: c, image: busybox }]
`;
    const pod = staticPodFromObject(parseManifestDocument(yaml, 'modes.yaml'), ORIGIN, 'modes.yaml');
    const secret = pod.spec.volumes?.[0]?.secret as { defaultMode: number; items: { mode: number }[] };
    assert.equal(secret.defaultMode, 256);
    assert.equal(secret.items[0]?.mode, 420);
  });

  test('null fields decode as Go zero values, not errors', () => {
    const pod = validPod();
    withField(pod, 'spec.containers[0].args', null);
    withField(pod, 'metadata.labels', null);
    (pod.spec as Json).hostNetwork = null;
    const decoded = staticPodFromObject(pod, ORIGIN, ORIGIN.location);
    assert.equal(decoded.spec.containers[0]?.args, undefined);
    assert.equal(decoded.spec.hostNetwork, undefined);
  });
});

describe('pod validation: wrong types are refused naming the field', () => {
  const cases: [string, unknown, RegExp][] = [
    [
      'spec.containers[0].command',
      'sleep 3600',
      /spec\.containers\[0\]\.command: Invalid type: expected list, got string/,
    ],
    [
      'spec.containers[0].env[0].value',
      5,
      /spec\.containers\[0\]\.env\[0\]\.value: Invalid type: expected string, got integer/,
    ],
    [
      'spec.containers[0].name',
      ['a', 'b'],
      /spec\.containers\[0\]\.name: Invalid type: expected string, got list/,
    ],
    ['spec.hostNetwork', 'yes', /spec\.hostNetwork: Invalid type: expected boolean, got string/],
    [
      'spec.containers[0].livenessProbe.periodSeconds',
      0.001,
      /livenessProbe\.periodSeconds: Invalid type: expected integer, got number/,
    ],
    [
      'spec.containers[0].ports[0].containerPort',
      '8080',
      /ports\[0\]\.containerPort: Invalid type: expected integer/,
    ],
    [
      'spec.containers[0].ports[0].containerPort',
      2 ** 40,
      /containerPort: Invalid value: 1099511627776: must fit in an int32/,
    ],
    [
      'spec.containers[0].resources.limits',
      { memory: true },
      /resources\.limits\[memory\]: Invalid type: expected quantity/,
    ],
    ['metadata.labels', { app: 5 }, /metadata\.labels\[app\]: Invalid type: expected string, got integer/],
    ['metadata.annotations', ['x'], /metadata\.annotations: Invalid type: expected object, got list/],
    ['metadata.uid', 7, /metadata\.uid: Invalid type: expected string/],
    [
      'spec.volumes[1].hostPath',
      '/var/log',
      /spec\.volumes\[1\]\.hostPath: Invalid type: expected object, got string/,
    ],
    ['spec.containers', { name: 'c' }, /spec\.containers: Invalid type: expected list, got object/],
    [
      'spec.containers[0].securityContext',
      { runAsUser: '0' },
      /securityContext\.runAsUser: Invalid type: expected integer/,
    ],
    [
      'spec.terminationGracePeriodSeconds',
      '30',
      /spec\.terminationGracePeriodSeconds: Invalid type: expected integer/,
    ],
    [
      'metadata.creationTimestamp',
      'yesterday',
      /metadata\.creationTimestamp: Invalid value: "yesterday": must be an RFC 3339 time/,
    ],
    ['metadata', 'web', /metadata: Invalid type: expected object, got string/],
    ['status', 'Running', /status: Invalid type: expected object, got string/],
  ];
  for (const [path, value, expected] of cases) {
    test(`${path} = ${JSON.stringify(value)}`, () => refusedAt(path, value, expected));
  }

  test('every type error of a pod is found in one pass', () => {
    const pod = validPod();
    withField(pod, 'spec.hostNetwork', 'yes');
    withField(pod, 'spec.containers[0].command', 'sleep 3600');
    const { errors } = decodePod(pod);
    assert.deepEqual(
      errors.map((e) => e.field),
      ['spec.containers[0].command', 'spec.hostNetwork'],
    );
  });
});

describe('pod validation: ValidatePodCreate rules', () => {
  const c0 = 'spec.containers[0]';
  const cases: [string, unknown, RegExp][] = [
    // names
    ['metadata.name', 'Web', /metadata\.name: Invalid value: "Web-node-a": a lowercase RFC 1123 subdomain/],
    [
      'metadata.namespace',
      'kube.system',
      /metadata\.namespace: Invalid value: "kube\.system": a lowercase RFC 1123 label/,
    ],
    ['metadata.uid', '../../x', /metadata\.uid: Invalid value: "\.\.\/\.\.\/x": must be 1 to 128 characters/],
    ['metadata.uid', 'a/b', /metadata\.uid: Invalid value: "a\/b"/],
    [
      'metadata.labels',
      { 'bad key!': 'v' },
      /metadata\.labels: Invalid value: "bad key!": name part must consist/,
    ],
    ['metadata.labels', { app: '-x-' }, /metadata\.labels: Invalid value: "-x-": a valid label must be/],
    [
      'metadata.annotations',
      { 'a/b/c': 'v' },
      /metadata\.annotations: Invalid value: "a\/b\/c": a qualified name/,
    ],
    [`${c0}.name`, 'App', /spec\.containers\[0\]\.name: Invalid value: "App": a lowercase RFC 1123 label/],
    [
      `${c0}.image`,
      ' busybox',
      /spec\.containers\[0\]\.image: Invalid value: " busybox": must not have leading or trailing whitespace/,
    ],
    // probes
    [
      `${c0}.livenessProbe.periodSeconds`,
      -1,
      /spec\.containers\[0\]\.livenessProbe\.periodSeconds: Invalid value: -1: must be greater than or equal to 0/,
    ],
    [
      `${c0}.livenessProbe.timeoutSeconds`,
      -1,
      /livenessProbe\.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0/,
    ],
    [`${c0}.livenessProbe.failureThreshold`, -3, /livenessProbe\.failureThreshold: Invalid value: -3/],
    [`${c0}.livenessProbe.initialDelaySeconds`, -3, /livenessProbe\.initialDelaySeconds: Invalid value: -3/],
    [
      `${c0}.livenessProbe.successThreshold`,
      2,
      /livenessProbe\.successThreshold: Invalid value: 2: must be 1/,
    ],
    [
      `${c0}.livenessProbe`,
      { periodSeconds: 5 },
      /livenessProbe: Required value: must specify a handler type/,
    ],
    [
      `${c0}.livenessProbe`,
      { exec: { command: ['true'] }, tcpSocket: { port: 80 } },
      /livenessProbe\.tcpSocket: Forbidden: may not specify more than 1 handler type/,
    ],
    [`${c0}.livenessProbe`, { exec: {} }, /livenessProbe\.exec\.command: Required value/],
    [
      `${c0}.livenessProbe`,
      { exec: { command: ['x'] }, terminationGracePeriodSeconds: 0 },
      /livenessProbe\.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0/,
    ],
    [
      `${c0}.readinessProbe.httpGet.port`,
      0,
      /readinessProbe\.httpGet\.port: Invalid value: 0: must be between 1 and 65535/,
    ],
    [`${c0}.readinessProbe.httpGet.port`, 'HTTP_X', /readinessProbe\.httpGet\.port: Invalid value: "HTTP_X"/],
    [
      `${c0}.readinessProbe.httpGet.scheme`,
      'FTP',
      /readinessProbe\.httpGet\.scheme: Unsupported value: "FTP"/,
    ],
    [`${c0}.readinessProbe`, { grpc: { port: 70000 } }, /readinessProbe\.grpc\.port: Invalid value: 70000/],
    // lifecycle
    [
      `${c0}.lifecycle.preStop.sleep.seconds`,
      0,
      /lifecycle\.preStop\.sleep\.seconds: Invalid value: 0: must be greater than 0 and less than terminationGracePeriodSeconds \(30\)/,
    ],
    [`${c0}.lifecycle.preStop.sleep.seconds`, 31, /lifecycle\.preStop\.sleep\.seconds: Invalid value: 31/],
    [`${c0}.lifecycle.preStop`, {}, /lifecycle\.preStop: Required value: must specify a handler type/],
    // quantities and resources
    [
      `${c0}.resources.limits.memory`,
      'lots',
      /resources\.limits\[memory\]: Invalid value: "lots": quantities must match the regular expression/,
    ],
    [
      `${c0}.resources.limits.memory`,
      '-1Gi',
      /resources\.limits\[memory\]: Invalid value: "-1Gi": must be greater than or equal to 0/,
    ],
    [
      `${c0}.resources.limits.memory`,
      '1e999999999',
      /resources\.limits\[memory\]: Invalid value: "1e999999999": quantity exponent out of range/,
    ],
    [
      `${c0}.resources`,
      { limits: { cpu: '1' }, requests: { cpu: '2' } },
      /resources\.requests: Invalid value: "2": must be less than or equal to cpu limit of 1/,
    ],
    [
      `${c0}.resources.limits`,
      { gpus: '1' },
      /resources\.limits: Invalid value: "gpus": must be a standard resource for containers/,
    ],
    [
      `${c0}.resources.limits`,
      { 'example.com/gpu': '0.5' },
      /resources\.limits\[example\.com\/gpu\]: Invalid value: "0\.5": must be an integer/,
    ],
    // grace periods and deadlines
    [
      'spec.terminationGracePeriodSeconds',
      -1,
      /spec\.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0/,
    ],
    [
      'spec.activeDeadlineSeconds',
      0,
      /spec\.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647/,
    ],
    // ports
    [
      `${c0}.ports[0].containerPort`,
      0,
      /ports\[0\]\.containerPort: Invalid value: 0: must be between 1 and 65535/,
    ],
    [`${c0}.ports[0].containerPort`, 65536, /ports\[0\]\.containerPort: Invalid value: 65536/],
    [`${c0}.ports[0].hostPort`, 70000, /ports\[0\]\.hostPort: Invalid value: 70000/],
    [`${c0}.ports[0].protocol`, 'ICMP', /ports\[0\]\.protocol: Unsupported value: "ICMP"/],
    [
      `${c0}.ports[0].name`,
      'a-very-long-port-name',
      /ports\[0\]\.name: Invalid value: "a-very-long-port-name": must be no more than 15 characters/,
    ],
    // volumes
    [
      'spec.volumes[2].configMap.defaultMode',
      0o1000,
      /spec\.volumes\[2\]\.configMap\.defaultMode: Invalid value: 512: must be a number between 0 and 0777 \(octal\), both inclusive/,
    ],
    [
      'spec.volumes[2].configMap.defaultMode',
      -1,
      /configMap\.defaultMode: Invalid value: -1: must be a number between 0 and 0777/,
    ],
    ['spec.volumes[2].configMap.items[0].mode', 0o1777, /configMap\.items\[0\]\.mode: Invalid value: 1023/],
    [
      'spec.volumes[2].configMap.items[0].path',
      '../etc/passwd',
      /configMap\.items\[0\]\.path: Invalid value: "\.\.\/etc\/passwd": must not contain '\.\.'/,
    ],
    [
      'spec.volumes[2].configMap.items[0].path',
      '/abs',
      /configMap\.items\[0\]\.path: Invalid value: "\/abs": must be a relative path/,
    ],
    [
      'spec.volumes[1].hostPath.path',
      '/var/../etc',
      /spec\.volumes\[1\]\.hostPath\.path: Invalid value: "\/var\/\.\.\/etc": must not contain '\.\.'/,
    ],
    ['spec.volumes[1].hostPath.path', '', /spec\.volumes\[1\]\.hostPath\.path: Required value/],
    [
      'spec.volumes[1].hostPath.type',
      'Folder',
      /spec\.volumes\[1\]\.hostPath\.type: Unsupported value: "Folder"/,
    ],
    [
      'spec.volumes[1].emptyDir',
      {},
      /spec\.volumes\[1\]\.emptyDir: Forbidden: may not specify more than 1 volume type/,
    ],
    ['spec.volumes[1].name', 'data', /spec\.volumes\[1\]\.name: Duplicate value: "data"/],
    [
      'spec.volumes[0].emptyDir',
      { sizeLimit: 'huge' },
      /spec\.volumes\[0\]\.emptyDir\.sizeLimit: Invalid value: "huge"/,
    ],
    [
      `${c0}.volumeMounts[0].subPath`,
      '../x',
      /volumeMounts\[0\]\.subPath: Invalid value: "\.\.\/x": must not contain '\.\.'/,
    ],
    [`${c0}.volumeMounts[0].name`, 'missing', /volumeMounts\[0\]\.name: Not found: "missing"/],
    [
      `${c0}.volumeMounts[0].mountPropagation`,
      'Bidirectional',
      /mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers/,
    ],
    // env
    [`${c0}.env[0].name`, '1A', /env\[0\]\.name: Invalid value: "1A": a valid environment variable name/],
    [`${c0}.env[1].valueFrom`, {}, /env\[1\]\.valueFrom: Invalid value: "": must specify one of/],
    [
      `${c0}.env[1].valueFrom.fieldRef.fieldPath`,
      'spec.secret',
      /env\[1\]\.valueFrom\.fieldRef\.fieldPath: Unsupported value: "spec\.secret"/,
    ],
    // sysctls
    [
      'spec.securityContext.sysctls[0].name',
      'net..bad',
      /spec\.securityContext\.sysctls\[0\]\.name: Invalid value: "net\.\.bad": must have at most 253 characters and match regex/,
    ],
    [
      'spec.securityContext.sysctls',
      [
        { name: 'kernel.msgmax', value: '1' },
        { name: 'kernel.msgmax', value: '2' },
      ],
      /sysctls\[1\]\.name: Duplicate value: "kernel\.msgmax"/,
    ],
    // policies
    ['spec.restartPolicy', 'Sometimes', /spec\.restartPolicy: Unsupported value: "Sometimes"/],
    [
      'spec.dnsPolicy',
      'None',
      /spec\.dnsConfig\.nameservers: Required value: must provide at least one DNS nameserver/,
    ],
    [`${c0}.imagePullPolicy`, 'Maybe', /imagePullPolicy: Unsupported value: "Maybe"/],
    [
      'spec.ephemeralContainers',
      [{ name: 'debug', image: 'busybox' }],
      /spec\.ephemeralContainers: Forbidden: cannot be set on create/,
    ],
    [
      'spec.hostAliases',
      [{ ip: 'not-an-ip', hostnames: ['a'] }],
      /spec\.hostAliases\[0\]\.ip: Invalid value: "not-an-ip"/,
    ],
    [
      'spec.tolerations',
      [{ key: 'k', operator: 'Exists', value: 'v' }],
      /spec\.tolerations\[0\]\.operator: .*value must be empty when `operator` is 'Exists'/,
    ],
  ];
  for (const [path, value, expected] of cases) {
    test(`${path} = ${JSON.stringify(value)}`, () => refusedAt(path, value, expected));
  }

  test('the 256 KiB annotation limit counts keys and values together', () => {
    const near = 'x'.repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES - 200);
    // Under the limit (with the kubelet's own config annotations added): accepted.
    staticPodFromObject(
      withField(validPod(), 'metadata.annotations', { 'example.com/big': near }),
      ORIGIN,
      'a',
    );
    const over = 'x'.repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
    const msg = refusal(withField(validPod(), 'metadata.annotations', { 'example.com/big': over }));
    assert.match(msg, /metadata\.annotations: Too long: must have at most 262144 bytes/);
    // The message stays short: values are cut.
    assert.ok(msg.length < 2000, `message of ${msg.length} characters`);
  });

  test('duplicate container names across init and app containers', () => {
    const pod = validPod();
    (pod.spec as Json).initContainers = [{ name: 'app', image: 'busybox' }];
    assert.match(refusal(pod), /spec\.containers\[0\]\.name: Duplicate value: "app"/);
  });

  test('init containers may not have probes or hooks unless they are sidecars', () => {
    const pod = validPod();
    (pod.spec as Json).initContainers = [
      { name: 'init', image: 'busybox', livenessProbe: { exec: { command: ['true'] } } },
      {
        name: 'side',
        image: 'busybox',
        restartPolicy: 'Always',
        livenessProbe: { exec: { command: ['true'] } },
      },
    ];
    const msg = refusal(pod);
    assert.match(
      msg,
      /spec\.initContainers\[0\]\.livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always/,
    );
    assert.doesNotMatch(msg, /initContainers\[1\]/);
  });

  test('a message lists at most 10 field errors', () => {
    const pod = validPod();
    (pod.spec as Json).containers = Array.from({ length: 30 }, (_, i) => ({
      name: `C${i}`,
      image: 'busybox',
    }));
    const msg = refusal(pod);
    assert.match(msg, /; and 20 more$/);
  });
});

describe('quantities', () => {
  test('valid forms parse; invalid ones say why', () => {
    for (const q of ['1', '100m', '64Mi', '1.5Gi', '1e3', '0.5', 2, '+1'])
      assert.equal(quantityProblem(q), undefined, String(q));
    for (const q of ['lots', '1.5.5', '1Mib', '', '1e1000']) assert.ok(quantityProblem(q), String(q));
    assert.ok(quantityProblem(Number.POSITIVE_INFINITY));
  });
});
