/**
 * The API client's own CPU per request against a real kube-apiserver (run by bench/api-client.sh,
 * which starts a throw-away control plane on loopback): the kubelet's common calls as the node's
 * user (GET a pod, a strategic merge PATCH of pods/status, POST an event, POST a service account
 * TokenRequest) and the watch events it decodes. The kube-apiserver's ALPN picks h2, so this build's
 * client speaks HTTP/2 to it (DISABLE_HTTP2=1 keeps it on HTTP/1.1); docs/benchmarks.md has the figures.
 *
 * CPU is process.cpuUsage() (all of this process's threads: TLS, HTTP, JSON, V8's helpers) over
 * BENCH_API_REQUESTS requests with BENCH_API_CONCURRENCY in flight, per request, in µs. The watch's
 * events are written by a child process (the admin's patches), so only their decoding is counted.
 *
 * Env: BENCH_API_NODE_KUBECONFIG, BENCH_API_ADMIN_KUBECONFIG, BENCH_API_NODE (the node's name),
 * BENCH_API_ROUNDS (5), BENCH_API_REQUESTS (400), BENCH_API_CONCURRENCY (16), BENCH_API_PODS (32),
 * BENCH_API_BASELINE (another build's dist/src/k8s/rest-client.js: its client is measured too, the two
 * taking turns within each round, and the table gains its figures and the per-round ratio).
 * Output: one JSON line per figure, as the other benches, then a table on stderr.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Pod } from '../src/api/core-v1.js';
import { mustSucceed } from '../src/k8s/api-status.js';
import { loadKubeconfig } from '../src/k8s/kubeconfig.js';
import { RestClient, resourcePath, type KubeObject } from '../src/k8s/rest-client.js';
import type { RestConfig } from '../src/k8s/kubeconfig.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const ROUNDS = env('BENCH_API_ROUNDS', 5);
const REQUESTS = env('BENCH_API_REQUESTS', 400);
const CONCURRENCY = env('BENCH_API_CONCURRENCY', 16);
const PODS = env('BENCH_API_PODS', 32);
const NODE = process.env.BENCH_API_NODE ?? 'bench-node';
const NS = 'default';

/** What the bench calls of a client: this build's RestClient, or another build's of the same shape. */
type Client = Pick<RestClient, 'get' | 'patch' | 'create' | 'call' | 'list' | 'watch' | 'close'>;
type ClientFactory = (config: RestConfig) => Client;

function podOf(i: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `api-bench-${i}`, namespace: NS, labels: { app: 'api-client-bench' } },
    spec: {
      nodeName: NODE,
      containers: [{ name: 'sleep', image: 'busybox', command: ['sleep', '3600'] }],
    },
  };
}

/** A status patch of the kubelet's shape (conditions, one container's state), different each time. */
function statusPatch(pod: Pod, n: number): unknown {
  const now = new Date(1_700_000_000_000 + n * 1000).toISOString();
  return {
    metadata: { uid: pod.metadata?.uid },
    status: {
      '$setElementOrder/conditions': [
        { type: 'Initialized' },
        { type: 'Ready' },
        { type: 'ContainersReady' },
        { type: 'PodScheduled' },
      ],
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          lastProbeTime: null,
          lastTransitionTime: now,
          reason: 'ContainersNotReady',
        },
        { type: 'ContainersReady', status: 'False', lastProbeTime: null, lastTransitionTime: now },
      ],
      containerStatuses: [
        {
          name: 'sleep',
          image: 'busybox',
          imageID: '',
          ready: false,
          restartCount: 0,
          started: false,
          state: { waiting: { reason: 'ContainerCreating', message: `attempt ${n}` } },
        },
      ],
      hostIP: '10.0.0.2',
      phase: 'Pending',
      podIP: `10.244.0.${n % 250}`,
      startTime: now,
    },
  };
}

