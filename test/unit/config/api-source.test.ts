import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiSource } from '../../../src/config/api-source.js';
import { PodConfig, type SourceUpdate } from '../../../src/config/pod-config.js';
import type { PodUpdate } from '../../../src/config/types.js';
import type { Pod } from '../../../src/api/core-v1.js';
import type { ListerWatcher } from '../../../src/k8s/reflector.js';
import { RestClient, type WatchEvent, type WatchStream } from '../../../src/k8s/rest-client.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { waitFor } from '../../helpers/wait.js';

const NODE = 'node-s';

function podObject(name: string, nodeName = NODE): Record<string, unknown> {
  return {
    metadata: { name, namespace: 'default' },
    spec: { nodeName, containers: [{ name: 'app', image: 'busybox:1.36' }] },
  };
}

describe('ApiSource', () => {
  let server: TestApiServer;
  let client: RestClient;

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE, plainHttp: true });
    client = new RestClient({
      config: { server: server.url, token: server.tokenFor(server.nodeUser) },
      qps: -1,
    });
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  it("sends the node's pods as SETs through PodConfig's api channel, marked with their source", async () => {
    server.store.create('pods', podObject('one'));
    server.store.create('pods', podObject('not-mine', 'other'));
    const config = new PodConfig();
    const raw: SourceUpdate[] = [];
    const channel = config.channel('api');
    const merged: PodUpdate[] = [];
    config.onUpdate((u) => merged.push(u));
    const source = new ApiSource({
      client,
      nodeName: NODE,
      send: (u) => {
        raw.push(u);
        channel(u);
      },
    });
    assert.equal(config.seenAllSources(), false);
    source.start();
    try {
      await waitFor('the first SET', () => raw.length >= 1, 5000, 20);
      assert.equal(raw.length, 1, 'one SET for the whole first list');
      assert.equal(raw[0]!.op, 'SET');
      assert.deepEqual(
        raw[0]!.pods.map((p) => p.metadata.name),
        ['one'],
      );
      assert.equal(raw[0]!.pods[0]!.metadata.annotations?.['kubernetes.io/config.source'], 'api');
      assert.equal(config.seenAllSources(), true);
      assert.equal(merged[0]?.op, 'ADD');

      server.store.create('pods', podObject('two'));
      await waitFor(
        'ADD two',
        () => merged.some((u) => u.op === 'ADD' && u.pods.some((p) => p.metadata.name === 'two')),
        5000,
        20,
      );
      assert.deepEqual(
        raw
          .at(-1)!
          .pods.map((p) => p.metadata.name)
          .sort(),
        ['one', 'two'],
      );

      // A graceful deletion reaches the loop as DELETE, the pod carrying its deletionTimestamp.
      server.store.delete('pods', 'one', 'default', { gracePeriodSeconds: 30 });
      await waitFor('DELETE one', () => merged.find((u) => u.op === 'DELETE'), 5000, 20);
      const del = merged.find((u) => u.op === 'DELETE')!;
      assert.equal(del.pods[0]!.metadata.name, 'one');
      assert.ok(del.pods[0]!.metadata.deletionTimestamp);
      assert.equal(del.pods[0]!.metadata.deletionGracePeriodSeconds, 30);

      server.store.delete('pods', 'one', 'default', { gracePeriodSeconds: 0 });
      await waitFor('REMOVE one', () => merged.find((u) => u.op === 'REMOVE'), 5000, 20);
      assert.equal(source.getPod('default', 'two')?.metadata.name, 'two');
      assert.equal(source.getPod('default', 'one'), undefined);
    } finally {
      await source.stop();
    }
  });

  it('hands over an unchanged pod as the object it sent before, so PodConfig skips comparing it', async () => {
    server.store.create('pods', podObject('steady'));
    const raw: SourceUpdate[] = [];
    const source = new ApiSource({ client, nodeName: NODE, send: (u) => raw.push(u) });
    source.start();
    try {
      await waitFor(
        'the first SET',
        () => raw.some((u) => u.pods.some((p) => p.metadata.name === 'steady')),
        5000,
        20,
      );
      const before = raw.at(-1)!;
      server.store.create('pods', podObject('newcomer'));
      await waitFor(
        'the SET with newcomer',
        () => raw.at(-1)!.pods.some((p) => p.metadata.name === 'newcomer'),
        5000,
        20,
      );
      const after = raw.at(-1)!;
      const steady = (u: SourceUpdate) => u.pods.find((p) => p.metadata.name === 'steady');
      assert.ok(steady(before));
      assert.equal(steady(after), steady(before), 'the same object for a pod the watch did not change');
      assert.equal(steady(after)!.metadata.annotations?.['kubernetes.io/config.source'], 'api');
    } finally {
      await source.stop();
      server.store.delete('pods', 'steady', 'default', { gracePeriodSeconds: 0 });
      server.store.delete('pods', 'newcomer', 'default', { gracePeriodSeconds: 0 });
    }
  });

  it('waits for the node to be registered before watching', async () => {
    let registered = false;
    const raw: SourceUpdate[] = [];
    const source = new ApiSource({
      client,
      nodeName: 'later-node',
      send: (u) => raw.push(u),
      nodeHasSynced: () => registered,
    });
    source.start();
    try {
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(raw.length, 0);
      assert.equal(server.requests.filter((r) => r.query.includes('later-node')).length, 0);
      registered = true;
      await waitFor('the first (empty) SET', () => raw.length === 1, 5000, 20);
      assert.deepEqual(raw[0], { op: 'SET', pods: [] });
    } finally {
      await source.stop();
    }
  });

  it('sends one SET for the watch events that came in one read, the last version of each pod', async () => {
    const pod = (name: string, resourceVersion: string) =>
      ({
        metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion },
        spec: { nodeName: NODE, containers: [] },
      }) as unknown as Pod;
    let closeWatch = () => {};
    const closed = new Promise<void>((resolve) => (closeWatch = resolve));
    // Three events handed over at once, as a stream hands over what one read of the socket held.
    const events: WatchEvent<Pod>[] = [
      { type: 'ADDED', object: pod('a', '2') },
      { type: 'ADDED', object: pod('b', '3') },
      { type: 'MODIFIED', object: pod('a', '4') },
    ];
    const stream: WatchStream<Pod> = {
      close: closeWatch,
      async *[Symbol.asyncIterator]() {
        // After the first SET has gone: the events come in a later read.
        await new Promise((r) => setTimeout(r, 20));
        yield* events;
        await closed;
      },
    };
    const lister = {
      list: () => Promise.resolve({ ok: true, object: { metadata: { resourceVersion: '1' }, items: [] } }),
      watch: () => Promise.resolve({ ok: true, object: stream }),
    } as unknown as ListerWatcher;
    const raw: SourceUpdate[] = [];
    const source = new ApiSource({ client: lister, nodeName: NODE, send: (u) => raw.push(u) });
    source.start();
    try {
      await waitFor('the SET after the events', () => raw.length >= 2, 5000, 5);
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(raw[0], { op: 'SET', pods: [] });
      assert.equal(raw.length, 2, 'one SET for the three events');
      assert.deepEqual(
        raw[1]!.pods.map((p) => [p.metadata.name, p.metadata.resourceVersion]),
        [
          ['a', '4'],
          ['b', '3'],
        ],
      );
    } finally {
      closeWatch();
      await source.stop();
    }
  });
});
