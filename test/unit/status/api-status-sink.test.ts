import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Pod, PodStatus } from '../../../src/api/core-v1.js';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { ApiStatusSink, preparePodStatusPatch, mergePodStatus } from '../../../src/status/api-status-sink.js';
import type { VersionedPodStatus } from '../../../src/status/status-manager.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';
import { waitFor } from '../../helpers/wait.js';
import { captureLog, printed } from '../k8s/capture-log.js';

const NODE = 'node-st';
const T = '2026-11-21T06:50:00Z';
const T1 = '2026-11-21T06:50:03Z';

/** What generateAPIPodStatus reports for a pod whose one container runs. */
function runningStatus(scheduledAt = T): PodStatus {
  return {
    phase: 'Running',
    conditions: [
      { type: 'PodReadyToStartContainers', status: 'True', lastProbeTime: null, lastTransitionTime: T1 },
      { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: T },
      { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: T1 },
      { type: 'ContainersReady', status: 'True', lastProbeTime: null, lastTransitionTime: T1 },
      { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: scheduledAt },
    ],
    hostIP: '10.0.0.4',
    hostIPs: [{ ip: '10.0.0.4' }],
    podIP: '10.88.0.5',
    podIPs: [{ ip: '10.88.0.5' }],
    startTime: T,
    containerStatuses: [
      {
        name: 'app',
        state: { running: { startedAt: T1 } },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: 'docker.io/library/busybox:1.36',
        imageID:
          'docker.io/library/busybox@sha256:3f57d9401f8d42f986df300f0c69192fc41da28ccc8d797829467780db3dd741',
        containerID: 'containerd://4e1c6f0a9b8d',
        started: true,
      },
    ],
    qosClass: 'BestEffort',
  };
}

describe('preparePodStatusPatch', () => {
  it('is byte for byte what upstream sends for a pod that started running', () => {
    // The API's copy after the scheduler bound the pod: Pending, PodScheduled, the server's qosClass.
    const api: PodStatus = {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: T }],
      qosClass: 'BestEffort',
    };
    const merged = mergePodStatus(api, runningStatus(), true, Date.parse(T1));
    const { patch, unchanged } = preparePodStatusPatch('7d0c4b9e-uid', api, merged);
    assert.equal(unchanged, false);
    assert.equal(
      patch,
      '{"metadata":{"uid":"7d0c4b9e-uid"},"status":{' +
        '"$setElementOrder/conditions":[{"type":"PodReadyToStartContainers"},{"type":"Initialized"},{"type":"Ready"},{"type":"ContainersReady"},{"type":"PodScheduled"}],' +
        '"conditions":[' +
        `{"lastProbeTime":null,"lastTransitionTime":"${T1}","status":"True","type":"PodReadyToStartContainers"},` +
        `{"lastProbeTime":null,"lastTransitionTime":"${T}","status":"True","type":"Initialized"},` +
        `{"lastProbeTime":null,"lastTransitionTime":"${T1}","status":"True","type":"Ready"},` +
        `{"lastProbeTime":null,"lastTransitionTime":"${T1}","status":"True","type":"ContainersReady"}],` +
        '"containerStatuses":[{"containerID":"containerd://4e1c6f0a9b8d","image":"docker.io/library/busybox:1.36",' +
        '"imageID":"docker.io/library/busybox@sha256:3f57d9401f8d42f986df300f0c69192fc41da28ccc8d797829467780db3dd741",' +
        `"lastState":{},"name":"app","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"${T1}"}}}],` +
        '"hostIP":"10.0.0.4","hostIPs":[{"ip":"10.0.0.4"}],"phase":"Running","podIP":"10.88.0.5","podIPs":[{"ip":"10.88.0.5"}],' +
        `"startTime":"${T}"}}`,
    );
    // Sent again to the API's new copy: nothing but the precondition, so no PATCH.
    const after = JSON.parse(JSON.stringify(merged)) as PodStatus;
    assert.equal(preparePodStatusPatch('7d0c4b9e-uid', after, runningStatus()).unchanged, true);
  });

  it('keeps conditions the kubelet does not own, holds back a terminal phase while containers may run', () => {
    const api: PodStatus = {
      phase: 'Running',
      conditions: [{ type: 'example.com/gate', status: 'True', lastProbeTime: null, lastTransitionTime: T }],
    };
    const failed: PodStatus = { ...runningStatus(), phase: 'Failed', reason: 'Evicted', message: 'm' };
    const held = mergePodStatus(api, failed, true, Date.parse(T1));
    assert.equal(held.phase, 'Running');
    assert.equal(held.reason, undefined);
    assert.equal(held.conditions?.[0]?.type, 'example.com/gate');
    const done = mergePodStatus(api, failed, false, Date.parse(T1));
    assert.equal(done.phase, 'Failed');
    const ready = done.conditions?.find((c) => c.type === 'Ready');
    assert.deepEqual([ready?.status, ready?.reason], ['False', 'PodFailed']);
  });
});

