import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { ApiEventRecorder } from '../../../src/events/event-recorder.js';
import { nodeRef } from '../../../src/api/node.js';
import type { CoreEvent } from '../../../src/events/event-types.js';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { waitFor } from '../../helpers/wait.js';
import { captureLog, printed } from '../k8s/capture-log.js';

const NODE = 'node-ev';

describe('ApiEventRecorder against the test API server', () => {
  let server: TestApiServer;
  let client: RestClient;
  let pod: Pod;
  const recorders: ApiEventRecorder[] = [];

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE, plainHttp: true });
    client = new RestClient({
      config: { server: server.url, token: server.tokenFor(server.nodeUser) },
      qps: -1,
    });
  });
  beforeEach(() => {
    pod = server.store.create('pods', {
      metadata: { name: 'web', namespace: 'default' },
      spec: { nodeName: NODE, containers: [{ name: 'app', image: 'busybox:1.36' }] },
    }) as unknown as Pod;
  });
  afterEach(async () => {
    for (const r of recorders.splice(0)) await r.stop();
    for (const e of server.store.list('events').items)
      server.store.delete('events', e.metadata.name!, e.metadata.namespace);
    for (const p of server.store.list('pods').items)
      server.store.delete('pods', p.metadata.name!, p.metadata.namespace, { gracePeriodSeconds: 0 });
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  function recorder(
    clock: FakeClock,
    extra: Partial<ConstructorParameters<typeof ApiEventRecorder>[0]> = {},
  ) {
    const log = captureLog();
    const r = new ApiEventRecorder({ client, nodeName: NODE, clock, log, ...extra });
    recorders.push(r);
    return { r, log };
  }

  function events(): CoreEvent[] {
    return server.store.list('events').items as unknown as CoreEvent[];
  }

  it('writes a core/v1 Event as upstream does for a container', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 21, 6, 50, 0, 250));
    const { r } = recorder(clock);
    r.event(pod, 'spec.containers{app}', 'Normal', 'Pulling', 'Pulling image "busybox:1.36"');
    await r.idle();
    const [e] = events();
    assert.ok(e);
    const nanos = BigInt(clock.now()) * 1_000_000n;
    assert.equal(e.metadata.name, `web.${nanos.toString(16)}`);
    assert.equal(e.metadata.namespace, 'default');
    assert.deepEqual(e.involvedObject, {
      kind: 'Pod',
      namespace: 'default',
      name: 'web',
      uid: pod.metadata.uid,
      apiVersion: 'v1',
      resourceVersion: pod.metadata.resourceVersion,
      fieldPath: 'spec.containers{app}',
    });
    assert.deepEqual(e.source, { component: 'kubelet', host: NODE });
    assert.equal(e.reportingComponent, 'kubelet');
    assert.equal(e.reportingInstance, NODE);
    assert.equal(e.type, 'Normal');
    assert.equal(e.reason, 'Pulling');
    assert.equal(e.count, 1);
    assert.equal(e.firstTimestamp, '2026-11-21T06:50:00Z');
    assert.equal(e.lastTimestamp, '2026-11-21T06:50:00Z');
  });

  it('counts a repeated event on the existing object with a PATCH', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 21, 7, 0, 0));
    const { r } = recorder(clock);
    r.event(pod, 'spec.containers{app}', 'Warning', 'BackOff', 'Back-off restarting failed container app');
    await r.idle();
    clock.advance(5000);
    r.event(pod, 'spec.containers{app}', 'Warning', 'BackOff', 'Back-off restarting failed container app');
    clock.advance(5000);
    r.event(pod, 'spec.containers{app}', 'Warning', 'BackOff', 'Back-off restarting failed container app');
    await r.idle();
    const all = events();
    assert.equal(all.length, 1);
    assert.equal(all[0]!.count, 3);
    assert.equal(all[0]!.firstTimestamp, '2026-11-21T07:00:00Z');
    assert.equal(all[0]!.lastTimestamp, '2026-11-21T07:00:10Z');
    const patches = server.requests.filter((q) => q.resource === 'events' && q.verb === 'patch');
    assert.equal(patches.length, 2);
    assert.equal(patches[0]!.contentType, 'application/strategic-merge-patch+json');
  });

  it('combines more than 10 distinct messages of one reason into one event', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 21, 8, 0, 0));
    const { r } = recorder(clock);
    for (let i = 0; i < 12; i++) {
      r.event(pod, '', 'Warning', 'FailedMount', `volume ${i} failed`);
      clock.advance(1);
    }
    await r.idle();
    const all = events();
    const combined = all.filter((e) => e.message.startsWith('(combined from similar events): '));
    assert.equal(all.length - combined.length, 9, 'the first nine stand alone');
    assert.equal(combined.length, 1);
    assert.equal(combined[0]!.count, 3);
    assert.equal(combined[0]!.message, '(combined from similar events): volume 11 failed');
  });

  it('lets 25 events per object through, then one per 5 minutes', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 21, 9, 0, 0));
    const { r } = recorder(clock);
    for (let i = 0; i < 40; i++) r.event(pod, '', 'Warning', `Reason${i}`, 'crash');
    await r.idle();
    assert.equal(events().length, 25);
    clock.advance(299_000);
    r.event(pod, '', 'Warning', 'Late1', 'crash');
    await r.idle();
    assert.equal(events().length, 25);
    clock.advance(1_000);
    r.event(pod, '', 'Warning', 'Late2', 'crash');
    await r.idle();
    assert.equal(events().length, 26);
    // Another object has its own bucket.
    r.eventFor(nodeRef(NODE), 'Normal', 'NodeReady', `Node ${NODE} status is now: NodeReady`);
    await r.idle();
    const nodeEvent = events().find((e) => e.involvedObject.kind === 'Node');
    assert.deepEqual(nodeEvent?.involvedObject, { kind: 'Node', name: NODE, uid: NODE });
    assert.equal(nodeEvent?.metadata.namespace, 'default');
  });

  it('keeps at most maxQueuedEvents while the server is away, logs the drop once, retries the rest', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 21, 10, 0, 0));
    const { r, log } = recorder(clock, { maxQueuedEvents: 3, retrySleepMs: 1000, random: () => 0.5 });
    await server.pause();
    try {
      for (let i = 0; i < 6; i++) r.event(pod, '', 'Normal', `R${i}`, 'm');
      // The first is taken off the queue at once; three more fit, two are dropped.
      await waitFor(
        'a failed write',
        () => log.lines.some((l) => /Unable to write event/.test(l.msg)),
        5000,
        10,
      );
      clock.advance(500);
      await waitFor(
        'a second attempt',
        () => log.lines.filter((l) => /Unable to write event/.test(l.msg)).length >= 2,
        5000,
        10,
      );
    } finally {
      await server.resume();
    }
    // Keep the clock moving until the retries go through.
    await waitFor(
      'the queued events',
      () => {
        clock.advance(1000);
        return events().length === 4;
      },
      10_000,
      20,
    );
    await r.idle();
    assert.deepEqual(
      events()
        .map((e) => e.reason)
        .sort(),
      ['R0', 'R1', 'R2', 'R3'],
    );
    const shown = printed(log);
    assert.equal(shown.filter((l) => /too many queued events/.test(l.msg)).length, 1);
    assert.equal(shown.filter((l) => l.level === 'warn').length, 1);
  });
});
