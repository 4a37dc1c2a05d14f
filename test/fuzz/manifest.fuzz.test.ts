/**
 * Property-based fuzzing of what a static pod source does with a manifest: parse (YAML 1.1 or
 * JSON), check Go's field types, apply the defaults, validate as ValidatePodCreate. Whatever the
 * input, the outcome is a pod that is valid all through, or an INVALID_MANIFEST refusal naming a
 * field (or the document's problem); nothing else is thrown and no case takes long.
 *
 * A few hundred cases per property in the unit suite; `npm run fuzz` runs 10,000 (FUZZ_RUNS).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import fc from 'fast-check';
import { stringify } from 'yaml';

import type { Pod } from '../../src/api/core-v1.js';
import { isSafePodUid } from '../../src/api/pod-uid.js';
import { decodeManifestSync } from '../../src/config/manifest-decoder.js';
import { decodePod } from '../../src/config/pod-schema.js';
import { validatePodFields } from '../../src/config/pod-validation.js';
import { staticPodsFromObject, type StaticPodOrigin } from '../../src/config/static-pod-defaults.js';
import { isKubeletError } from '../../src/lib/errors.js';
import { fuzzRuns } from './fuzz-runs.js';

const RUNS = fuzzRuns();
/** No single case may take this long: a hang or a super-linear path is a failure. */
const MAX_CASE_MS = 2_000;
const ORIGIN: StaticPodOrigin = {
  source: 'file',
  location: '/etc/kubernetes/manifests/fuzz.yaml',
  nodeName: 'node-a',
};

function validPod(): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web',
      namespace: 'default',
      labels: { app: 'web' },
      annotations: { 'example.com/a': 'b' },
    },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      securityContext: { runAsUser: 1000, sysctls: [{ name: 'net.ipv4.ip_forward', value: '1' }] },
      volumes: [
        { name: 'data', emptyDir: { sizeLimit: '1Gi' } },
        { name: 'logs', hostPath: { path: '/var/log', type: 'Directory' } },
        {
          name: 'cfg',
          configMap: { name: 'cfg', defaultMode: 0o644, items: [{ key: 'k', path: 'p', mode: 0o400 }] },
        },
      ],
      initContainers: [{ name: 'init', image: 'busybox', command: ['true'] }],
      containers: [
        {
          name: 'app',
          image: 'busybox:1.36',
          command: ['sleep', '3600'],
          args: ['x'],
          ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
          env: [
            { name: 'A', value: '1' },
            { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          ],
          resources: { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '100m' } },
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'cfg', mountPath: '/cfg', readOnly: true },
          ],
          livenessProbe: { exec: { command: ['true'] }, periodSeconds: 5, failureThreshold: 3 },
          readinessProbe: { httpGet: { path: '/', port: 'http' }, timeoutSeconds: 2 },
          startupProbe: { tcpSocket: { port: 8080 } },
          lifecycle: { preStop: { sleep: { seconds: 3 } }, postStart: { exec: { command: ['true'] } } },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      tolerations: [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }],
    },
  };
}

/** Every path of a JSON value, as lists of keys and indexes. */
function paths(v: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [prefix];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...prefix, i])));
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...prefix, k]));
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown, remove: boolean): unknown {
  if (path.length === 0) return value;
  let node = root as Record<string | number, unknown>;
  for (const p of path.slice(0, -1)) node = node[p] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (remove && !Array.isArray(node)) delete node[last];
  else node[last] = value;
  return root;
}

/** Values hostile manifests are made of, plus anything JSON. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(-1, 0, 1, 0.001, 1.5, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e308, -0, 0o777, 0o1000),
  fc.constantFrom(
    '',
    ' ',
    'x',
    'yes',
    '../../x',
    '/',
    'lots',
    '1e999999999',
    '-1Gi',
    'a/b/c',
    'A_B',
    'x'.repeat(300),
  ),
  fc.constantFrom(null, true, false, [], {}, [null], { '': '' }),
  fc.jsonValue({ maxDepth: 3 }),
);

type Outcome = { pods: Pod[] } | { refused: string };

function outcome(obj: unknown): Outcome {
  try {
    return { pods: staticPodsFromObject(obj, ORIGIN, ORIGIN.location) };
  } catch (err) {
    assert.ok(
      isKubeletError(err, 'INVALID_MANIFEST'),
      `threw something other than INVALID_MANIFEST: ${String(err)}`,
    );
    return { refused: err.message };
  }
}

/** What must hold of every pod a source would hand on: what the prober, runtime and volumes assume. */
function assertUsable(pod: Pod): void {
  assert.deepEqual(decodePod(structuredClone(pod)).errors, [], 'an accepted pod has Go field types');
  assert.deepEqual(validatePodFields(pod), [], 'an accepted pod is valid');
  assert.ok(isSafePodUid(pod.metadata.uid ?? ''), 'its UID is one path element');
  assert.ok(Array.isArray(pod.spec.containers) && pod.spec.containers.length > 0);
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    assert.equal(typeof c.name, 'string');
    assert.ok(c.command === undefined || c.command.every((x) => typeof x === 'string'));
    for (const p of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
      if (!p) continue;
      // The prober schedules by these: they must be whole and positive.
      for (const n of [p.periodSeconds, p.timeoutSeconds, p.successThreshold, p.failureThreshold])
        assert.ok(Number.isInteger(n) && n! >= 1, `probe field ${n}`);
    }
  }
  assert.ok(JSON.stringify(pod).length > 0);
}

