/**
 * subscribeTaskEvents against an in-process containerd Events server on a unix socket: typed events
 * from typeurl payloads, the namespace sent as containerd reads it, other events skipped, and a
 * broken stream re-opened (telling the caller through onSubscribe). A grpc-js server checks the
 * client against a real gRPC implementation; a node:http2 server sends what grpc-js never would
 * (messages cut at odd places, compressed or oversized ones, no trailers, resets).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { grpcMessageFrame } from '../../../src/lib/grpc-wire.js';
import { FakeClock } from '../../../src/lib/clock.js';
import {
  subscribeFilters,
  subscribeTaskEvents,
  type TaskEvent,
} from '../../../src/cri/containerd-events/subscribe-task-events.js';
import {
  TaskExit,
  TaskStart,
} from '../../../src/cri/containerd-events/generated/github.com/containerd/containerd/api/events/task.js';
import {
  Envelope,
  EventsDefinition,
  SubscribeRequest,
} from '../../../src/cri/containerd-events/generated/github.com/containerd/containerd/api/services/events/v1/events.js';
import { grpcJsService } from '../../../src/lib/grpc-definitions.js';
import { sleep, waitFor } from '../../helpers/wait.js';

/** containerd's Events service as a grpc-js server serves it: a real gRPC peer for the client's own framing. */
const EventsSubscribeService = grpcJsService(EventsDefinition);

function envelope(topic: string, typeUrl: string, value: Uint8Array): Envelope {
  // env=node: the generated Any holds a Buffer.
  const bytes = Buffer.from(value);
  return Envelope.fromPartial({
    namespace: 'k8s.io',
    topic,
    timestamp: new Date(),
    event: { typeUrl, value: bytes },
  });
}

test('typed task events, namespace header and filters; a broken stream is re-opened', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'events-unit-'));
  const socket = join(dir, 'containerd.sock');
  const seen: { namespace: unknown; filters: string[] }[] = [];
  const server = new grpc.Server();
  server.addService(EventsSubscribeService, {
    subscribe: (call: grpc.ServerWritableStream<SubscribeRequest, Envelope>) => {
      seen.push({ namespace: call.metadata.get('containerd-namespace')[0], filters: call.request.filters });
      if (seen.length === 1) {
        call.write(envelope('/tasks/start', 'containerd.events.TaskStart', TaskStart.encode({ containerId: 'c1', pid: 42 }).finish()));
        call.write(envelope('/containers/create', 'containerd.events.ContainerCreate', new Uint8Array()));
        call.end(); // containerd went away
      } else {
        call.write(
          envelope('/tasks/exit', 'types.containerd.io/containerd.events.TaskExit',
            TaskExit.encode({ containerId: 'c1', id: 'c1', pid: 42, exitStatus: 3, exitedAt: new Date(1000) }).finish()),
        );
      }
    },
  }); // prettier-ignore
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  const events: TaskEvent[] = [];
  let subscriptions = 0;
  const stop = new AbortController();
  const done = subscribeTaskEvents(socket, 'k8s.io', [], (e) => events.push(e), stop.signal, {
    onSubscribe: () => subscriptions++,
    initialBackoffMs: 10,
  });
  try {
    await waitFor('the exit after the re-subscription', () => events.length >= 2, 10_000, 20);
    assert.deepEqual(
      events.map((e) => [e.type, e.containerId]),
      [
        ['TaskStart', 'c1'],
        ['TaskExit', 'c1'],
      ],
    );
    const [start, exit] = events;
    assert.ok(start?.type === 'TaskStart' && start.pid === 42);
    assert.ok(exit?.type === 'TaskExit' && exit.exitStatus === 3 && exit.execId === '');
    assert.equal(exit.exitedAt?.getTime(), 1000);
    assert.equal(subscriptions, 2);
    assert.equal(seen[0]?.namespace, 'k8s.io');
    assert.deepEqual(seen[0]?.filters, subscribeFilters('k8s.io', []));
  } finally {
    stop.abort();
    await done;
    server.forceShutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('filters: each joined to the namespace; none means the four task topics', () => {
  assert.deepEqual(subscribeFilters('k8s.io', ['topic=="/tasks/oom"']), [
    'namespace==k8s.io,topic=="/tasks/oom"',
  ]);
  assert.equal(subscribeFilters('k8s.io', []).length, 4);
  assert.ok(subscribeFilters('k8s.io', []).includes('namespace==k8s.io,topic=="/tasks/exit"'));
});

/** A clock whose sleeps are over at once and remembered: the back-off's delays, without waiting them out. */
class RecordingClock extends FakeClock {
  readonly sleeps: number[] = [];

  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    return signal?.aborted ? Promise.reject(signal.reason as Error) : Promise.resolve();
  }
}

