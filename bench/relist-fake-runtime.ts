/**
 * The runtime side of bench/relist: the fake CRI server in a process of its own, filled with pods
 * whose labels and annotations are the ones the kubelet writes. In its own process so that the
 * bench's process.cpuUsage counts only the kubelet's side of each relist (client, decoding,
 * conversion, PLEG), as it would be with containerd, and so that the server does not share the
 * kubelet's event loop.
 *
 * Driven by its parent over the IPC channel:
 *   { cmd: 'populate', pods, containersPerPod } → { endpoint }
 *   { cmd: 'churn', count }                     → { changed }   (toggles `count` containers running ⇄ exited)
 *   { cmd: 'exit' }
 */
import { randomUUID } from 'node:crypto';
import type { Container as V1Container, Pod } from '../src/api/core-v1.js';
import { FakeCriServer } from '../src/cri/testing/fake-cri-server.js';
import type { ContainerConfig } from '../src/cri/types.js';
import { hashContainer } from '../src/kuberuntime/container-hash.js';
import { withContainerDefaults } from '../src/kuberuntime/container-config.js';
import { newContainerAnnotations, newContainerLabels } from '../src/kuberuntime/labels.js';
import { generatePodSandboxConfig } from '../src/kuberuntime/sandbox-config.js';

export type RelistRuntimeRequest =
  | { cmd: 'populate'; pods: number; containersPerPod: number }
  | { cmd: 'churn'; count: number }
  | { cmd: 'exit' };

export type RelistRuntimeReply = { endpoint: string } | { changed: number } | { error: string };

const BUSYBOX = 'docker.io/library/busybox:latest';

function benchPod(index: number, containersPerPod: number): Pod {
  const containers: V1Container[] = [];
  for (let c = 0; c < containersPerPod; c++) {
    containers.push(
      withContainerDefaults({
        name: `c${c}`,
        image: 'busybox',
        imagePullPolicy: 'IfNotPresent',
        command: ['sleep', '3600'],
      }),
    );
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `relist-${index}-bench-node`,
      namespace: 'bench',
      uid: randomUUID(),
      labels: { app: 'relist-bench' },
      annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': String(index) },
    },
    spec: {
      containers,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 2,
      nodeName: 'bench-node',
      // ClusterFirst without a cluster DNS would log a warning per pod.
      dnsPolicy: 'Default',
    },
  };
}

function containerConfig(pod: Pod, container: V1Container, imageRef: string): ContainerConfig {
  return {
    metadata: { name: container.name, attempt: 0 },
    image: { image: imageRef, userSpecifiedImage: container.image ?? '' },
    command: container.command ?? [],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: newContainerLabels(container, pod),
    annotations: newContainerAnnotations(container, pod, { hash: hashContainer(container), restartCount: 0 }),
    logPath: `${container.name}/0.log`,
    stdin: false,
    stdinOnce: false,
    tty: false,
  };
}

async function main(): Promise<void> {
  const server = await FakeCriServer.start();
  const containerIds: string[] = [];
  let churnCursor = 0;
  const reply = (message: RelistRuntimeReply) => process.send?.(message);

  process.on('message', (message: RelistRuntimeRequest) => {
    try {
      switch (message.cmd) {
        case 'populate': {
          const imageRef = server.findImage(BUSYBOX)?.id ?? BUSYBOX;
          for (let i = 0; i < message.pods; i++) {
            const pod = benchPod(i, message.containersPerPod);
            const sandboxId = server.addSandbox(
              generatePodSandboxConfig(pod, 0, {
                podLogsDir: '/var/log/pods',
                hostDNS: undefined,
                clusterDNS: [],
                clusterDomain: 'cluster.local',
                nodeIPs: ['10.0.0.1'],
                cgroupParent: '',
              }),
            );
            for (const c of pod.spec.containers) {
              containerIds.push(server.addContainer(sandboxId, containerConfig(pod, c, imageRef)));
            }
          }
          reply({ endpoint: server.endpoint });
          return;
        }
        case 'churn': {
          // Round-robin over the containers, so that each relist sees `count` fresh changes.
          for (let i = 0; i < message.count && containerIds.length > 0; i++) {
            const id = containerIds[churnCursor++ % containerIds.length]!;
            const running = server.containers.get(id)?.state === 'CONTAINER_RUNNING';
            server.setContainerState(id, running ? 'CONTAINER_EXITED' : 'CONTAINER_RUNNING');
          }
          reply({ changed: Math.min(message.count, containerIds.length) });
          return;
        }
        case 'exit':
          void server.close().then(() => process.exit(0));
          return;
      }
    } catch (err) {
      reply({ error: err instanceof Error ? err.message : String(err) });
    }
  });
  // The parent went away without saying so: do not linger.
  process.on('disconnect', () => void server.close().then(() => process.exit(0)));
}

void main();