function timed<T>(fn: () => T): T {
  const start = performance.now();
  const result = fn();
  const ms = performance.now() - start;
  assert.ok(ms < MAX_CASE_MS, `one case took ${Math.round(ms)} ms`);
  return result;
}

// A refusal names a field in upstream's form, or says what is wrong with the document as a whole.
// A map key is shown in brackets as it is, so it may hold a bracket itself (`limits[]]`).
const NAMES_A_FIELD = /invalid pod: ([A-Za-z]+)(\.[A-Za-z]+|\[.*?\])*: /;
const DOCUMENT_PROBLEM =
  /Object 'Kind' is missing|expected a Pod object|expected apiVersion|name is needed|items must be a list|expected a v1 Pod|expected apiVersion "v1" for PodList/;

describe('manifest fuzzing', () => {
  test('mutations of a valid pod: a valid pod or a refusal naming a field', () => {
    const base = validPod();
    const allPaths = paths(base).filter((p) => p.length > 0);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: allPaths.length - 1 }), hostileValue, fc.boolean()), {
          minLength: 1,
          maxLength: 4,
        }),
        (mutations) => {
          let pod: unknown = validPod();
          for (const [i, value, remove] of mutations) {
            const path = allPaths[i]!;
            try {
              pod = setAt(pod, path, structuredClone(value), remove);
            } catch {
              // An earlier mutation removed this path's parent: skip it.
            }
          }
          const result = timed(() => outcome(pod));
          if ('pods' in result) result.pods.forEach(assertUsable);
          else assert.match(result.refused, new RegExp(`${NAMES_A_FIELD.source}|${DOCUMENT_PROBLEM.source}`));
        },
      ),
      { numRuns: RUNS },
    );
  });

  test('arbitrary JSON values: never thrown past validation', () => {
    const podLike = fc.record(
      {
        apiVersion: fc.oneof(fc.constant('v1'), fc.jsonValue({ maxDepth: 1 })),
        kind: fc.oneof(fc.constantFrom('Pod', 'PodList'), fc.jsonValue({ maxDepth: 1 })),
        metadata: fc.oneof(
          fc.record({ name: fc.oneof(fc.constant('p'), fc.jsonValue({ maxDepth: 1 })) }),
          fc.jsonValue({ maxDepth: 2 }),
        ),
        spec: fc.jsonValue({ maxDepth: 4 }),
        items: fc.jsonValue({ maxDepth: 4 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.oneof(podLike, fc.anything({ maxDepth: 3 })), (obj) => {
        const result = timed(() => outcome(obj));
        if ('pods' in result) result.pods.forEach(assertUsable);
      }),
      { numRuns: RUNS },
    );
  });

  test('arbitrary and corrupted YAML text: a pod or INVALID_MANIFEST, never a throw', () => {
    const goodYaml = stringify(validPod());
    const corrupted = fc
      .tuple(fc.nat({ max: goodYaml.length }), fc.nat({ max: 20 }), fc.string({ maxLength: 20 }))
      .map(([at, cut, insert]) => goodYaml.slice(0, at) + insert + goodYaml.slice(at + cut));
    const yamlish = fc.stringMatching(/^[-a-z0-9:{}[\],&*!|>'"#%@ \n]{0,200}$/);
    fc.assert(
      fc.property(fc.oneof(corrupted, yamlish, fc.string({ maxLength: 300 })), (text) => {
        const result = timed(() =>
          decodeManifestSync({ text, origin: ORIGIN, what: ORIGIN.location, shape: 'podOrList' }),
        );
        if ('pods' in result) result.pods.forEach(assertUsable);
        else assert.equal(typeof result.error, 'string');
      }),
      { numRuns: RUNS },
    );
  });

  test('YAML bombs and deep nesting are refused quickly', () => {
    const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 12; i++)
      bomb.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(',')}]`,
      );
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    for (const text of [bomb.join('\n'), deep, `spec: ${deep}`]) {
      const result = timed(() =>
        decodeManifestSync({ text, origin: ORIGIN, what: 'bomb.yaml', shape: 'pod' }),
      );
      assert.ok('error' in result);
    }
  });
});
