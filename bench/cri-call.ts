/**
 * The client's CPU per CRI unary call, layer by layer, against a CRI server in another process (so
 * process.cpuUsage counts the client only): the relist bench's fake CRI server in a child process,
 * or a real runtime (BENCH_CRI_ENDPOINT, e.g. a private stack's containerd). The layers: protobuf
 * encoding and decoding alone; a bare request carrying the same gRPC frame, over node:http2 and over
 * the project's own HTTP/2 connection (src/lib/http2); the call through GrpcUnaryChannel over each
 * (framing, deadline, decoding); and through the instrumented RemoteRuntimeService the kubelet uses
 * (error mapping, conversion, metrics). Version (the smallest answer) and a status (ContainerStatus
 * on the fake, ImageStatus on a real runtime, which may have no containers), one call at a time and
 * 16 at a time; the layers' batches alternate, so a busy machine weighs on each alike. Then what a
 * pod start sends and a relist reads: the CreateContainerRequest frame (a container's config and its
 * sandbox's, encoded alone), and ListContainers and ListPodSandbox through the service (the fake's
 * BENCH_CRI_PODS pods, or the runtime's own).
 *
 * Env: BENCH_CRI_CALLS (calls per batch, 3000), BENCH_ROUNDS (batches per layer, 7),
 * BENCH_CRI_ENDPOINT (unix://… of a running runtime; the fake when unset), BENCH_CRI_LAYERS (a
 * comma-separated subset of the layers' names), BENCH_CRI_PODS (the fake's pods, 100).
 */
import { fork } from 'node:child_process';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GrpcUnaryChannel, dialNodeHttp2 } from '../src/cri/grpc-unary-channel.js';
import { grpcRequestFields } from '../src/cri/grpc-over-http2.js';
import {
  ContainerStatusRequest,
  CreateContainerRequest,
  ImageServiceDefinition,
  ImageStatusRequest,
  RuntimeServiceDefinition,
  VersionRequest,
} from '../src/cri/generated/runtime/v1/api.js';
import { dialOwnHttp2 } from '../src/lib/http2/dial.js';
import type { GrpcHttp2Connection } from '../src/lib/http2/stream-handler.js';
import { RemoteImageService } from '../src/cri/remote-image.js';
import { instrumentCri } from '../src/cri/instrumented-runtime.js';
import { RemoteRuntimeService } from '../src/cri/remote-runtime.js';
import { grpcMethods } from '../src/lib/grpc-definitions.js';
import { grpcMessageFrame } from '../src/lib/grpc-wire.js';
import { MetricsRegistry } from '../src/lib/metrics.js';
import type { RelistRuntimeReply } from './relist-fake-runtime.js';
import { emit, envNumber, percentile, say } from './report.js';
import { generatePodSandboxConfig } from '../src/kuberuntime/sandbox-config.js';
import type { ContainerConfig } from '../src/cri/types.js';

const BENCH = 'cri-call';
const RS = grpcMethods(RuntimeServiceDefinition);
const IS = grpcMethods(ImageServiceDefinition);

type Call = (i: number) => Promise<unknown>;

async function perCallUs(call: Call, calls: number, atOnce: number): Promise<number> {
  const cpu0 = process.cpuUsage();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < calls) await call(next++);
  };
  await Promise.all(Array.from({ length: atOnce }, worker));
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / calls;
}

/** One bare node:http2 request: the same headers and frame, the answer's bytes gathered, nothing decoded. */
function bareHttp2(session: http2.ClientHttp2Session, pathName: string, frame: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': pathName,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
    stream.on('error', reject);
    stream.on('close', () => resolve(bytes));
    stream.end(frame);
  });
}

/**
 * The most node:http2 could be trimmed to by its caller: every header given (node derives none),
 * and only the two listeners an answer cannot do without (no 'response', 'trailers' or 'error').
 * Not a correct gRPC client: the upper bound of what cheap cuts inside node:http2 can save.
 */
function leanHttp2(session: http2.ClientHttp2Session, pathName: string, frame: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const stream = session.request(
      {
        ':method': 'POST',
        ':scheme': 'http',
        ':authority': 'localhost',
        ':path': pathName,
        'content-type': 'application/grpc',
        te: 'trailers',
      },
      { endStream: false },
    );
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
    stream.on('close', () => resolve(bytes));
    stream.end(frame);
  });
}

/** The same bare request over a GrpcHttp2Connection (the project's own HTTP/2 client). */
function bareConnection(connection: GrpcHttp2Connection, pathName: string, frame: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    connection.request(grpcRequestFields(pathName, [['grpc-timeout', '120000m']]), frame, {
      onHeaders: () => {},
      onData: (chunk) => (bytes += chunk.length),
      onEnd: () => resolve(bytes),
      onError: reject,
    });
  });
}

/** A frame as the unary channel sends it: the method's own when it has one, else its message behind the prefix. */
function requestFrame<Request>(
  method: { requestSerialize: (r: Request) => Buffer; requestFrame?: (r: Request) => Buffer },
  request: Request,
): Buffer {
  return method.requestFrame
    ? method.requestFrame(request)
    : grpcMessageFrame(method.requestSerialize(request));
}