/** One Subscribe as it reached the server: n counts from 1. */
interface SubscribeCall {
  n: number;
  stream: http2.ServerHttp2Stream;
  headers: http2.IncomingHttpHeaders;
}

/** A containerd as raw HTTP/2 on a unix socket; onSubscribe answers each Subscribe however the test likes. */
async function h2Containerd(
  onSubscribe: (call: SubscribeCall) => void,
): Promise<{ socket: string; closedStreams: number[]; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'events-h2-'));
  const socket = join(dir, 'containerd.sock');
  const sessions = new Set<http2.ServerHttp2Session>();
  const closedStreams: number[] = [];
  const server = http2.createServer();
  server.on('session', (session) => sessions.add(session));
  let n = 0;
  server.on('stream', (stream, headers) => {
    // A stream the client resets reports it as an error here too.
    stream.on('error', () => undefined);
    stream.on('close', () => closedStreams.push(stream.rstCode));
    onSubscribe({ n: ++n, stream, headers });
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    socket,
    closedStreams,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}

const GRPC_HEADERS = { ':status': 200, 'content-type': 'application/grpc' };

function taskStartFrame(containerId: string, pid: number): Buffer {
  const start = TaskStart.encode({ containerId, pid }).finish();
  return grpcMessageFrame(
    Envelope.encode(envelope('/tasks/start', 'containerd.events.TaskStart', start)).finish(),
  );
}

test('messages arrive whole and in order however DATA cuts them; abort resets the stream and closes the connection', async () => {
  const requests: { headers: http2.IncomingHttpHeaders; body: Buffer }[] = [];
  let connectionClosed = false;
  const fake = await h2Containerd(({ stream, headers }) => {
    stream.session?.on('close', () => (connectionClosed = true));
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => requests.push({ headers, body: Buffer.concat(chunks) }));
    stream.respond(GRPC_HEADERS);
    const [a, b, c] = [taskStartFrame('a', 1), taskStartFrame('b', 2), taskStartFrame('c', 3)];
    // Written apart so that they go as DATA frames of their own: a's prefix cut in two, b whole
    // after a's last bytes, c cut in the middle of its body.
    void (async () => {
      for (const piece of [
        a.subarray(0, 3),
        a.subarray(3, 12),
        Buffer.concat([a.subarray(12), b, c.subarray(0, 9)]),
        c.subarray(9),
      ]) {
        stream.write(piece);
        await sleep(20);
      }
    })();
  });
  const events: TaskEvent[] = [];
  const breaks: string[] = [];
  let subscriptions = 0;
  const stop = new AbortController();
  const done = subscribeTaskEvents(
    `unix://${fake.socket}`,
    'k8s.io',
    ['topic=="/tasks/start"'],
    (e) => events.push(e),
    stop.signal,
    { onSubscribe: () => subscriptions++, onBreak: (e) => breaks.push(e) },
  );
  try {
    await waitFor('three events', () => events.length >= 3, 5000, 10);
    assert.deepEqual(
      events.map((e) => e.type === 'TaskStart' && [e.containerId, e.pid]),
      [
        ['a', 1],
        ['b', 2],
        ['c', 3],
      ],
    );
    const request = await waitFor('the request', () => requests[0], 5000, 10);
    assert.equal(request.headers[':method'], 'POST');
    assert.equal(request.headers[':path'], '/containerd.services.events.v1.Events/Subscribe');
    assert.equal(request.headers['content-type'], 'application/grpc');
    assert.equal(request.headers.te, 'trailers');
    assert.equal(request.headers['containerd-namespace'], 'k8s.io');
    assert.equal(request.body[0], 0);
    assert.equal(request.body.readUInt32BE(1), request.body.length - 5);
    assert.deepEqual(
      SubscribeRequest.decode(request.body.subarray(5)).filters,
      subscribeFilters('k8s.io', ['topic=="/tasks/start"']),
    );

    stop.abort();
    await done;
    await waitFor('the stream reset', () => fake.closedStreams.length === 1, 5000, 10);
    assert.deepEqual(fake.closedStreams, [http2.constants.NGHTTP2_CANCEL]);
    await waitFor('the connection closed', () => connectionClosed, 5000, 10);
    assert.equal(subscriptions, 1);
    assert.deepEqual(breaks, [], 'an abort is not a break');
  } finally {
    stop.abort();
    await done;
    await fake.close();
  }
});

