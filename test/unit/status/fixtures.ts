/**
 * Realistic runtime states of a pod, as kuberuntime reads them back from containerd, for the status tests.
 */
import type { Container, Pod, PodSpec } from '../../../src/api/core-v1.js';
import { CONFIG_SOURCE_ANNOTATION } from '../../../src/api/pod-source.js';
import type { PodSandboxStatus } from '../../../src/cri/types.js';
import type { KubeContainerStatus, KubePodStatus } from '../../../src/kuberuntime/types.js';

/** 2026-11-21T06:50:00Z */
export const T0 = Date.UTC(2026, 10, 21, 6, 50, 0);
export const at = (seconds: number): number => T0 + seconds * 1000;
export const iso = (seconds: number): string => new Date(at(seconds)).toISOString().replace('.000Z', 'Z');

export const UID = '8d3b4c36-5f0e-4b8e-9d3a-0c1f2e3d4a5b';
export const BUSYBOX_REF = 'sha256:3f57d9401f8d42f986df300f0c69192fc41da28ccc8d797829467780db3dd741';

export function pod(
  spec: Partial<PodSpec> & { containers?: Container[] },
  source: 'api' | 'file' = 'api',
): Pod {
  return {
    metadata: {
      name: 'web',
      namespace: 'default',
      uid: UID,
      annotations: { [CONFIG_SOURCE_ANNOTATION]: source },
    },
    spec: {
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      ...spec,
      containers: spec.containers ?? [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }],
    },
  };
}

export function sandbox(
  state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY',
  ip = '10.88.0.5',
  attempt = 0,
): PodSandboxStatus {
  return {
    id: `5a1e0c${attempt}b7d9f2e4c6a8b0d1f3e5a7c9b1d3f5e7a9c1b3d5f7e9a1c3b5d7f9e1a3c5b7d9f`,
    metadata: { name: 'web', uid: UID, namespace: 'default', attempt },
    state,
    createdAt: at(0) * 1e6,
    network: { ip: state === 'SANDBOX_READY' ? ip : '', additionalIps: [] },
    linux: { namespaces: { options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
    labels: {},
    annotations: {},
    runtimeHandler: '',
  };
}

let seq = 0;
export function container(
  name: string,
  extra: Partial<KubeContainerStatus> & Pick<KubeContainerStatus, 'state'>,
): KubeContainerStatus {
  const id =
    extra.id ??
    `${(++seq).toString(16).padStart(4, '0')}e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7`;
  return {
    containerID: `containerd://${id}`,
    id,
    name,
    createdAtMs: at(1),
    startedAtMs: 0,
    finishedAtMs: 0,
    exitCode: 0,
    image: 'busybox:1.36',
    imageRef: BUSYBOX_REF,
    hash: '3b0c1f2e',
    restartCount: 0,
    reason: '',
    message: '',
    podSandboxId: sandbox('SANDBOX_READY').id,
    ...extra,
  };
}

export function runtimeStatus(
  containers: KubeContainerStatus[],
  sandboxes: PodSandboxStatus[] = [sandbox('SANDBOX_READY')],
): KubePodStatus {
  const ready = sandboxes.find((s) => s.state === 'SANDBOX_READY');
  return {
    uid: UID,
    name: 'web',
    namespace: 'default',
    ips: ready?.network?.ip ? [ready.network.ip] : [],
    sandboxStatuses: sandboxes,
    containerStatuses: containers,
    timestampMs: at(5),
  };
}
