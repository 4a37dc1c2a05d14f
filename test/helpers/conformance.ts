/**
 * What the conformance-style tests share: pod and container builders, a node in standalone mode
 * (the built kubelet with a manifest folder) or in cluster mode (with the in-process test API
 * server), bounded waits that show the kubelet's log when they time out, and a container's output as
 * the CRI log file holds it (what `kubectl logs` shows).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Container, ContainerStatus, Pod, PodCondition } from '../../src/api/core-v1.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import {
  startTestApiServer,
  type TestApiServer,
  type TestApiServerOptions,
} from '../apiserver/test-api-server.js';
import { CriInspector } from './cri-inspect.js';
import { KubeletProcess } from './kubelet-process.js';
import { waitFor } from './wait.js';

/** The test image: the offline busybox the runtime stack imports (docker.io/library/busybox:latest). */
export const BUSYBOX = 'busybox';

export function busybox(name: string, script: string, extra: Partial<Container> = {}): Container {
  return { name, image: BUSYBOX, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script], ...extra };
}

export function makePod(
  namespace: string,
  name: string,
  spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>,
  metadata: Partial<Pod['metadata']> = {},
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, ...metadata },
    spec: { terminationGracePeriodSeconds: 2, ...spec },
  };
}

/** A pod of one container `main` that sleeps an hour with the given resources (Guaranteed, BestEffort…). */
export function sleeperPod(namespace: string, name: string, resources?: Container['resources']): Pod {
  const main: Container = {
    name: 'main',
    image: BUSYBOX,
    imagePullPolicy: 'Never',
    command: ['sleep', '3600'],
    resources,
  };
  return makePod(namespace, name, { terminationGracePeriodSeconds: 1, containers: [main] });
}

export function containerStatus(p: Pod | undefined, name: string): ContainerStatus | undefined {
  return p?.status?.containerStatuses?.find((c) => c.name === name);
}

export function initContainerStatus(p: Pod | undefined, name: string): ContainerStatus | undefined {
  return p?.status?.initContainerStatuses?.find((c) => c.name === name);
}

export function condition(p: Pod | undefined, type: string): PodCondition | undefined {
  return p?.status?.conditions?.find((c) => c.type === type);
}

/** The text of a CRI log file (`<time> <stream> <P|F> <content>`), both streams, as `kubectl logs` joins it. */
export function parseCriLog(raw: string): string {
  let out = '';
  for (const record of raw.split('\n')) {
    const m = /^\S+ (?:stdout|stderr) ([PF])(?: (.*))?$/.exec(record);
    if (!m) continue;
    out += m[2] ?? '';
    if (m[1] === 'F') out += '\n';
  }
  return out;
}

/** What both node kinds offer a test. */
export interface TestNode {
  readonly kubelet: KubeletProcess;
  readonly cri: CriInspector;
  readonly namespace: string;
  /** The pod as the node reports it: /pods for a static pod, the API object in cluster mode. */
  pod(name: string): Promise<Pod | undefined>;
  createPod(pod: Pod): Promise<void>;
  deletePod(name: string, gracePeriodSeconds?: number): Promise<void>;
  dispose(): Promise<void>;
}

abstract class BaseNode implements TestNode {
  abstract readonly kubelet: KubeletProcess;
  abstract readonly cri: CriInspector;
  abstract readonly namespace: string;
  abstract pod(name: string): Promise<Pod | undefined>;
  abstract createPod(pod: Pod): Promise<void>;
  abstract deletePod(name: string, gracePeriodSeconds?: number): Promise<void>;
  abstract dispose(): Promise<void>;

  /** Polls until pred holds for the pod; on timeout, fails with the pod's last status and the kubelet's log. */
  async waitPod(
    name: string,
    what: string,
    pred: (p: Pod) => boolean,
    timeoutMs = 60_000,
    intervalMs = 250,
  ): Promise<Pod> {
    let last: Pod | undefined;
    try {
      return await waitFor(
        `${name}: ${what}`,
        async () => {
          last = await this.pod(name);
          return last && pred(last) ? last : undefined;
        },
        timeoutMs,
        intervalMs,
      );
    } catch (err) {
      throw new Error(
        `${(err as Error).message}\n--- last status ---\n${JSON.stringify(last?.status ?? null, null, 1).slice(0, 6000)}\n--- kubelet log ---\n${(await this.kubelet.logs()).slice(-8000)}`,
      );
    }
  }

  /** The output of one attempt (restartCount) of a container, from the kubelet's pod log folder. */
  async logs(p: Pod, containerName: string, attempt = 0): Promise<string> {
    const m = p.metadata;
    const file = path.join(
      this.kubelet.podLogsDir,
      `${m.namespace ?? ''}_${m.name ?? ''}_${m.uid ?? ''}`,
      containerName,
      `${attempt}.log`,
    );
    return parseCriLog(await readFile(file, 'utf8'));
  }

