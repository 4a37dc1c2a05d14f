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
