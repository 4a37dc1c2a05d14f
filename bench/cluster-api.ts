/**
 * The cluster-mode bench's side of the API server: it creates the bench's pods (bound to the node
 * by spec.nodeName: no scheduler), deletes them, watches them to see each one Running and gone, and
 * reads the API server's /metrics. Everything through the admin's kubeconfig; every call bounded.
 */
import type { ClientRequest } from 'node:http';
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

  /** A counting protobuf watch of resource in all namespaces, with the admin's identity. */
  protobufCounter(resource: 'pods' | 'nodes'): ProtobufWatchCounter {
    return new ProtobufWatchCounter(this.config, resource);
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

  /**
   * The API server's /metrics, as text (the admin may read it), or another path of it such as a
   * node's through its proxy (`/api/v1/nodes/NAME/proxy/metrics`: the kubelet's own).
   */
  metricsText(urlPath = '/metrics'): Promise<string> {
    const url = new URL(urlPath, this.config.server);
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
              : reject(new Error(`${urlPath} answered ${res.statusCode}`)),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${urlPath}: no answer within ${CALL_TIMEOUT_MS} ms`)));
      req.on('error', reject);
    });
  }
}

/** What the bench's own watch received: the API server counts it with the kubelet's in its metrics. */
export interface WatchTally {
  events: number;
  /** The objects as encoded for this watch, as the API server's watch_events_sizes counts them. */
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
          // The API server's JSON encoder ends each object with a newline, and its metric counts it.
          this.tally.bytes += Buffer.byteLength(JSON.stringify(event.object)) + 1;
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

/**
 * A protobuf watch that only counts: how many events the API server sent it and the bytes of their
 * embedded objects, exactly what its apiserver_watch_events_total and _sizes count for one watcher
 * asking for protobuf. The API server's own informers (the Node authorizer's graph, NodeRestriction)
 * hold such a watch on all pods and nodes and receive the same stream, so this tally stands for
 * theirs too when they are taken out of the metrics.
 */
export class ProtobufWatchCounter {
  readonly tally: WatchTally = { events: 0, bytes: 0 };
  private req: ClientRequest | undefined;
  private failure: Error | undefined;
  private closed = false;

  constructor(
    private readonly config: RestConfig,
    /** Watched in all namespaces, as the informers watch them. */
    private readonly resource: 'pods' | 'nodes',
  ) {}

  private get collection(): string {
    return `/api/v1/${this.resource}`;
  }

  /** Opens the watch at the collection's current resourceVersion; resolves once the server answered. */
  async open(api: ClusterApi): Promise<void> {
    const list = mustSucceed(
      await api.client.list({ resource: this.resource }, { limit: 1 }),
      `listing ${this.resource}`,
    );
    const url = new URL(this.collection, this.config.server);
    url.searchParams.set('watch', 'true');
    url.searchParams.set('allowWatchBookmarks', 'true');
    url.searchParams.set('resourceVersion', list.metadata.resourceVersion ?? '');
    url.searchParams.set('timeoutSeconds', String(WATCH_TIMEOUT_S));
    await new Promise<void>((resolve, reject) => {
      const req = https.get(
        url,
        {
          ...this.tls(),
          headers: { accept: 'application/vnd.kubernetes.protobuf;stream=watch' },
        },
        (res) => {
          if (res.statusCode !== 200) {
            reject(new Error(`protobuf watch of ${this.collection} answered ${res.statusCode}`));
            res.resume();
            return;
          }
          let buffer = Buffer.alloc(0);
          res.on('data', (chunk: Buffer) => {
            buffer = Buffer.concat([buffer, chunk]);
            // Frames: a 4-byte big-endian length, then the encoded WatchEvent.
            while (buffer.length >= 4 && buffer.length >= 4 + buffer.readUInt32BE(0)) {
              const frame = buffer.subarray(4, 4 + buffer.readUInt32BE(0));
              buffer = buffer.subarray(4 + frame.length);
              try {
                this.tally.bytes += embeddedObjectBytes(frame);
                this.tally.events++;
              } catch (err) {
                this.failure = err as Error;
                res.destroy();
              }
            }
          });
          res.on('end', () => {
            if (!this.closed) this.failure ??= new Error(`protobuf watch of ${this.collection} ended`);
          });
          res.on('error', (err) => {
            if (!this.closed) this.failure ??= err;
          });
          resolve();
        },
      );
      req.on('error', (err) => {
        if (!this.closed) this.failure ??= err;
        reject(err);
      });
      this.req = req;
    });
  }

  private tls(): https.RequestOptions {
    return {
      ca: this.config.caPem,
      cert: this.config.clientCertPem,
      key: this.config.clientKeyPem,
      rejectUnauthorized: this.config.insecureSkipTLSVerify !== true,
    };
  }

  /** The tally so far, or the reason it stopped counting. */
  snapshot(): WatchTally {
    if (this.failure) throw this.failure;
    return { ...this.tally };
  }

  close(): void {
    this.closed = true;
    this.req?.destroy();
  }
}

/** Reads a protobuf varint at offset: its value and the offset after it. */
function varint(buf: Buffer, offset: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (let i = offset; i < buf.length; i++) {
    const b = buf[i]!;
    value += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return [value, i + 1];
    shift += 7;
  }
  throw new Error('truncated protobuf varint');
}

/** The bytes of field `field` (length-delimited) of a protobuf message, if present. */
function lengthDelimited(msg: Buffer, field: number): Buffer | undefined {
  let at = 0;
  while (at < msg.length) {
    const [key, next] = varint(msg, at);
    const wire = key & 7;
    at = next;
    if (wire === 0) at = varint(msg, at)[1];
    else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else if (wire === 2) {
      const [len, start] = varint(msg, at);
      if (Math.floor(key / 8) === field) return msg.subarray(start, start + len);
      at = start + len;
    } else throw new Error(`protobuf wire type ${wire} not expected in a watch event`);
  }
  return undefined;
}

const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/**
 * A protobuf watch frame is a metav1.WatchEvent{type, object: RawExtension{raw}} as is (the stream
 * serializer is the raw one: no `k8s\0` envelope around it); the metric counts the length of raw, the
 * object as the full serializer encoded it, envelope included.
 */
export function embeddedObjectBytes(frame: Buffer): number {
  // A frame in the envelope (an API server that streams with the full serializer) is unwrapped.
  const event = frame.subarray(0, 4).equals(PROTOBUF_MAGIC) ? lengthDelimited(frame.subarray(4), 2) : frame;
  const object = event && lengthDelimited(event, 2);
  const raw = object && lengthDelimited(object, 1);
  if (raw === undefined) throw new Error('a protobuf watch frame without an object');
  return raw.length;
}
