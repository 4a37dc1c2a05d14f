import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, Pod, Quantity } from '../../../src/api/core-v1.js';
import { computePodQOS, getPodQOS, type PodQOSClass } from '../../../src/api/qos.js';
import { parseQuantity } from '../../../src/api/quantity.js';

function podWith(containers: Partial<Container>[], init: Partial<Container>[] = []): Pod {
  return {
    metadata: { name: 'p', namespace: 'default', uid: 'u' },
    spec: {
      containers: containers.map((c, i) => ({ name: `c${i}`, image: 'busybox', ...c })),
      initContainers: init.map((c, i) => ({ name: `i${i}`, image: 'busybox', ...c })),
    },
  };
}

describe('computePodQOS', () => {
  it('is BestEffort without cpu or memory requests and limits', () => {
    assert.equal(computePodQOS(podWith([{}])), 'BestEffort');
    assert.equal(
      computePodQOS(podWith([{ resources: { limits: { 'nvidia.com/gpu': '1' } } }])),
      'BestEffort',
    );
    assert.equal(computePodQOS(podWith([{ resources: { requests: { cpu: '0' } } }])), 'BestEffort');
  });

  it('is Guaranteed when every container limits cpu and memory and requests equal limits', () => {
    const guaranteed = {
      resources: { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '0.5', memory: '134217728' } },
    };
    assert.equal(computePodQOS(podWith([guaranteed, guaranteed])), 'Guaranteed');
  });

  it('defaults missing requests to limits, as the API server would', () => {
    assert.equal(
      computePodQOS(podWith([{ resources: { limits: { cpu: '1', memory: '1Gi' } } }])),
      'Guaranteed',
    );
  });

  it('is Burstable otherwise', () => {
    assert.equal(computePodQOS(podWith([{ resources: { requests: { cpu: '100m' } } }])), 'Burstable');
    assert.equal(
      computePodQOS(
        podWith([
          { resources: { requests: { cpu: '100m', memory: '1Gi' }, limits: { cpu: '200m', memory: '1Gi' } } },
        ]),
      ),
      'Burstable',
    );
    assert.equal(
      computePodQOS(podWith([{ resources: { limits: { cpu: '1', memory: '1Gi' } } }, {}])),
      'Burstable',
      'one container without limits',
    );
  });

  it('counts init containers', () => {
    const limited = { resources: { limits: { cpu: '1', memory: '1Gi' } } };
    assert.equal(computePodQOS(podWith([limited], [{}])), 'Burstable');
    assert.equal(computePodQOS(podWith([limited], [limited])), 'Guaranteed');
  });

  it('compares totals over the containers, not each container, as upstream', () => {
    // 1 + 2 requested against 2 + 1 limited: the totals are equal.
    const pod = podWith([
      { resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '2', memory: '1Gi' } } },
      { resources: { requests: { cpu: '2', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } } },
    ]);
    assert.equal(computePodQOS(pod), 'Guaranteed');
  });

  it('takes a quantity the API would refuse as absent', () => {
    assert.equal(computePodQOS(podWith([{ resources: { requests: { cpu: 'lots' } } }])), 'BestEffort');
    assert.equal(
      computePodQOS(podWith([{ resources: { limits: { cpu: '1', memory: 'lots' } } }])),
      'Burstable',
    );
  });

  it('agrees with the earlier implementation, written with maps, on random pods', () => {
    // The implementation before this one (upstream's shape: per-resource totals in maps, the limits
    // found per container; with the request defaulted to the limit, as this file does).
    const reference = (pod: Pod): PodQOSClass => {
      const positive = (q: Quantity | undefined): bigint | undefined => {
        if (q === undefined) return undefined;
        try {
          const v = parseQuantity(q).nano;
          return v > 0n ? v : undefined;
        } catch {
          return undefined;
        }
      };
      const requests = new Map<string, bigint>();
      const limits = new Map<string, bigint>();
      let guaranteed = true;
      for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? [])]) {
        const found = new Set<string>();
        for (const name of ['cpu', 'memory'] as const) {
          const limit = positive(c.resources?.limits?.[name]);
          const request = positive(c.resources?.requests?.[name] ?? c.resources?.limits?.[name]);
          if (request !== undefined) requests.set(name, (requests.get(name) ?? 0n) + request);
          if (limit !== undefined) {
            found.add(name);
            limits.set(name, (limits.get(name) ?? 0n) + limit);
          }
        }
        if (!found.has('cpu') || !found.has('memory')) guaranteed = false;
      }
      if (requests.size === 0 && limits.size === 0) return 'BestEffort';
      for (const [name, request] of requests) if (limits.get(name) !== request) guaranteed = false;
      return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
    };
    let seed = 20261127;
    const random = (n: number): number => {
      // 32-bit arithmetic: a product past 2^53 would lose the low bits and the sequence its randomness.
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 16) % n;
    };
    const quantities = [undefined, '0', '100m', '1', '1Gi', '512Mi', 'lots'];
    const resources = (): Record<string, string> | undefined => {
      const out: Record<string, string> = {};
      for (const name of ['cpu', 'memory', 'nvidia.com/gpu']) {
        const q = quantities[random(quantities.length)];
        if (q !== undefined) out[name] = q;
      }
      return random(4) === 0 ? undefined : out;
    };
    // Limits on both, requests absent, equal or not: the containers a Guaranteed pod is made of.
    const limited = (): Partial<Container> => {
      const limits = { cpu: random(2) ? '1' : '100m', memory: random(2) ? '1Gi' : '512Mi' };
      const requests = [undefined, { ...limits }, { cpu: '100m', memory: '1Gi' }][random(3)];
      return { resources: { limits, ...(requests ? { requests } : {}) } };
    };
    const container = (): Partial<Container> =>
      [() => ({}), () => ({ resources: { requests: resources(), limits: resources() } }), limited][
        random(3)
      ]!();
    const seen = new Set<PodQOSClass>();
    let initContainers = 0;
    const specs = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const pod = podWith(
        Array.from({ length: 1 + random(3) }, container),
        Array.from({ length: random(2) }, container),
      );
      const want = reference(pod);
      seen.add(want);
      initContainers += pod.spec.initContainers?.length ?? 0;
      specs.add(JSON.stringify(pod.spec));
      assert.equal(computePodQOS(pod), want, JSON.stringify(pod.spec));
    }
    // The generator itself is checked: a sequence that lost its randomness would try a few pods only.
    assert.deepEqual([...seen].sort(), ['BestEffort', 'Burstable', 'Guaranteed'], 'every class was tried');
    assert.ok(initContainers > 1000, `${initContainers} init containers`);
    assert.ok(specs.size > 2000, `${specs.size} different pods`);
    for (const odd of ['"0"', '"lots"', '"nvidia.com/gpu"'])
      assert.ok([...specs].filter((s) => s.includes(odd)).length > 100, `${odd} was tried`);
  });

  it('prefers the class already in the status', () => {
    const p = podWith([{}]);
    p.status = { qosClass: 'Burstable' };
    assert.equal(getPodQOS(p), 'Burstable');
  });
});