  /** Waits until the container's output (attempt 0 unless given) matches. */
  async waitLogs(
    p: Pod,
    containerName: string,
    pattern: RegExp,
    timeoutMs = 30_000,
    attempt = 0,
  ): Promise<string> {
    let last = '';
    try {
      return await waitFor(
        `${containerName}'s output to match ${pattern}`,
        async () => {
          last = await this.logs(p, containerName, attempt);
          return pattern.test(last) ? last : undefined;
        },
        timeoutMs,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- output ---\n${last}`);
    }
  }

  /** Runs cmd in the container of the running pod (CRI ExecSync); stdout, or throws with stderr. */
  async exec(p: Pod, containerName: string, cmd: string[]): Promise<string> {
    const cs = containerStatus(p, containerName) ?? initContainerStatus(p, containerName);
    const id = (cs?.containerID ?? '').replace(/^\w+:\/\//, '');
    if (!id) throw new Error(`${containerName} has no container ID`);
    const res = await this.cri.conn.runtime.execSync(id, cmd, 10);
    if (res.exitCode !== 0)
      throw new Error(`${cmd.join(' ')} exited ${res.exitCode}: ${res.stderr.toString('utf8')}`);
    return res.stdout.toString('utf8');
  }
}

/** Standalone mode: static pods from a manifest folder, status from the read-only /pods. */
export class StandaloneNode extends BaseNode {
  private constructor(
    readonly kubelet: KubeletProcess,
    readonly cri: CriInspector,
    readonly namespace: string,
  ) {
    super();
  }

  static async start(namespace: string, extraArgs: string[] = []): Promise<StandaloneNode> {
    const cri = await CriInspector.connect();
    const kubelet = new KubeletProcess({ extraArgs });
    try {
      await kubelet.start();
    } catch (err) {
      await kubelet.dispose();
      cri.close();
      throw err;
    }
    return new StandaloneNode(kubelet, cri, namespace);
  }

  /** A static pod is named `<name>-<node>`; tests use the manifest's name. */
  pod(name: string): Promise<Pod | undefined> {
    return this.kubelet.pod(name);
  }

  async createPod(pod: Pod): Promise<void> {
    await this.kubelet.writeManifest(`${pod.metadata.name ?? ''}.json`, pod);
  }

  /** Removing the manifest: the pod's own grace period applies (a static pod has no deletion options). */
  async deletePod(name: string): Promise<void> {
    await this.kubelet.removeManifest(`${name}.json`);
  }

  async dispose(): Promise<void> {
    await this.kubelet.dispose();
    await this.cri.removeNamespace(this.namespace);
    this.cri.close();
  }
}

/** Cluster mode: the kubelet with --kubeconfig against the test API server; pods and events live there. */
export class ClusterNode extends BaseNode {
  private constructor(
    readonly kubelet: KubeletProcess,
    readonly cri: CriInspector,
    readonly namespace: string,
    readonly server: TestApiServer,
    private readonly configDir: string,
  ) {
    super();
  }

  /** serverOptions: the test API server's, e.g. an older `version` whose strategies differ. */
  static async start(
    namespace: string,
    extraArgs: string[] = [],
    serverOptions: Pick<TestApiServerOptions, 'version'> = {},
  ): Promise<ClusterNode> {
    const nodeName = `it-conf-node-${process.pid}`;
    const cri = await CriInspector.connect();
    const server = await startTestApiServer({ ...serverOptions, nodeName });
    const configDir = await mkdtemp(path.join(os.tmpdir(), 'it-conformance-'));
    const kubelet = new KubeletProcess({
      nodeName,
      extraArgs: [`--kubeconfig=${path.join(configDir, 'kubelet.kubeconfig')}`, ...extraArgs],
    });
    try {
      server.store.create('namespaces', { metadata: { name: namespace } });
      await server.writeKubeconfig(path.join(configDir, 'kubelet.kubeconfig'), server.nodeUser, {
        credential: 'certificate',
        groups: ['system:nodes'],
      });
      await kubelet.start();
    } catch (err) {
      await kubelet.dispose();
      await server.stop();
      cri.close();
      await rm(configDir, { recursive: true, force: true });
      throw err;
    }
    return new ClusterNode(kubelet, cri, namespace, server, configDir);
  }

  async pod(name: string): Promise<Pod | undefined> {
    return Promise.resolve(
      this.server.store.tryGet('pods', name, this.namespace) as unknown as Pod | undefined,
    );
  }

  /** As the scheduler would leave it: bound to this node. */
  async createPod(pod: Pod): Promise<void> {
    const bound: Pod = { ...pod, spec: { ...pod.spec, nodeName: this.kubelet.nodeName } };
    this.server.store.create('pods', bound as never, this.namespace);
    return Promise.resolve();
  }

  /** kubectl delete: graceful, with the given grace period or the pod's own. */
  async deletePod(name: string, gracePeriodSeconds?: number): Promise<void> {
    this.server.store.delete(
      'pods',
      name,
      this.namespace,
      gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds },
    );
    return Promise.resolve();
  }

  create(resource: string, obj: Record<string, unknown>, namespace = this.namespace): void {
    this.server.store.create(resource, obj as never, namespace);
  }

  events(): CoreEvent[] {
    return this.server.store.list('events', { namespace: this.namespace }).items as unknown as CoreEvent[];
  }

  /** Waits for an event about the pod with this reason (and field path, when given). */
  async waitEvent(
    podName: string,
    reason: string,
    fieldPath?: string,
    timeoutMs = 30_000,
  ): Promise<CoreEvent> {
    return waitFor(
      `a ${reason} event about ${podName}`,
      () =>
        this.events().find(
          (e) =>
            e.reason === reason &&
            e.involvedObject.name === podName &&
            (fieldPath === undefined || e.involvedObject.fieldPath === fieldPath),
        ),
      timeoutMs,
    ).catch((err: unknown) => {
      const seen = this.events()
        .map((e) => `${e.involvedObject.name} ${e.reason}: ${e.message}`)
        .join('\n');
      throw new Error(`${(err as Error).message}\n--- events ---\n${seen}`);
    });
  }

  async dispose(): Promise<void> {
    await this.kubelet.dispose();
    await this.server.stop();
    await this.cri.removeNamespace(this.namespace);
    this.cri.close();
    await rm(this.configDir, { recursive: true, force: true });
  }
}