function eventOf(pod: Pod, n: number): KubeObject & Record<string, unknown> {
  const now = new Date().toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${pod.metadata!.name}.${Date.now().toString(16)}${n}`, namespace: NS },
    involvedObject: {
      kind: 'Pod',
      namespace: NS,
      name: pod.metadata!.name,
      uid: pod.metadata!.uid,
      apiVersion: 'v1',
      fieldPath: 'spec.containers{sleep}',
    },
    reason: 'Pulled',
    message: 'Container image "busybox" already present on machine',
    source: { component: 'kubelet', host: NODE },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    type: 'Normal',
    reportingComponent: 'kubelet',
    reportingInstance: NODE,
  };
}

function tokenRequestOf(pod: Pod): KubeObject & Record<string, unknown> {
  return {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: {
      audiences: [],
      expirationSeconds: 3607,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata!.name, uid: pod.metadata!.uid },
    },
  };
}

type Op = 'get_pod' | 'patch_status' | 'post_event' | 'token_request';
const OPS: Op[] = ['get_pod', 'patch_status', 'post_event', 'token_request'];

async function one(client: Client, op: Op, pods: Pod[], n: number): Promise<void> {
  const pod = pods[n % pods.length]!;
  const name = pod.metadata!.name;
  switch (op) {
    case 'get_pod':
      mustSucceed(await client.get<Pod>({ resource: 'pods', namespace: NS, name }), 'get');
      return;
    case 'patch_status':
      mustSucceed(
        await client.patch(
          { resource: 'pods', namespace: NS, name, subresource: 'status' },
          'strategic',
          statusPatch(pod, n),
        ),
        'patch',
      );
      return;
    case 'post_event':
      mustSucceed(await client.create({ resource: 'events', namespace: NS }, eventOf(pod, n)), 'event');
      return;
    case 'token_request':
      // As the kubelet's token manager: create() would drop the name that the subresource needs.
      mustSucceed(
        await client.call({
          method: 'POST',
          path: resourcePath({
            resource: 'serviceaccounts',
            namespace: NS,
            name: 'default',
            subresource: 'token',
          }),
          body: tokenRequestOf(pod),
        }),
        'token',
      );
      return;
  }
}

/** µs of this process's CPU per request for count requests, concurrency at a time. */
async function cpuPerRequest(client: Client, op: Op, pods: Pod[], count: number): Promise<number> {
  let next = 0;
  const before = process.cpuUsage();
  const lane = async () => {
    while (next < count) await one(client, op, pods, next++);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

/** µs per watch event decoded: a child patches the pods as the admin; the watch here only reads. */
async function cpuPerWatchEvent(client: Client, admin: string, count: number): Promise<number> {
  const list = mustSucceed(await client.list<Pod>({ resource: 'pods', namespace: NS }), 'list');
  const ac = new AbortController();
  const watch = mustSucceed(
    await client.watch<Pod>(
      { resource: 'pods', namespace: NS },
      {
        fieldSelector: `spec.nodeName=${NODE}`,
        resourceVersion: list.metadata.resourceVersion,
        timeoutSeconds: 600,
        signal: ac.signal,
      },
    ),
    'watch',
  );
  const writer = fork(fileURLToPath(import.meta.url), ['writer', admin, String(count)], {
    stdio: 'inherit',
  });
  const writerDone = new Promise<void>((resolve, reject) =>
    writer.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`the watch's writer exited with ${code}`)),
    ),
  );
  let seen = 0;
  let before: NodeJS.CpuUsage | undefined;
  const timer = setTimeout(() => ac.abort(), 120_000);
  try {
    for await (const event of watch) {
      if (event.type !== 'MODIFIED') continue;
      // The first event starts the clock: the open and the child's start are not counted.
      if (seen++ === 0) before = process.cpuUsage();
      if (seen > count) break;
    }
  } finally {
    clearTimeout(timer);
    watch.close();
  }
  const used = process.cpuUsage(before);
  await writerDone;
  if (seen <= count) throw new Error(`the watch saw ${seen} of ${count + 1} events`);
  return (used.user + used.system) / count;
}

