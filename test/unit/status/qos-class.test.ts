import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { parseQuantityNano } from '../../../src/status/parse-quantity.js';
import { computePodQOS, getPodQOS } from '../../../src/status/qos-class.js';

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

  it('prefers the class already in the status', () => {
    const p = podWith([{}]);
    p.status = { qosClass: 'Burstable' };
    assert.equal(getPodQOS(p), 'Burstable');
  });
});

describe('parseQuantityNano', () => {
  it('parses decimal, binary and exponent forms exactly', () => {
    assert.equal(parseQuantityNano('1'), 1_000_000_000n);
    assert.equal(parseQuantityNano('100m'), 100_000_000n);
    assert.equal(parseQuantityNano('0.1'), 100_000_000n);
    assert.equal(parseQuantityNano('1Ki'), 1024n * 1_000_000_000n);
    assert.equal(parseQuantityNano('1.5Gi'), 1610612736n * 1_000_000_000n);
    assert.equal(parseQuantityNano('1e3'), 1000n * 1_000_000_000n);
    assert.equal(parseQuantityNano('2k'), 2000n * 1_000_000_000n);
    assert.equal(parseQuantityNano(250), 250n * 1_000_000_000n);
    assert.equal(parseQuantityNano('1n'), 1n);
  });

  it('rejects what is not a quantity', () => {
    assert.throws(() => parseQuantityNano('abc'), /invalid quantity/);
    assert.throws(() => parseQuantityNano('1Zi'), /invalid quantity suffix/);
    assert.throws(() => parseQuantityNano(''), /invalid quantity/);
  });
});