test('each way a stream fails is a break with its reason; the back-off starts over after an event', async () => {
  const fake = await h2Containerd(({ n, stream }) => {
    switch (n) {
      case 1: // an event, then a non-zero status in the trailers
        stream.respond(GRPC_HEADERS, { waitForTrailers: true });
        stream.on('wantTrailers', () =>
          stream.sendTrailers({ 'grpc-status': '14', 'grpc-message': 'containerd%20is%20stopping' }),
        );
        stream.end(taskStartFrame('one', 1));
        return;
      case 2: // a status in the headers alone
        stream.respond(
          { ...GRPC_HEADERS, 'grpc-status': '12', 'grpc-message': 'unknown service' },
          { endStream: true },
        );
        return;
      case 3: // the server ends without trailers
        stream.respond(GRPC_HEADERS);
        stream.end();
        return;
      case 4: {
        // an event, then a compressed message
        stream.respond(GRPC_HEADERS);
        const compressed = taskStartFrame('zipped', 4);
        compressed[0] = 1;
        stream.write(Buffer.concat([taskStartFrame('four', 4), compressed]));
        return;
      }
      case 5: // a message over the limit: its prefix alone
        stream.respond(GRPC_HEADERS);
        stream.write(Buffer.from([0, 0, 0x50, 0, 0]));
        return;
      case 6: // a reset
        stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        return;
      default: // containerd goes away
        stream.session?.destroy();
    }
  });
  const events: TaskEvent[] = [];
  const breaks: string[] = [];
  let subscriptions = 0;
  const stop = new AbortController();
  const clock = new RecordingClock();
  const done = subscribeTaskEvents(fake.socket, 'k8s.io', [], (e) => events.push(e), stop.signal, {
    onSubscribe: () => subscriptions++,
    onBreak: (e) => {
      breaks.push(e);
      if (breaks.length === 7) stop.abort();
    },
    clock,
    initialBackoffMs: 10,
    maxBackoffMs: 1000,
  });
  try {
    await done;
    const expected = [
      /^14 UNAVAILABLE: containerd is stopping$/,
      /^12 UNIMPLEMENTED: unknown service$/,
      /^13 INTERNAL: no grpc-status in the answer \(HTTP status 200\)$/,
      /^13 INTERNAL: compressed message/,
      /^8 RESOURCE_EXHAUSTED: Received message larger than max \(5242880 vs\. 4194304\)$/,
      /^14 UNAVAILABLE: stream reset by the server \(code 2\)$/,
      /^14 UNAVAILABLE: connection (closed|error)/,
    ];
    assert.equal(breaks.length, expected.length, breaks.join('\n'));
    breaks.forEach((b, i) => assert.match(b, expected[i]!));
    assert.equal(subscriptions, 7);
    assert.deepEqual(
      events.map((e) => e.containerId),
      ['one', 'four'],
    );
    // The streams with an event (1 and 4) start the back-off over; the others double it.
    const bases = [10, 20, 40, 10, 20, 40];
    bases.forEach((base, i) => {
      const ms = clock.sleeps[i]!;
      assert.ok(ms >= base && ms <= Math.ceil(base * 1.2), `sleep ${i}: ${ms} ms, expected about ${base}`);
    });
    // The compressed and the oversized message are refused mid-stream: the client resets those.
    await waitFor('the streams closed', () => fake.closedStreams.length === 7, 5000, 10);
    assert.equal(fake.closedStreams[3], http2.constants.NGHTTP2_CANCEL);
    assert.equal(fake.closedStreams[4], http2.constants.NGHTTP2_CANCEL);
  } finally {
    stop.abort();
    await done;
    await fake.close();
  }
});

