import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { validateEphemeralContainersUpdate } from '../../../src/config/pod-validation.js';
import { fieldErrorText } from '../../../src/config/field-errors.js';

function pod(ephemeral: Pod['spec']['ephemeralContainers']): Pod {
  return {
    metadata: { name: 'web', namespace: 'ns' },
    spec: {
      initContainers: [{ name: 'setup', image: 'busybox' }],
      containers: [{ name: 'app', image: 'busybox' }],
      ...(ephemeral ? { ephemeralContainers: ephemeral } : {}),
    },
  };
}

const errors = (next: Pod, old: Pod): string[] =>
  validateEphemeralContainersUpdate(next, old).map(fieldErrorText);

describe('validateEphemeralContainersUpdate', () => {
  test('a debug container with a target is accepted', () => {
    assert.deepEqual(
      errors(pod([{ name: 'debug', image: 'busybox', targetContainerName: 'app' }]), pod(undefined)),
      [],
    );
  });

  test('names are unique across all containers; ports, probes, resources and lifecycle are refused', () => {
    const bad = pod([
      {
        name: 'setup',
        image: 'busybox',
        ports: [{ containerPort: 80 }],
        readinessProbe: { exec: { command: ['true'] } },
        resources: { limits: { cpu: '1' } },
        lifecycle: { preStop: { exec: { command: ['true'] } } },
        targetContainerName: 'nope',
      },
    ]);
    assert.deepEqual(errors(bad, pod(undefined)), [
      'spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container',
      'spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container',
      'spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container',
      'spec.ephemeralContainers[0].lifecycle: Forbidden: cannot be set for an Ephemeral Container',
      'spec.ephemeralContainers[0].name: Duplicate value: "setup"',
      'spec.ephemeralContainers[0].targetContainerName: Not found: "nope"',
    ]);
  });

  test('existing ones may be neither changed nor removed', () => {
    const old = pod([{ name: 'debug', image: 'busybox' }]);
    assert.deepEqual(errors(pod([{ name: 'debug', image: 'busybox:2' }]), old), [
      'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debug" may not be changed',
    ]);
    assert.deepEqual(errors(pod(undefined), old), [
      'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debug" may not be removed',
    ]);
  });
});