/** A CreateContainerRequest of the size the kubelet sends for a busybox pod with a service account token. */
function createContainerRequest(i: number): CreateContainerRequest {
  const uid = `0f0e0d0c-0b0a-0908-0706-0504030201${String(i % 100).padStart(2, '0')}`;
  const sandboxConfig = generatePodSandboxConfig(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `pod-${i}`, namespace: 'bench', uid, labels: { app: 'bench' } },
      spec: { containers: [{ name: 'c', image: 'busybox' }], nodeName: 'bench-node', dnsPolicy: 'Default' },
    },
    0,
    {
      podLogsDir: '/var/log/pods',
      hostDNS: undefined,
      clusterDNS: [],
      clusterDomain: 'cluster.local',
      nodeIPs: ['10.0.0.1'],
      cgroupParent: '/kubepods/besteffort/pod' + uid,
    },
  );
  const env = (key: string, value: string) => ({ key, value });
  const config: ContainerConfig = {
    metadata: { name: 'c', attempt: 0 },
    image: { image: 'sha256:' + 'ab'.repeat(32), userSpecifiedImage: 'busybox' },
    command: ['sleep', '3600'],
    args: [],
    workingDir: '',
    envs: [
      env('KUBERNETES_SERVICE_HOST', '10.96.0.1'),
      env('KUBERNETES_SERVICE_PORT', '443'),
      env('KUBERNETES_SERVICE_PORT_HTTPS', '443'),
      env('KUBERNETES_PORT', 'tcp://10.96.0.1:443'),
      env('KUBERNETES_PORT_443_TCP', 'tcp://10.96.0.1:443'),
      env('KUBERNETES_PORT_443_TCP_PROTO', 'tcp'),
      env('KUBERNETES_PORT_443_TCP_PORT', '443'),
      env('KUBERNETES_PORT_443_TCP_ADDR', '10.96.0.1'),
    ],
    mounts: [
      {
        containerPath: '/var/run/secrets/kubernetes.io/serviceaccount',
        hostPath: `/var/lib/kubelet/pods/${uid}/volumes/kubernetes.io~projected/kube-api-access-x1y2z`,
        readonly: true,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
      {
        containerPath: '/etc/hosts',
        hostPath: `/var/lib/kubelet/pods/${uid}/etc-hosts`,
        readonly: false,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
      {
        containerPath: '/dev/termination-log',
        hostPath: `/var/lib/kubelet/pods/${uid}/containers/c/0a1b2c3d`,
        readonly: false,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
    ],
    labels: {
      'io.kubernetes.container.name': 'c',
      'io.kubernetes.pod.name': `pod-${i}`,
      'io.kubernetes.pod.namespace': 'bench',
      'io.kubernetes.pod.uid': uid,
    },
    annotations: {
      'io.kubernetes.container.hash': '5c3fa6a1',
      'io.kubernetes.container.restartCount': '0',
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.pod.terminationGracePeriod': '30',
    },
    logPath: 'c/0.log',
    stdin: false,
    stdinOnce: false,
    tty: false,
    linux: {
      resources: {
        cpuPeriod: 100000,
        cpuQuota: 0,
        cpuShares: 2,
        memoryLimitInBytes: 0,
        oomScoreAdj: 1000,
        cpusetCpus: '',
        cpusetMems: '',
        unified: {},
        memorySwapLimitInBytes: 0,
      },
      securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
    },
  } as unknown as ContainerConfig;
  return CreateContainerRequest.fromPartial({ podSandboxId: 'f'.repeat(64), config, sandboxConfig });
}

/** The runtime to call: BENCH_CRI_ENDPOINT's, or the fake in a child process (stopped by the returned function). */
async function startRuntime(): Promise<{ endpoint: string; stop: () => void }> {
  const given = process.env.BENCH_CRI_ENDPOINT;
  if (given) return { endpoint: given, stop: () => {} };
  const here = fileURLToPath(import.meta.url);
  const script = path.join(path.dirname(here), `relist-fake-runtime${path.extname(here)}`);
  const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const reply = await new Promise<RelistRuntimeReply>((resolve) => {
    child.once('message', resolve);
    child.send({ cmd: 'populate', pods: envNumber('BENCH_CRI_PODS', 100), containersPerPod: 1 });
  });
  if (!('endpoint' in reply)) throw new Error('the fake runtime gave no endpoint');
  return { endpoint: reply.endpoint, stop: () => child.send({ cmd: 'exit' }) };
}

async function main(): Promise<void> {
  const calls = envNumber('BENCH_CRI_CALLS', 3000);
  const rounds = envNumber('BENCH_ROUNDS', 7);
  const { endpoint, stop } = await startRuntime();
  const socketPath = endpoint.replace(/^unix:\/\//, '');
  const session = http2.connect('http://localhost', { createConnection: () => net.connect(socketPath) });
  const own = dialOwnHttp2(socketPath, { windowBytes: 16 * 1024 * 1024 });
  const max = { maxReceiveMessageBytes: 64 * 1024 * 1024 };
  const nodeChannel = new GrpcUnaryChannel(socketPath, { ...max, dial: dialNodeHttp2 });
  const ownChannel = new GrpcUnaryChannel(socketPath, { ...max, dial: dialOwnHttp2 });
  const runtime = instrumentCri(new RemoteRuntimeService(endpoint), new MetricsRegistry());
  const images = new RemoteImageService(endpoint);
  try {
    const version = VersionRequest.fromPartial({ version: '0.1.0' });
    const versionFrame = () => grpcMessageFrame(RS.version.requestSerialize(version));
    const versionAnswer = RS.version.responseSerialize(await nodeChannel.call(RS.version, version, 120_000));
    // The status call: a container's on the fake, an image's on a real runtime (which may have no containers).
    let status: {
      path: string;
      frame: (i: number) => Buffer;
      answer: Buffer;
      decode: (b: Buffer) => unknown;
    };
    let statusName: string;
    let statusCall: Call;
    if (process.env.BENCH_CRI_ENDPOINT) {
      const imageIds = (await images.listImages()).map((i) => i.id);
      if (imageIds.length === 0) throw new Error(`${endpoint} has no images for ImageStatus`);
      const request = (i: number) =>
        ImageStatusRequest.fromPartial({ image: { image: imageIds[i % imageIds.length] } });
      const answer = IS.imageStatus.responseSerialize(
        await nodeChannel.call(IS.imageStatus, request(0), 120_000),
      );
      status = {
        path: IS.imageStatus.path,
        frame: (i) => grpcMessageFrame(IS.imageStatus.requestSerialize(request(i))),
        answer,
        decode: (b) => IS.imageStatus.responseDeserialize(b),
      };
      statusName = 'image_status';
      statusCall = (i) => images.imageStatus({ image: imageIds[i % imageIds.length]! });
    } else {
      const ids = (await runtime.listContainers()).map((c) => c.id);
      const request = (i: number) => ContainerStatusRequest.fromPartial({ containerId: ids[i % ids.length] });
      const answer = RS.containerStatus.responseSerialize(
        await nodeChannel.call(RS.containerStatus, request(0), 120_000),
      );
      status = {
        path: RS.containerStatus.path,
        frame: (i) => grpcMessageFrame(RS.containerStatus.requestSerialize(request(i))),
        answer,
        decode: (b) => RS.containerStatus.responseDeserialize(b),
      };
      statusName = 'container_status';
      statusCall = (i) => runtime.containerStatus(ids[i % ids.length]!, false);
    }
    const createRequests = Array.from({ length: 100 }, (_, i) => createContainerRequest(i));
    const all: Record<string, Call> = {
      version_protobuf: () =>
        Promise.resolve(RS.version.responseDeserialize(versionAnswer) && versionFrame()),
      version_bare_node_http2: () => bareHttp2(session, RS.version.path, versionFrame()),
      version_lean_node_http2: () => leanHttp2(session, RS.version.path, versionFrame()),
      version_bare_own_http2: () => bareConnection(own, RS.version.path, versionFrame()),
      version_channel_node_http2: () => nodeChannel.call(RS.version, version, 120_000),
      version_channel_own_http2: () => ownChannel.call(RS.version, version, 120_000),
      version_runtime_service: () => runtime.version(),
      [`${statusName}_protobuf`]: (i) => Promise.resolve(status.decode(status.answer) && status.frame(i)),
      [`${statusName}_bare_node_http2`]: (i) => bareHttp2(session, status.path, status.frame(i)),
      [`${statusName}_bare_own_http2`]: (i) => bareConnection(own, status.path, status.frame(i)),
      [`${statusName}_service`]: statusCall,
      create_container_request_encode: (i) =>
        Promise.resolve(requestFrame(RS.createContainer, createRequests[i % 100]!)),
      list_containers_service: () => runtime.listContainers(),
      list_podsandbox_service: () => runtime.listPodSandbox(),
    };
    const wanted = process.env.BENCH_CRI_LAYERS?.split(',');
    const layers = Object.fromEntries(
      Object.entries(all).filter(([name]) => !wanted || wanted.includes(name)),
    );
    for (const atOnce of [1, 16]) {
      const samples = new Map(Object.keys(layers).map((k) => [k, [] as number[]]));
      for (const call of Object.values(layers)) await perCallUs(call, calls, atOnce);
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? Object.entries(layers) : Object.entries(layers).reverse();
        for (const [name, call] of order) samples.get(name)!.push(await perCallUs(call, calls, atOnce));
      }
      for (const [name, values] of samples) {
        emit({
          bench: BENCH,
          n: atOnce,
          metric: `${name}_cpu_us`,
          value: percentile(values, 50),
          min: Math.min(...values),
          max: Math.max(...values),
          note: `client CPU per call, ${atOnce} at a time, median of ${rounds} × ${calls}`,
        });
      }
      say(`cri-call: ${atOnce} at a time done`);
    }
  } finally {
    session.close();
    own.close();
    nodeChannel.close();
    ownChannel.close();
    runtime.close();
    images.close();
    stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
