/**
 * The cluster-mode bench's side of the API server: it creates the bench's pods (bound to the node
 * by spec.nodeName: no scheduler), deletes them, watches them to see each one Running and gone, and
 * reads the API server's /metrics. Everything through the admin's kubeconfig; every call bounded.
 */
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { Pod } from '../src/api/core-v1.js';
import type { Node as KubeNode } from '../src/api/node.js';
import { mustSucceed } from '../src/k8s/api-status.js';
import { loadKubeconfig, type RestConfig } from '../src/k8s/kubeconfig.js';
import { RestClient, type WatchStream } from '../src/k8s/rest-client.js';
import { sleep } from './report.js';

const CALL_TIMEOUT_MS = 30_000;
/** Watches are reopened from the last resourceVersion when they end; a long one is asked for. */
const WATCH_TIMEOUT_S = 1800;
/** The kubelets' minimum (upstream's too): `sleep` as PID 1 ignores SIGTERM, so each stop takes this long. */
export const GRACE_PERIOD_S = 2;

/** The bench's pod: busybox `sleep`, as the standalone density bench runs it, bound to nodeName. */
export function clusterBenchPod(
  name: string,
  namespace: string,
  nodeName: string,
  automountToken: boolean,
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'cluster-density-bench' } },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: GRACE_PERIOD_S,
      ...(automountToken ? {} : { automountServiceAccountToken: false }),
      containers: [
        { name: 'sleep', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
      ],
    },
  };
}

export class ClusterApi {
  private constructor(
    readonly client: RestClient,
    private readonly config: RestConfig,
  ) {}

  static async connect(kubeconfig: string): Promise<ClusterApi> {
    const config = await loadKubeconfig(kubeconfig);
    // No client-side rate limit: the bench's own pace is not what is measured.
    const client = new RestClient({
      config,
      qps: -1,
      requestTimeoutMs: CALL_TIMEOUT_MS,
      userAgent: 'tskubelet-cluster-bench',
    });
    return new ClusterApi(client, config);
  }

  close(): void {
    this.client.close();
  }

  /**
   * The namespace and what the controller manager would put in it (its default service account,
   * kube-root-ca.crt for the pods' token volumes): the bench's control plane runs none.
   */
  async prepareNamespace(namespace: string): Promise<void> {
    const created = (result: { ok: boolean; reason?: string }, what: string) => {
      if (!result.ok && result.reason !== 'AlreadyExists')
        throw new Error(`creating ${what} failed: ${result.reason}`);
    };
    created(
      await this.client.create(
        { resource: 'namespaces' },
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
      ),
      `namespace ${namespace}`,
    );
    created(
      await this.client.create(
        { resource: 'serviceaccounts', namespace },
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace } },
      ),
      'the default service account',
    );
    const ca = this.config.caPem ?? '';
    created(
      await this.client.create({ resource: 'configmaps', namespace }, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kube-root-ca.crt', namespace },
        data: { 'ca.crt': ca },
      } as never),
      'kube-root-ca.crt',
    );
  }

  /** Removes the Node object and its Lease, so that each kubelet registers afresh. */
  async forgetNode(nodeName: string): Promise<void> {
    const gone = (result: { ok: boolean; reason?: string }, what: string) => {
      if (!result.ok && result.reason !== 'NotFound')
        throw new Error(`deleting ${what} failed: ${result.reason}`);
    };
    gone(await this.client.delete({ resource: 'nodes', name: nodeName }), `node ${nodeName}`);
    gone(
      await this.client.delete({
        apiVersion: 'coordination.k8s.io/v1',
        resource: 'leases',
        namespace: 'kube-node-lease',
        name: nodeName,
      }),
      `the lease of ${nodeName}`,
    );
  }

  async nodeReady(nodeName: string): Promise<boolean> {
    const result = await this.client.get<KubeNode>({
      resource: 'nodes',
      name: nodeName,
    });
    if (!result.ok) return false;
    return (result.object.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  }

  /** Pods left in namespace (a run that was killed): deleted at once, waited for (bounded). */
  async podNames(namespace: string): Promise<string[]> {
    const list = mustSucceed(await this.client.list<Pod>({ resource: 'pods', namespace }), 'listing pods');
    return list.items.map((p) => p.metadata.name ?? '');
  }

  /**
   * Creates pods, at most parallel at a time. Resolves with when each create returned (the pod
   * exists from then on) on performance.now()'s clock.
   */
  async createPods(pods: Pod[], parallel: number): Promise<{ createdAt: Map<string, number> }> {
    const createdAt = new Map<string, number>();
    const queue = [...pods];
    const worker = async () => {
      for (let pod = queue.shift(); pod; pod = queue.shift()) {
        const namespace = pod.metadata.namespace ?? 'default';
        mustSucceed(
          await this.client.create({ resource: 'pods', namespace }, pod),
          `creating pod ${pod.metadata.name}`,
        );
        createdAt.set(pod.metadata.name ?? '', performance.now());
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, parallel) }, worker));
    return { createdAt };
  }

  async deletePods(namespace: string, names: string[], parallel: number): Promise<void> {
    const queue = [...names];
    const worker = async () => {
      for (let name = queue.shift(); name; name = queue.shift()) {
        const result = await this.client.delete({ resource: 'pods', namespace, name });
        if (!result.ok && result.reason !== 'NotFound')
          throw new Error(`deleting pod ${name} failed: ${result.reason}`);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, parallel) }, worker));
  }

  /** The API server's /metrics, as text (the admin may read it). */
  metricsText(): Promise<string> {
    const url = new URL('/metrics', this.config.server);
    return new Promise((resolve, reject) => {
      const req = https.get(
        url,
        {
          ca: this.config.caPem,
          cert: this.config.clientCertPem,
          key: this.config.clientKeyPem,
          ...(this.config.token ? { headers: { authorization: `Bearer ${this.config.token}` } } : {}),
          rejectUnauthorized: this.config.insecureSkipTLSVerify !== true,
          timeout: CALL_TIMEOUT_MS,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            res.statusCode === 200
              ? resolve(Buffer.concat(chunks).toString('utf8'))
              : reject(new Error(`/metrics answered ${res.statusCode}`)),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`/metrics: no answer within ${CALL_TIMEOUT_MS} ms`)));
      req.on('error', reject);
    });
  }
}