function deepFreeze<T>(o: T): T {
  if (typeof o === 'object' && o !== null) {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

describe('mergePodStatus', () => {
  it('leaves both statuses as they were (it shares what it keeps of them)', () => {
    const api = deepFreeze<PodStatus>({
      phase: 'Running',
      conditions: [
        { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: T },
        { type: 'example.com/gate', status: 'True', lastProbeTime: null, lastTransitionTime: T },
      ],
      resourceClaimStatuses: [{ name: 'gpu', resourceClaimName: 'gpu-claim' }],
    } as PodStatus);
    const evicted = deepFreeze<PodStatus>({
      ...runningStatus(),
      phase: 'Failed',
      reason: 'Evicted',
      conditions: [
        ...runningStatus().conditions!,
        { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', lastProbeTime: null },
      ],
    });
    const before = structuredClone([api, evicted]);
    const merged = mergePodStatus(api, evicted, false, Date.parse(T1));
    assert.deepEqual([api, evicted], before);
    assert.equal(merged.phase, 'Failed');
    assert.deepEqual(
      merged.conditions?.map((c) => `${c.type}=${c.status} ${c.lastTransitionTime ?? ''}`),
      [
        `example.com/gate=True ${T}`,
        `PodReadyToStartContainers=True ${T1}`,
        `Initialized=True ${T}`,
        `Ready=False ${T1}`,
        `ContainersReady=False ${T1}`,
        `PodScheduled=True ${T}`,
        `DisruptionTarget=True ${T1}`,
      ],
    );
    assert.deepEqual((merged as PodStatus & { resourceClaimStatuses?: unknown }).resourceClaimStatuses, [
      { name: 'gpu', resourceClaimName: 'gpu-claim' },
    ]);
  });
});

describe('ApiStatusSink against the test API server', () => {
  let server: TestApiServer;
  let client: RestClient;
  const sinks: ApiStatusSink[] = [];

  before(async () => {
    server = await startTestApiServer({ nodeName: NODE, plainHttp: true });
    client = new RestClient({
      config: { server: server.url, token: server.tokenFor(server.nodeUser) },
      qps: -1,
    });
  });
  afterEach(async () => {
    for (const s of sinks.splice(0)) await s.stop();
    for (const p of server.store.list('pods').items)
      server.store.delete('pods', p.metadata.name!, p.metadata.namespace, { gracePeriodSeconds: 0 });
  });
  after(async () => {
    client.close();
    await server.stop();
  });

  function makeSink(extra: Partial<ConstructorParameters<typeof ApiStatusSink>[0]> = {}) {
    const log = captureLog();
    const sink = new ApiStatusSink({ client, log, ...extra });
    sinks.push(sink);
    return { sink, log };
  }

  function createBoundPod(name: string, annotations?: Record<string, string>): Pod {
    server.store.create('pods', {
      metadata: { name, namespace: 'default', ...(annotations ? { annotations } : {}) },
      spec: { containers: [{ name: 'app', image: 'busybox:1.36' }] },
    });
    return server.store.bindPod(name, 'default', NODE) as unknown as Pod;
  }

  function versioned(
    pod: Pod,
    status: PodStatus,
    version: number,
    podIsFinished = false,
    uid?: string,
  ): VersionedPodStatus {
    return {
      uid: uid ?? pod.metadata.uid ?? '',
      podName: pod.metadata.name ?? '',
      podNamespace: pod.metadata.namespace ?? '',
      status,
      version,
      podIsFinished,
      atMs: Date.now(),
    };
  }

  function apiPod(name: string): Pod | undefined {
    return server.store.tryGet('pods', name, 'default') as unknown as Pod | undefined;
  }

  function statusPatches(name: string): number {
    return server.requests.filter((r) => r.verb === 'patch' && r.subresource === 'status' && r.name === name)
      .length;
  }

  it("patches the status of a running pod; the scheduler's PodScheduled stays; an unchanged status sends nothing", async () => {
    const pod = createBoundPod('web');
    const scheduledAt = pod.status?.conditions?.find((c) => c.type === 'PodScheduled')?.lastTransitionTime;
    const { sink } = makeSink();
    sink.podStatusChanged(versioned(pod, runningStatus(scheduledAt), 1));
    await sink.idle();
    const got = apiPod('web')!;
    assert.equal(got.status?.phase, 'Running');
    assert.deepEqual(
      got.status?.conditions?.map((c) => `${c.type}=${c.status}`),
      [
        'PodReadyToStartContainers=True',
        'Initialized=True',
        'Ready=True',
        'ContainersReady=True',
        'PodScheduled=True',
      ],
    );
    assert.equal(got.status?.containerStatuses?.[0]?.state?.running?.startedAt, T1);
    assert.equal(got.status?.podIP, '10.88.0.5');
    const patch = server.requests.filter((r) => r.verb === 'patch').at(-1)!;
    assert.equal(patch.contentType, 'application/strategic-merge-patch+json');
    assert.equal(patch.path, '/api/v1/namespaces/default/pods/web/status');
    assert.equal(sink.syncedVersion(pod.metadata.uid!), 1);

    sink.podStatusChanged(versioned(pod, runningStatus(scheduledAt), 2));
    await sink.idle();
    assert.equal(statusPatches('web'), 1, 'the same status is not patched again');
    assert.equal(sink.syncedVersion(pod.metadata.uid!), 2);
  });

  it('never moves a pod out of a terminal phase it has in the API', async () => {
    const pod = createBoundPod('done');
    const current = apiPod('done')!;
    server.store.updateStatus('pods', {
      ...current,
      status: { ...current.status, phase: 'Succeeded', reason: 'Done' },
    } as never);
    const { sink } = makeSink();
    sink.podStatusChanged(versioned(pod, runningStatus(), 1));
    await sink.idle();
    const got = apiPod('done')!;
    assert.equal(got.status?.phase, 'Succeeded');
    assert.equal(got.status?.reason, 'Done');
    // The rest of the status still goes through; Ready is never True on a terminal pod.
    assert.equal(got.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  });

  it('deletes a terminated pod that is being deleted, with grace 0 and its UID as precondition', async () => {
    const pod = createBoundPod('going');
    server.store.delete('pods', 'going', 'default', { gracePeriodSeconds: 30 });
    assert.ok(apiPod('going')?.metadata.deletionTimestamp);
    const { sink } = makeSink();
    const stopped: PodStatus = {
      ...runningStatus(),
      phase: 'Running',
      containerStatuses: [
        {
          ...runningStatus().containerStatuses![0]!,
          ready: false,
          started: false,
          state: {
            terminated: {
              exitCode: 137,
              reason: 'Error',
              startedAt: T,
              finishedAt: T1,
              containerID: 'containerd://4e1c6f0a9b8d',
            },
          },
        },
      ],
    };
    // Terminating, not finished yet: the status goes, the pod stays.
    sink.podStatusChanged(versioned(pod, stopped, 1));
    await sink.idle();
    assert.ok(apiPod('going'));
    assert.equal(server.requests.filter((r) => r.verb === 'delete' && r.name === 'going').length, 0);
    // Finished (the status manager's terminatePod): Failed, then gone.
    sink.podStatusChanged(versioned(pod, { ...stopped, phase: 'Failed' }, 2, true));
    await sink.idle();
    assert.equal(apiPod('going'), undefined);
    const deletes = server.requests.filter((r) => r.verb === 'delete' && r.name === 'going');
    assert.equal(deletes.length, 1);
    assert.equal(deletes[0]!.code, 200);
  });

  it('skips the status of a pod that was deleted and recreated under the same name', async () => {
    const old = createBoundPod('again');
    server.store.delete('pods', 'again', 'default', { gracePeriodSeconds: 0 });
    createBoundPod('again');
    const { sink } = makeSink();
    sink.podStatusChanged(versioned(old, runningStatus(), 1, true));
    await sink.idle();
    assert.equal(statusPatches('again'), 0);
    assert.equal(apiPod('again')?.status?.phase, 'Pending');
    assert.equal(sink.syncedVersion(old.metadata.uid!), undefined, 'the old status is forgotten');
  });

  it("sends a static pod's status to its mirror pod, which it never deletes", async () => {
    const mirror = createBoundPod('static-web-node', { 'kubernetes.io/config.mirror': 'abc123' });
    server.store.delete('pods', 'static-web-node', 'default', { gracePeriodSeconds: 30 });
    const { sink } = makeSink();
    const staticUid = 'abc123'; // a static pod's UID is its config hash
    sink.podStatusChanged(versioned(mirror, { ...runningStatus(), phase: 'Succeeded' }, 1, true, staticUid));
    await sink.idle();
    const got = apiPod('static-web-node')!;
    assert.equal(got.status?.phase, 'Succeeded');
    assert.equal(got.status?.containerStatuses?.[0]?.name, 'app');
    assert.equal(
      server.requests.filter((r) => r.verb === 'delete' && r.name === 'static-web-node').length,
      0,
    );
    assert.ok(apiPod('static-web-node'));
  });

  it('reconciles: a status someone else changed is sent again', async () => {
    const pod = createBoundPod('drift');
    const { sink } = makeSink({
      reconcilePeriodMs: 100,
      getApiPod: (ns, name) => server.store.tryGet('pods', name, ns) as never,
    });
    sink.start();
    sink.podStatusChanged(versioned(pod, runningStatus(), 1));
    await sink.idle();
    const current = apiPod('drift')!;
    server.store.updateStatus('pods', {
      ...current,
      status: { ...current.status, podIP: '10.99.99.99' },
    } as never);
    await waitFor('the reconcile', () => apiPod('drift')?.status?.podIP === '10.88.0.5', 5000, 50);
    assert.equal(statusPatches('drift'), 2);
  });

  /** The pod watch's copies, as the ApiSource holds them: the test says when each arrives. */
  function fakeWatch() {
    const copies = new Map<string, Pod>();
    return {
      getApiPod: (_ns: string, name: string) => copies.get(name),
      /** The watch delivers the API server's current copy of name. */
      deliver: (name: string) => copies.set(name, structuredClone(apiPod(name)!)),
    };
  }

  function podGets(name: string): number {
    return server.requests.filter((r) => r.verb === 'get' && r.name === name).length;
  }

  it('a status that did not change since the last patch costs no GET once the watch has that patch', async () => {
    const pod = createBoundPod('calm');
    const watch = fakeWatch();
    const { sink } = makeSink({ getApiPod: watch.getApiPod });
    sink.podStatusChanged(versioned(pod, runningStatus(), 1));
    await sink.idle();
    assert.deepEqual([podGets('calm'), statusPatches('calm')], [1, 1]);
    // The pod's deletion starts: the watch brings the patched pod with its deletionTimestamp, and
    // the kubelet's forced status (upstream: SetPodStatus with a deletionTimestamp) is the same.
    server.store.delete('pods', 'calm', 'default', { gracePeriodSeconds: 30 });
    watch.deliver('calm');
    sink.podStatusChanged(versioned(pod, runningStatus(), 2));
    await sink.idle();
    assert.deepEqual([podGets('calm'), statusPatches('calm')], [1, 1], 'no GET, no PATCH');
    assert.equal(sink.syncedVersion(pod.metadata.uid!), 2);
  });

  it('deletes a finished pod whose final status the API already has, with no GET', async () => {
    const pod = createBoundPod('over');
    server.store.delete('pods', 'over', 'default', { gracePeriodSeconds: 30 });
    const watch = fakeWatch();
    const { sink } = makeSink({ getApiPod: watch.getApiPod, podCouldHaveRunningContainers: () => false });
    const failed: PodStatus = { ...runningStatus(), phase: 'Failed' };
    sink.podStatusChanged(versioned(pod, failed, 1));
    await sink.idle();
    assert.equal(apiPod('over')?.status?.phase, 'Failed');
    watch.deliver('over');
    // upstream TerminatePod: the same status, forced, now finished.
    sink.podStatusChanged(versioned(pod, failed, 2, true));
    await sink.idle();
    assert.equal(apiPod('over'), undefined);
    assert.deepEqual([podGets('over'), statusPatches('over')], [1, 1]);
    const deletes = server.requests.filter((r) => r.verb === 'delete' && r.name === 'over');
    assert.deepEqual(
      deletes.map((d) => d.code),
      [200],
    );
  });

  it('does not trust a watch copy older than its last patch: a status changed back is sent after a GET', async () => {
    const pod = createBoundPod('flip');
    const watch = fakeWatch();
    const { sink } = makeSink({ getApiPod: watch.getApiPod });
    const first = runningStatus();
    sink.podStatusChanged(versioned(pod, first, 1));
    await sink.idle();
    watch.deliver('flip');
    // The pod IP goes (a terminating pod's fresh read) and comes back before the watch shows it gone.
    const { podIP: _ip, podIPs: _ips, ...withoutIp } = first;
    sink.podStatusChanged(versioned(pod, withoutIp, 2));
    await sink.idle();
    assert.equal(apiPod('flip')?.status?.podIP, undefined);
    sink.podStatusChanged(versioned(pod, first, 3));
    await sink.idle();
    assert.equal(apiPod('flip')?.status?.podIP, '10.88.0.5');
    assert.deepEqual([podGets('flip'), statusPatches('flip')], [3, 3]);
  });

  it('sends a status again at once when the watch shows someone else changed it', async () => {
    const pod = createBoundPod('other');
    const watch = fakeWatch();
    const { sink } = makeSink({ getApiPod: watch.getApiPod });
    sink.podStatusChanged(versioned(pod, runningStatus(), 1));
    await sink.idle();
    const current = apiPod('other')!;
    server.store.updateStatus('pods', {
      ...current,
      status: { ...current.status, podIP: '10.99.99.99' },
    } as never);
    watch.deliver('other');
    sink.podStatusChanged(versioned(pod, runningStatus(), 2));
    await sink.idle();
    assert.equal(apiPod('other')?.status?.podIP, '10.88.0.5');
    assert.deepEqual([podGets('other'), statusPatches('other')], [2, 2]);
  });

  it('GETs a pod the watch shows recreated under another UID, and drops the old status', async () => {
    const old = createBoundPod('reborn');
    const watch = fakeWatch();
    const { sink } = makeSink({ getApiPod: watch.getApiPod });
    sink.podStatusChanged(versioned(old, runningStatus(), 1));
    await sink.idle();
    server.store.delete('pods', 'reborn', 'default', { gracePeriodSeconds: 0 });
    createBoundPod('reborn');
    watch.deliver('reborn');
    sink.podStatusChanged(versioned(old, runningStatus(), 2));
    await sink.idle();
    assert.equal(apiPod('reborn')?.status?.phase, 'Pending');
    assert.deepEqual([podGets('reborn'), statusPatches('reborn')], [2, 1]);
    assert.equal(sink.syncedVersion(old.metadata.uid!), undefined, 'the old status is forgotten');
  });

  it('re-reads the pod and tries again when a PATCH conflicts', async () => {
    const pod = createBoundPod('busy');
    let conflicts = 1;
    const flaky = {
      get: client.get.bind(client),
      delete: client.delete.bind(client),
      patch: ((...args: Parameters<RestClient['patch']>) => {
        if (conflicts-- > 0)
          return Promise.resolve({ ok: false, reason: 'Conflict', status: { kind: 'Status', code: 409 } });
        return client.patch(...args);
      }) as RestClient['patch'],
    };
    const { sink } = makeSink({ client: flaky });
    sink.podStatusChanged(versioned(pod, runningStatus(), 1));
    await sink.idle();
    assert.equal(apiPod('busy')?.status?.phase, 'Running');
    assert.equal(server.requests.filter((r) => r.verb === 'get' && r.name === 'busy').length, 2);
  });

  it('rides out an outage: retries with back-off, one warning, one recovery line', async () => {
    const pod = createBoundPod('patient');
    const { sink, log } = makeSink();
    await server.pause();
    try {
      sink.podStatusChanged(versioned(pod, runningStatus(), 1));
      await new Promise((r) => setTimeout(r, 1500));
    } finally {
      await server.resume();
    }
    await waitFor(
      'the status after the outage',
      () => apiPod('patient')?.status?.phase === 'Running',
      40_000,
      100,
    );
    // The API server has the status as soon as it takes the PATCH; the sink logs its recovery when
    // the answer reaches it, which a busy machine can delay past the check above.
    await sink.idle();
    const failures = log.lines.filter((l) => /Failed to update status/.test(l.msg)).length;
    assert.ok(failures >= 2, `several attempts expected, saw ${failures}`);
    const shown = printed(log);
    assert.equal(shown.filter((l) => l.level === 'warn').length, 1);
    assert.equal(shown.filter((l) => /going through again/.test(l.msg)).length, 1);
  });
});
