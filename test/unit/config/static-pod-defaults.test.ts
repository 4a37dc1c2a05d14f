import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { defaultPullPolicy } from '../../../src/config/pod-defaults.js';
import {
  parseManifestDocument,
  staticPodFromObject,
  staticPodsFromObject,
  type StaticPodOrigin,
} from '../../../src/config/static-pod-defaults.js';
import { isKubeletError } from '../../../src/lib/errors.js';

const FILE: StaticPodOrigin = {
  source: 'file',
  location: '/etc/kubernetes/manifests/web.yaml',
  nodeName: 'node-a',
};

const WEB_YAML = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: { app: web }
spec:
  containers:
  - name: nginx
    image: nginx:1.25
    ports:
    - containerPort: 80
`;

function decode(text: string, origin: StaticPodOrigin = FILE) {
  return staticPodFromObject(parseManifestDocument(text, origin.location), origin, origin.location);
}

function problems(text: string, origin: StaticPodOrigin = FILE): string {
  try {
    decode(text, origin);
  } catch (err) {
    assert.ok(isKubeletError(err, 'INVALID_MANIFEST'), String(err));
    return err.message;
  }
  assert.fail('expected the manifest to be refused');
}

describe('static pod defaults', () => {
  test('upstream applyDefaults: name suffix, namespace, node, annotations, toleration, phase', () => {
    const pod = decode(WEB_YAML);
    assert.equal(pod.metadata.name, 'web-node-a');
    assert.equal(pod.metadata.namespace, 'default');
    assert.match(pod.metadata.uid ?? '', /^[0-9a-f]{32}$/);
    assert.equal(pod.spec.nodeName, 'node-a');
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.hash'], pod.metadata.uid);
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    assert.deepEqual(pod.spec.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
    assert.equal(pod.status?.phase, 'Pending');
    assert.deepEqual(pod.metadata.labels, { app: 'web' });
  });

  test('the API server’s pod spec defaults', () => {
    const pod = decode(WEB_YAML);
    assert.equal(pod.spec.restartPolicy, 'Always');
    assert.equal(pod.spec.terminationGracePeriodSeconds, 30);
    assert.equal(pod.spec.dnsPolicy, 'ClusterFirst');
    assert.equal(pod.spec.schedulerName, 'default-scheduler');
    assert.equal(pod.spec.enableServiceLinks, true);
    assert.deepEqual(pod.spec.securityContext, {});
    const c = pod.spec.containers[0]!;
    assert.equal(c.terminationMessagePath, '/dev/termination-log');
    assert.equal(c.terminationMessagePolicy, 'File');
    assert.equal(c.imagePullPolicy, 'IfNotPresent');
    assert.deepEqual(c.ports, [{ containerPort: 80, protocol: 'TCP' }]);
  });

  test('values written in the manifest are kept', () => {
    const pod = decode(`
apiVersion: v1
kind: Pod
metadata: { name: job, namespace: kube-system, uid: 11111111-2222-3333-4444-555555555555 }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  dnsPolicy: Default
  tolerations: [{ operator: Exists, effect: NoExecute }]
  containers: [{ name: c, image: busybox, imagePullPolicy: Never }]
`);
    assert.equal(pod.metadata.uid, '11111111-2222-3333-4444-555555555555');
    assert.equal(
      pod.metadata.annotations?.['kubernetes.io/config.hash'],
      '11111111-2222-3333-4444-555555555555',
    );
    assert.equal(pod.metadata.namespace, 'kube-system');
    assert.equal(pod.spec.restartPolicy, 'Never');
    assert.equal(pod.spec.terminationGracePeriodSeconds, 5);
    assert.equal(pod.spec.dnsPolicy, 'Default');
    assert.equal(pod.spec.containers[0]!.imagePullPolicy, 'Never');
    assert.equal(pod.spec.tolerations?.length, 1, 'the NoExecute toleration is not added twice');
  });

  test('probes, resources, volumes, env and host-network ports', () => {
    const pod = decode(`