/** What the bench's own watch received: the API server counts it with the kubelet's in its metrics. */
export interface WatchTally {
  events: number;
  /** The objects' JSON, as the API server encodes them for a JSON watch (its watch_events_sizes). */
  bytes: number;
}

/**
 * The pods of a namespace as a watch shows them: when each was first seen Running and when it was
 * gone (DELETED), on performance.now()'s clock, and what the watch received.
 */
export class PodWatch {
  readonly runningAt = new Map<string, number>();
  readonly goneAt = new Map<string, number>();
  readonly restarts = new Map<string, number>();
  readonly tally: WatchTally = { events: 0, bytes: 0 };
  private stream: WatchStream<Pod> | undefined;
  private closed = false;
  private failure: Error | undefined;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly api: ClusterApi,
    private readonly namespace: string,
  ) {}

  async open(): Promise<void> {
    const list = mustSucceed(
      await this.api.client.list<Pod>({ resource: 'pods', namespace: this.namespace }),
      'listing pods',
    );
    this.done = this.run(list.metadata.resourceVersion ?? '');
  }

  private async run(resourceVersion: string): Promise<void> {
    let rv = resourceVersion;
    while (!this.closed) {
      const result = await this.api.client
        .watch<Pod>(
          { resource: 'pods', namespace: this.namespace },
          { resourceVersion: rv, timeoutSeconds: WATCH_TIMEOUT_S },
        )
        .catch((err: unknown) => err as Error);
      if (result instanceof Error || !result.ok) {
        this.failure = result instanceof Error ? result : new Error(`watching pods: ${result.reason}`);
        return;
      }
      this.stream = result.object;
      try {
        for await (const event of result.object) {
          const at = performance.now();
          if (event.type === 'ERROR') {
            this.failure = new Error(`pod watch: ${event.object.message ?? 'error event'}`);
            return;
          }
          this.tally.events++;
          this.tally.bytes += Buffer.byteLength(JSON.stringify(event.object));
          const pod = event.object;
          const name = pod.metadata.name ?? '';
          rv = pod.metadata.resourceVersion ?? rv;
          if (event.type === 'DELETED') {
            if (!this.goneAt.has(name)) this.goneAt.set(name, at);
            continue;
          }
          if (pod.status?.phase === 'Running' && !this.runningAt.has(name)) this.runningAt.set(name, at);
          const restarts = (pod.status?.containerStatuses ?? []).reduce(
            (a, c) => a + (c.restartCount ?? 0),
            0,
          );
          this.restarts.set(name, restarts);
        }
      } catch (err) {
        if (!this.closed) this.failure = err as Error;
        return;
      }
    }
  }

  /** Waits until every one of names is in seen, failing at the deadline, on a watch failure, or when check throws. */
  async waitFor(
    seen: Map<string, number>,
    names: string[],
    timeoutMs: number,
    what: string,
    check: () => Promise<void> = async () => {},
  ): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (names.some((n) => !seen.has(n))) {
      if (this.failure) throw this.failure;
      await check();
      if (performance.now() > deadline) {
        const missing = names.filter((n) => !seen.has(n));
        throw new Error(
          `${what}: ${names.length - missing.length} of ${names.length} within ${timeoutMs} ms (missing ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''})`,
        );
      }
      await sleep(50);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stream?.close();
    await this.done;
  }
}
