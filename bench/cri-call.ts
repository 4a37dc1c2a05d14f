/**
 * The client's CPU per CRI unary call, layer by layer, against the relist bench's fake CRI server in
 * a child process (so process.cpuUsage counts the client only): a bare node:http2 request carrying
 * the same gRPC frame (the floor node:http2 sets), the call through GrpcUnaryChannel (framing,
 * deadline, decoding), and through the instrumented RemoteRuntimeService the kubelet uses (error
 * mapping, conversion, metrics). Version (the smallest answer) and ContainerStatus (a container's
 * whole status), one call at a time and 16 at a time; the layers' batches alternate, so a busy
 * machine weighs on each alike.
 *
 * Env: BENCH_CRI_CALLS (calls per batch, 3000), BENCH_ROUNDS (batches per layer, 7).
 */
import { fork } from 'node:child_process';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GrpcUnaryChannel } from '../src/cri/grpc-unary-channel.js';
import {
  ContainerStatusRequest,
  RuntimeServiceDefinition,
  VersionRequest,
} from '../src/cri/generated/runtime/v1/api.js';
import { instrumentCri } from '../src/cri/instrumented-runtime.js';
import { RemoteRuntimeService } from '../src/cri/remote-runtime.js';
import { grpcMethods } from '../src/lib/grpc-definitions.js';
import { grpcMessageFrame } from '../src/lib/grpc-wire.js';
import { MetricsRegistry } from '../src/lib/metrics.js';
import type { RelistRuntimeReply } from './relist-fake-runtime.js';
import { emit, envNumber, percentile, say } from './report.js';

const BENCH = 'cri-call';
const RS = grpcMethods(RuntimeServiceDefinition);

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

async function main(): Promise<void> {
  const calls = envNumber('BENCH_CRI_CALLS', 3000);
  const rounds = envNumber('BENCH_ROUNDS', 7);
  const here = fileURLToPath(import.meta.url);
  const script = path.join(path.dirname(here), `relist-fake-runtime${path.extname(here)}`);
  const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const reply = await new Promise<RelistRuntimeReply>((resolve) => {
    child.once('message', resolve);
    child.send({ cmd: 'populate', pods: 20, containersPerPod: 1 });
  });
  if (!('endpoint' in reply)) throw new Error('the fake runtime gave no endpoint');
  const socketPath = reply.endpoint.replace(/^unix:\/\//, '');
  const session = http2.connect('http://localhost', { createConnection: () => net.connect(socketPath) });
  const channel = new GrpcUnaryChannel(socketPath, { maxReceiveMessageBytes: 64 * 1024 * 1024 });
  const runtime = instrumentCri(new RemoteRuntimeService(reply.endpoint), new MetricsRegistry());
  try {
    const ids = (await runtime.listContainers()).map((c) => c.id);
    const version = VersionRequest.fromPartial({ version: '0.1.0' });
    const status = (i: number) => ContainerStatusRequest.fromPartial({ containerId: ids[i % ids.length] });
    const layers: Record<string, Call> = {
      version_bare_http2: () =>
        bareHttp2(session, RS.version.path, grpcMessageFrame(RS.version.requestSerialize(version))),
      version_unary_channel: () => channel.call(RS.version, version, 120_000),
      version_runtime_service: () => runtime.version(),
      container_status_bare_http2: (i) =>
        bareHttp2(
          session,
          RS.containerStatus.path,
          grpcMessageFrame(RS.containerStatus.requestSerialize(status(i))),
        ),
      container_status_runtime_service: (i) => runtime.containerStatus(ids[i % ids.length]!, false),
    };
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
    channel.close();
    runtime.close();
    child.send({ cmd: 'exit' });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