/** The child: count + 1 patches of the bench's pods as the admin, 8 at a time. */
async function writer(adminKubeconfig: string, count: number): Promise<void> {
  const client = new RestClient({ config: await loadKubeconfig(adminKubeconfig), qps: -1 });
  let next = 0;
  const lane = async () => {
    while (next <= count) {
      const n = next++;
      mustSucceed(
        await client.patch({ resource: 'pods', namespace: NS, name: `api-bench-${n % PODS}` }, 'merge', {
          // A value of its own each time: a patch that changes nothing makes no event.
          metadata: { annotations: { 'api-bench/n': `${process.pid}-${n}` } },
        }),
        'writer patch',
      );
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  client.close();
}

async function setUp(adminKubeconfig: string): Promise<Pod[]> {
  const admin = new RestClient({ config: await loadKubeconfig(adminKubeconfig), qps: -1 });
  const sa = await admin.create(
    { resource: 'serviceaccounts', namespace: NS },
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'default', namespace: NS },
    },
  );
  if (!sa.ok && sa.reason !== 'AlreadyExists') throw new Error(`service account: ${sa.reason}`);
  const pods: Pod[] = [];
  for (let i = 0; i < PODS; i++) {
    const r = await admin.create<Pod>({ resource: 'pods', namespace: NS }, podOf(i));
    pods.push(
      r.ok
        ? r.object
        : mustSucceed(
            await admin.get<Pod>({ resource: 'pods', namespace: NS, name: `api-bench-${i}` }),
            'pod',
          ),
    );
  }
  admin.close();
  return pods;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** This build's client, and BENCH_API_BASELINE's when set: the clients one round measures. */
async function clientsToMeasure(): Promise<Map<string, ClientFactory>> {
  const clients = new Map<string, ClientFactory>([['this', (config) => new RestClient({ config, qps: -1 })]]);
  const baseline = process.env.BENCH_API_BASELINE;
  if (baseline) {
    const mod = (await import(baseline)) as {
      RestClient: new (o: { config: RestConfig; qps: number }) => Client;
    };
    clients.set('baseline', (config) => new mod.RestClient({ config, qps: -1 }));
  }
  return clients;
}

/** One client's figures for one round: µs per call of each kind. */
async function measureRound(client: Client, pods: Pod[], admin: string): Promise<Map<string, number>> {
  const perRound = new Map<string, number>();
  for (const op of OPS) perRound.set(op, await cpuPerRequest(client, op, pods, REQUESTS));
  perRound.set('watch_event', await cpuPerWatchEvent(client, admin, REQUESTS));
  client.close();
  return perRound;
}

const range = (xs: number[], digits = 0): string =>
  `${median(xs).toFixed(digits)} [${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}]`;

async function main(): Promise<void> {
  const nodeKubeconfig = process.env.BENCH_API_NODE_KUBECONFIG;
  const adminKubeconfig = process.env.BENCH_API_ADMIN_KUBECONFIG;
  if (!nodeKubeconfig || !adminKubeconfig)
    throw new Error('needs BENCH_API_NODE_KUBECONFIG and BENCH_API_ADMIN_KUBECONFIG (bench/api-client.sh)');
  const pods = await setUp(adminKubeconfig);
  const config = await loadKubeconfig(nodeKubeconfig);
  const clients = await clientsToMeasure();
  // figures.get(client).get(call): µs per round; ratios.get(call): baseline's ÷ this build's, per round.
  const figures = new Map<string, Map<string, number[]>>();
  const ratios = new Map<string, number[]>();
  const calls = [...OPS, 'watch_event'];
  // Round 0 warms the clients up (JIT, connections) and is not counted; the clients swap order each round.
  for (let round = 0; round <= ROUNDS; round++) {
    const order = [...clients.keys()];
    if (round % 2) order.reverse();
    const perClient = new Map<string, Map<string, number>>();
    for (const name of order)
      perClient.set(name, await measureRound(clients.get(name)!(config), pods, adminKubeconfig));
    if (round === 0) continue;
    for (const [name, perRound] of perClient) {
      const byCall = figures.get(name) ?? new Map<string, number[]>();
      figures.set(name, byCall);
      for (const [key, us] of perRound) byCall.set(key, [...(byCall.get(key) ?? []), us]);
      const line = [...perRound].map(([key, us]) => `${key} ${us.toFixed(0)}`).join(', ');
      process.stderr.write(`api-client: round ${round} of ${ROUNDS}, ${name} (µs per request): ${line}\n`);
    }
    const base = perClient.get('baseline');
    if (base)
      for (const [key, us] of perClient.get('this')!)
        ratios.set(key, [...(ratios.get(key) ?? []), us / base.get(key)!]);
  }
  const names = [...clients.keys()];
  const head = names.map((n) => `${n} (µs)`);
  if (ratios.size) head.push('this ÷ baseline, per round');
  const rows = [`| call | ${head.join(' | ')} |`, `| --- |${head.map(() => ' ---: |').join('')}`];
  for (const op of calls) {
    const cells: string[] = [];
    for (const name of names) {
      const xs = figures.get(name)!.get(op)!;
      const metric = name === 'this' ? `${op}_cpu_us` : `${op}_cpu_us_${name}`;
      console.log(
        JSON.stringify({
          bench: 'api-client',
          metric,
          value: median(xs),
          min: Math.min(...xs),
          max: Math.max(...xs),
          rounds: xs.length,
        }),
      );
      cells.push(range(xs));
    }
    const r = ratios.get(op);
    if (r) {
      console.log(
        JSON.stringify({
          bench: 'api-client',
          metric: `${op}_cpu_ratio`,
          value: median(r),
          rounds: r.length,
        }),
      );
      cells.push(range(r, 2));
    }
    rows.push(`| ${op} | ${cells.join(' | ')} |`);
  }
  process.stderr.write(
    `\n${REQUESTS} requests a call and round, ${CONCURRENCY} in flight, ${ROUNDS} rounds; medians [range]\n${rows.join('\n')}\n`,
  );
}

if (process.argv[2] === 'writer') {
  await writer(process.argv[3]!, Number(process.argv[4]));
} else {
  await main();
}