apiVersion: v1
kind: Pod
metadata: { name: p }
spec:
  hostNetwork: true
  volumes: [{ name: scratch }, { name: cfg, configMap: { name: x } }, { name: host, hostPath: { path: /var/lib/x } }]
  containers:
  - name: c
    image: registry.local:5000/app
    ports: [{ containerPort: 8080 }]
    resources: { limits: { cpu: 500m, memory: 64Mi }, requests: { cpu: 100m } }
    livenessProbe: { httpGet: { port: 8080 } }
    env: [{ name: NODE, valueFrom: { fieldRef: { fieldPath: spec.nodeName } } }]
`);
    const c = pod.spec.containers[0]!;
    assert.equal(c.imagePullPolicy, 'Always', 'a registry port is not a tag');
    assert.deepEqual(c.ports, [{ containerPort: 8080, protocol: 'TCP', hostPort: 8080 }]);
    assert.deepEqual(c.resources?.requests, { cpu: '100m', memory: '64Mi' });
    assert.deepEqual(c.livenessProbe, {
      httpGet: { port: 8080, path: '/', scheme: 'HTTP' },
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    assert.equal(c.env?.[0]?.valueFrom?.fieldRef?.apiVersion, 'v1');
    assert.deepEqual(pod.spec.volumes, [
      { name: 'scratch', emptyDir: {} },
      { name: 'cfg', configMap: { name: 'x', defaultMode: 0o644 } },
      { name: 'host', hostPath: { path: '/var/lib/x', type: '' } },
    ]);
  });

  test('imagePullPolicy follows the tag', () => {
    assert.equal(defaultPullPolicy('nginx'), 'Always');
    assert.equal(defaultPullPolicy('nginx:latest'), 'Always');
    assert.equal(defaultPullPolicy('nginx:1.25'), 'IfNotPresent');
    assert.equal(defaultPullPolicy('localhost:5000/nginx'), 'Always');
    assert.equal(defaultPullPolicy('localhost:5000/nginx:v1'), 'IfNotPresent');
    assert.equal(defaultPullPolicy('nginx@sha256:' + 'a'.repeat(64)), 'IfNotPresent');
  });
});

describe('static pod UIDs', () => {
  test('stable across restarts and formatting: same content, same UID', () => {
    const a = decode(WEB_YAML);
    const b = decode(WEB_YAML);
    const json = JSON.stringify({
      spec: { containers: [{ ports: [{ containerPort: 80 }], image: 'nginx:1.25', name: 'nginx' }] },
      metadata: { labels: { app: 'web' }, name: 'web' },
      kind: 'Pod',
      apiVersion: 'v1',
    });
    const c = decode(json);
    assert.equal(a.metadata.uid, b.metadata.uid);
    assert.equal(a.metadata.uid, c.metadata.uid, 'key order and YAML vs JSON do not matter');
  });

  test('different on each node, for each file path, and for each content', () => {
    const base = decode(WEB_YAML).metadata.uid;
    assert.notEqual(decode(WEB_YAML, { ...FILE, nodeName: 'node-b' }).metadata.uid, base);
    assert.notEqual(
      decode(WEB_YAML, { ...FILE, location: '/etc/kubernetes/manifests/web2.yaml' }).metadata.uid,
      base,
    );
    assert.notEqual(decode(WEB_YAML.replace('nginx:1.25', 'nginx:1.26')).metadata.uid, base);
  });

  test('pinned: md5(sorted-key JSON + "host:<node>" + "file:<path>"), checked with md5sum; a change would restart every static pod', () => {
    assert.equal(decode(WEB_YAML).metadata.uid, 'db1ca8bb46cfa3f5ea8672fdaeb131a5');
  });

  test('URL pods: derived from the URL, not the node; no NoExecute toleration', () => {
    const url = 'http://127.0.0.1:8080/pods';
    const onA = decode(WEB_YAML, { source: 'http', location: url, nodeName: 'node-a' });
    const onB = decode(WEB_YAML, { source: 'http', location: url, nodeName: 'node-b' });
    assert.equal(onA.metadata.uid, onB.metadata.uid);
    assert.equal(onA.metadata.annotations?.['kubernetes.io/config.source'], 'http');
    assert.equal(onA.spec.tolerations, undefined);
  });
});

describe('static pod manifests refused', () => {
  test('apiVersion v1 and kind Pod are required', () => {
    assert.match(problems('metadata: { name: x }\nspec: { containers: [] }\n'), /Object 'Kind' is missing/);
    assert.match(
      problems(WEB_YAML.replace('kind: Pod', 'kind: Deployment')),
      /expected apiVersion "v1" and kind "Pod", got apiVersion "v1" and kind "Deployment"/,
    );
    assert.match(
      problems(WEB_YAML.replace('apiVersion: v1', 'apiVersion: apps/v1')),
      /got apiVersion "apps\/v1"/,
    );
  });

  test('YAML errors, empty files and several documents', () => {
    assert.match(
      problems('apiVersion: v1\nkind: Pod\nmetadata: [\n'),
      /^\/etc\/kubernetes\/manifests\/web\.yaml: /,
    );
    assert.match(problems(''), /the manifest is empty/);
    assert.match(problems(`${WEB_YAML}\n---\n${WEB_YAML}`), /holds 2 YAML documents; put one pod per file/);
  });

  test('a name is needed', () => {
    assert.match(
      problems('apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: { containers: [{ name: c, image: i }] }\n'),
      /invalid pod: name is needed for the pod/,
    );
  });

  test('field errors in upstream’s form, all at once', () => {
    const msg = problems(`