test('a socket that is not there: each attempt fails at once with the connect error, and is retried', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'events-none-'));
  const breaks: string[] = [];
  let subscriptions = 0;
  const stop = new AbortController();
  try {
    await subscribeTaskEvents(join(dir, 'missing.sock'), 'k8s.io', [], () => undefined, stop.signal, {
      onSubscribe: () => subscriptions++,
      onBreak: (e) => {
        breaks.push(e);
        if (breaks.length === 2) stop.abort();
      },
      initialBackoffMs: 1,
    });
    assert.equal(subscriptions, 2);
    for (const b of breaks) assert.match(b, /^14 UNAVAILABLE: connection error: connect ENOENT/);
  } finally {
    stop.abort();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an abort sends RST_STREAM CANCEL for the stream, then GOAWAY, and closes the socket', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'events-raw-'));
  const socket = join(dir, 'containerd.sock');
  // A server that answers nothing and keeps what the client sends, until the client closes.
  const received = new Promise<Buffer>((resolve) => {
    const server = net.createServer((conn) => {
      const chunks: Buffer[] = [];
      conn.on('data', (c: Buffer) => chunks.push(c));
      conn.on('end', () => {
        conn.end();
        server.close();
        resolve(Buffer.concat(chunks));
      });
    });
    server.listen(socket);
  });
  const stop = new AbortController();
  try {
    await waitFor('the socket', () => existsSync(socket), 5000, 5);
    const done = subscribeTaskEvents(socket, 'k8s.io', [], () => undefined, stop.signal, {
      onSubscribe: () => setTimeout(() => stop.abort(), 20),
    });
    await done;
    const bytes = await received;
    const frames: { type: number; flags: number; streamId: number; payload: Buffer }[] = [];
    for (let at = 24; at + 9 <= bytes.length;) {
      const length = bytes.readUIntBE(at, 3);
      frames.push({
        type: bytes[at + 3]!,
        flags: bytes[at + 4]!,
        streamId: bytes.readUInt32BE(at + 5),
        payload: bytes.subarray(at + 9, at + 9 + length),
      });
      at += 9 + length;
    }
    const onStream = frames.filter((f) => f.streamId === 1).map((f) => f.type);
    // HEADERS, the request's DATA (ending the client's side), then the reset.
    assert.deepEqual(onStream, [0x1, 0x0, 0x3]);
    const reset = frames.find((f) => f.type === 0x3)!;
    assert.equal(reset.payload.readUInt32BE(0), http2.constants.NGHTTP2_CANCEL);
    assert.equal(frames.at(-1)?.type, 0x7, 'GOAWAY last');
    assert.ok(frames.indexOf(reset) < frames.length - 1);
  } finally {
    stop.abort();
    rmSync(dir, { recursive: true, force: true });
  }
});
