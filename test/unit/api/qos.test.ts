import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { computePodQOS, getPodQOS } from '../../../src/api/qos.js';

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
