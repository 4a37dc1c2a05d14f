/**
 * subscribeTaskEvents against an in-process containerd Events server on a unix socket: typed events
 * from typeurl payloads, the namespace sent as containerd reads it, other events skipped, and a
 * broken stream re-opened (telling the caller through onSubscribe).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
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
  SubscribeRequest,
} from '../../../src/cri/containerd-events/generated/github.com/containerd/containerd/api/services/events/v1/events.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * containerd's Subscribe as a grpc-js server serves it, built here from the message codecs alone
 * (the generated code carries no grpc-js service): a real gRPC peer for the client's own framing.
 */
const EventsSubscribeService: grpc.ServiceDefinition = {
  subscribe: {
    path: '/containerd.services.events.v1.Events/Subscribe',
    requestStream: false,
    responseStream: true,
    requestSerialize: (request: SubscribeRequest) => Buffer.from(SubscribeRequest.encode(request).finish()),
    requestDeserialize: (bytes: Buffer) => SubscribeRequest.decode(bytes),
    responseSerialize: (envelope: Envelope) => Buffer.from(Envelope.encode(envelope).finish()),
    responseDeserialize: (bytes: Buffer) => Envelope.decode(bytes),
  },
};

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