apiVersion: v1
kind: Pod
metadata: { name: Bad_Name }
spec:
  restartPolicy: Sometimes
  containers:
  - name: app
  - name: app
    image: busybox
  - name: Upper
    image: busybox
    ports: [{ containerPort: 70000 }]
    volumeMounts: [{ name: nope, mountPath: /x }]
`);
    assert.match(msg, /metadata\.name: Invalid value: "Bad_Name-node-a": a lowercase RFC 1123 subdomain/);
    assert.match(msg, /spec\.containers\[0\]\.image: Required value/);
    assert.match(msg, /spec\.containers\[1\]\.name: Duplicate value: "app"/);
    assert.match(msg, /spec\.containers\[2\]\.name: Invalid value: "Upper": a lowercase RFC 1123 label/);
    assert.match(msg, /spec\.containers\[2\]\.ports\[0\]\.containerPort: Invalid value: 70000/);
    assert.match(msg, /spec\.containers\[2\]\.volumeMounts\[0\]\.name: Not found: "nope"/);
    assert.match(msg, /spec\.restartPolicy: Unsupported value: "Sometimes"/);
  });

  test('no containers, and structurally wrong fields', () => {
    assert.match(
      problems('apiVersion: v1\nkind: Pod\nmetadata: { name: x }\nspec: { containers: [] }\n'),
      /spec\.containers: Required value/,
    );
    assert.match(
      problems('apiVersion: v1\nkind: Pod\nmetadata: { name: x }\nspec: {}\n'),
      /spec\.containers: Required value/,
    );
    assert.match(
      problems('apiVersion: v1\nkind: Pod\nmetadata: { name: x }\nspec: { containers: nginx }\n'),
      /spec\.containers: Invalid type: expected list, got string/,
    );
    assert.match(
      problems('apiVersion: v1\nkind: Pod\nmetadata: { name: x }\n'),
      /spec\.containers: Required value/,
    );
  });
});

describe('PodList from the URL source', () => {
  const origin: StaticPodOrigin = { source: 'http', location: 'http://h/pods', nodeName: 'n1' };

  test('items may omit kind and apiVersion', () => {
    const pods = staticPodsFromObject(
      {
        apiVersion: 'v1',
        kind: 'PodList',
        items: [
          { metadata: { name: 'a' }, spec: { containers: [{ name: 'c', image: 'i' }] } },
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'b' },
            spec: { containers: [{ name: 'c', image: 'i' }] },
          },
        ],
      },
      origin,
      origin.location,
    );
    assert.deepEqual(
      pods.map((p) => p.metadata.name),
      ['a-n1', 'b-n1'],
    );
    assert.notEqual(pods[0]!.metadata.uid, pods[1]!.metadata.uid);
  });

  test('one bad item refuses the whole list', () => {
    assert.throws(
      () =>
        staticPodsFromObject(
          {
            apiVersion: 'v1',
            kind: 'PodList',
            items: [{ metadata: { name: 'a' }, spec: { containers: [{ name: 'c' }] } }],
          },
          origin,
          origin.location,
        ),
      /items\[0\]: invalid pod: spec\.containers\[0\]\.image: Required value/,
    );
  });
});
