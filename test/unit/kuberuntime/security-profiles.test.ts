import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import {
  appArmorSecurityProfile,
  getAppArmorProfile,
  isAppArmorRequired,
  validateAppArmorProfiles,
} from '../../../src/kuberuntime/apparmor.js';
import { generateLinuxContainerSecurityContext } from '../../../src/kuberuntime/security-context.js';

const opts = { image: undefined, seccompDefault: false, seccompProfileRoot: '/var/lib/kubelet/seccomp' };

function pod(
  container: Container,
  over: Partial<Pod['spec']> = {},
  annotations?: Record<string, string>,
): Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid: 'u', ...(annotations ? { annotations } : {}) },
    spec: { containers: [container], ...over },
  };
}

describe('seccomp to CRI (v1.30: the SecurityProfile field only)', () => {
  test('Localhost resolves under <root-dir>/seccomp; the container field wins over the pod', () => {
    const c: Container = {
      name: 'c',
      securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/a.json' } },
    };
    const sc = generateLinuxContainerSecurityContext(
      pod(c, { securityContext: { seccompProfile: { type: 'Unconfined' } } }),
      c,
      opts,
    );
    assert.deepEqual(sc.seccomp, {
      profileType: 'Localhost',
      localhostRef: '/var/lib/kubelet/seccomp/profiles/a.json',
    });
  });

  test('the pod field applies when the container has none; none at all is Unconfined or, with --seccomp-default, RuntimeDefault', () => {
    const c: Container = { name: 'c' };
    const fromPod = pod(c, { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } });
    assert.equal(
      generateLinuxContainerSecurityContext(fromPod, c, opts).seccomp?.profileType,
      'RuntimeDefault',
    );
    assert.equal(generateLinuxContainerSecurityContext(pod(c), c, opts).seccomp?.profileType, 'Unconfined');
    assert.equal(
      generateLinuxContainerSecurityContext(pod(c), c, { ...opts, seccompDefault: true }).seccomp
        ?.profileType,
      'RuntimeDefault',
    );
  });

  test('the deprecated seccomp annotations are not read (removed from the kubelet before v1.30)', () => {
    const c: Container = { name: 'c' };
    const p = pod(c, {}, { 'seccomp.security.alpha.kubernetes.io/pod': 'runtime/default' });
    assert.equal(generateLinuxContainerSecurityContext(p, c, opts).seccomp?.profileType, 'Unconfined');
  });

  test('Localhost without a profile name is a CreateContainerConfigError in upstream words', () => {
    const c: Container = { name: 'c', securityContext: { seccompProfile: { type: 'Localhost' } } };
    assert.throws(
      () => generateLinuxContainerSecurityContext(pod(c), c, opts),
      /localhostProfile must be set if seccompProfile type is Localhost\./,
    );
  });
});

describe('AppArmor to CRI', () => {
  test('the field, then the beta annotation, then the pod field; both the profile and the string form', () => {
    const c: Container = { name: 'c' };
    const byAnnotation = pod(
      c,
      { securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } },
      { 'container.apparmor.security.beta.kubernetes.io/c': 'localhost/k8s-deny' },
    );
    const sc = generateLinuxContainerSecurityContext(byAnnotation, c, opts);
    assert.deepEqual(sc.apparmor, { profileType: 'Localhost', localhostRef: 'k8s-deny' });
    assert.equal(sc.apparmorProfile, 'localhost/k8s-deny');

    const withField: Container = { name: 'c', securityContext: { appArmorProfile: { type: 'Unconfined' } } };
    assert.deepEqual(getAppArmorProfile(byAnnotation, withField), { type: 'Unconfined' });
    assert.deepEqual(getAppArmorProfile(pod(c, byAnnotation.spec), c), { type: 'RuntimeDefault' });
    assert.deepEqual(appArmorSecurityProfile({ type: 'RuntimeDefault' }), {
      apparmor: { profileType: 'RuntimeDefault', localhostRef: '' },
      apparmorProfile: 'runtime/default',
    });
  });

  test('no profile anywhere sends nothing; an unknown annotation value is ignored', () => {
    const c: Container = { name: 'c' };
    const sc = generateLinuxContainerSecurityContext(
      pod(c, {}, { 'container.apparmor.security.beta.kubernetes.io/c': 'bogus' }),
      c,
      opts,
    );
    assert.equal(sc.apparmor, undefined);
    assert.equal(sc.apparmorProfile, undefined);
  });

  test('required unless everything is unconfined; an empty Localhost name is refused', () => {
    const c: Container = { name: 'c' };
    assert.equal(isAppArmorRequired(pod(c)), false);
    assert.equal(
      isAppArmorRequired(pod(c, {}, { 'container.apparmor.security.beta.kubernetes.io/c': 'unconfined' })),
      false,
    );
    assert.equal(
      isAppArmorRequired(pod(c, { securityContext: { appArmorProfile: { type: 'Localhost' } } })),
      true,
    );
    assert.match(
      validateAppArmorProfiles(
        pod(c, { securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: ' ' } } }),
      ) ?? '',
      /^invalid empty AppArmor profile name/,
    );
  });
});

describe('ephemeral containers: the target PID namespace', () => {
  test('TARGET with the target ID when each container has its own PID namespace', () => {
    const c: Container = { name: 'debug' };
    const sc = generateLinuxContainerSecurityContext(pod(c), c, { ...opts, pidNamespaceTargetId: 'abc' });
    assert.deepEqual(sc.namespaceOptions, { network: 'POD', pid: 'TARGET', ipc: 'POD', targetId: 'abc' });
  });

  test('a pod that shares its process namespace keeps POD', () => {
    const c: Container = { name: 'debug' };
    const sc = generateLinuxContainerSecurityContext(pod(c, { shareProcessNamespace: true }), c, {
      ...opts,
      pidNamespaceTargetId: 'abc',
    });
    assert.equal(sc.namespaceOptions?.pid, 'POD');
    assert.equal(sc.namespaceOptions?.targetId, undefined);
  });
});
