/**
 * Static pods end to end: the built kubelet, a manifest folder, and the private containerd
 * (scripts/runtime-stack.sh). Each test runs its own kubelet on its own folders and removes the
 * sandboxes it made, by namespace.
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ContainerStatus, Pod } from '../../src/api/core-v1.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-static-${process.pid}`;

function pod(name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>, uid?: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, ...(uid ? { uid } : {}) },
    spec: { terminationGracePeriodSeconds: 2, ...spec },
  };
}

function busybox(name: string, script: string): Pod['spec']['containers'][number] {
  return { name, image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script] };
}

function containerStatus(p: Pod | undefined, name: string): ContainerStatus | undefined {
  return p?.status?.containerStatuses?.find((c) => c.name === name);
}

describe('static pods through containerd', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess | undefined;

  before(async () => {
    cri = await CriInspector.connect();
  });

  afterEach(async () => {
    await kubelet?.dispose();
    kubelet = undefined;
    await cri.removeNamespace(ns);
  });

  after(() => cri.close());

  async function startKubelet(extraArgs: string[] = []): Promise<KubeletProcess> {
    kubelet = new KubeletProcess({ extraArgs });
    await kubelet.start();
    return kubelet;
  }

  test('with --max-parallel-pod-starts=1, each pod starts after the one before has its container started', async (t) => {
    const k = await startKubelet(['--max-parallel-pod-starts=1']);
    const names = ['one', 'two', 'three'];
    for (const name of names)
      await k.writeManifest(`${name}.yaml`, pod(name, { containers: [busybox('main', 'exec sleep 3600')] }));
    for (const name of names)
      await waitFor(
        `${name} to be Running`,
        async () => containerStatus(await k.pod(name), 'main')?.state?.running,
        60_000,
      );

    // CRI's own clock: when each sandbox was made, and when its pod's container started.
    const starts: { pod: string; sandboxCreatedNs: number; containerStartedNs: number }[] = [];
    for (const sb of await cri.sandboxes(ns)) {
      const [c] = await cri.podContainers(ns, sb.metadata.name);
      assert.ok(c, `${sb.metadata.name} has its container`);
      const { status } = await cri.conn.runtime.containerStatus(c.id);
      starts.push({
        pod: sb.metadata.name,
        sandboxCreatedNs: sb.createdAt,
        containerStartedNs: status.startedAt,
      });
    }
    assert.equal(starts.length, 3);
    starts.sort((a, b) => a.sandboxCreatedNs - b.sandboxCreatedNs);
    let checked = 0;
    for (let i = 1; i < starts.length; i++) {
      const before = starts[i - 1]!;
      // A start that held its slot for the whole 5 s lapse lets the next one go early: nothing to check then.
      if (before.containerStartedNs - before.sandboxCreatedNs > 4e9) continue;
      checked++;
      assert.ok(
        starts[i]!.sandboxCreatedNs >= before.containerStartedNs,
        `${starts[i]!.pod}'s sandbox was made before ${before.pod}'s container had started: ${JSON.stringify(starts)}`,
      );
    }
    // Depends on the machine: one so loaded that every start outlived its slot leaves nothing to check.
    if (checked === 0)
      t.skip(
        `every start took over 4 s on this machine, so none could be checked: ${JSON.stringify(starts)}`,
      );
  });

  test('a static pod starts and becomes Running', async () => {
    const k = await startKubelet();
    await k.writeManifest(
      'web.yaml',
      pod('web', { containers: [busybox('main', 'echo started; exec sleep 3600')] }),
    );

    const running = await waitFor(
      'web to be Running',
      async () => {
        const p = await k.pod('web');
        return p?.status?.phase === 'Running' && containerStatus(p, 'main')?.state?.running ? p : undefined;
      },
      60_000,
    );
    assert.equal(running.metadata.namespace, ns);
    assert.equal(running.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    assert.match(running.status?.podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);
    const cs = containerStatus(running, 'main')!;
    assert.equal(cs.ready, true);
    assert.equal(cs.restartCount, 0);
    assert.match(cs.containerID ?? '', /^containerd:\/\/[0-9a-f]{64}$/);
    const ready = running.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'True');

    // The runtime carries upstream's labels, so containerd tools and a restarted kubelet can read it back.
    const containers = await cri.podContainers(ns, `web-${k.nodeName}`);
    assert.equal(containers.length, 1);
    assert.equal(containers[0]!.labels['io.kubernetes.container.name'], 'main');
    assert.equal(containers[0]!.labels['io.kubernetes.pod.uid'], running.metadata.uid);
    assert.equal(containers[0]!.state, 'CONTAINER_RUNNING');
  });

  test('exited containers follow their restart policy, with a back-off that grows', async () => {
    const k = await startKubelet();
    await k.writeManifest(
      'crash.yaml',
      pod('crash', { restartPolicy: 'Always', containers: [busybox('c', 'exit 3')] }),
    );
    await k.writeManifest(
      'done.yaml',
      pod('done', { restartPolicy: 'OnFailure', containers: [busybox('c', 'exit 0')] }),
    );
    await k.writeManifest(
      'fail.yaml',
      pod('fail', { restartPolicy: 'Never', containers: [busybox('c', 'exit 2')] }),
    );

    // Under Always the container restarts: the first restart comes at once, the next 10 s after the
    // exit before it, then 20 s. The runtime's own start and finish times measure the pauses, so a
    // slow, loaded machine can make them longer but never shorter.
    const attempts = new Map<number, { startedAtMs: number; finishedAtMs: number }>();
    let seenBackoff = false;
    await waitFor(
      'crash to be started a fourth time',
      async () => {
        const cs = containerStatus(await k.pod('crash'), 'c');
        if (cs?.state?.waiting?.reason === 'CrashLoopBackOff') seenBackoff = true;
        for (const c of await cri.podContainers(ns, `crash-${k.nodeName}`)) {
          const { status } = await cri.conn.runtime.containerStatus(c.id);
          attempts.set(status.metadata.attempt, {
            startedAtMs: status.startedAt / 1e6,
            finishedAtMs: status.finishedAt / 1e6,
          });
        }
        return attempts.get(3)?.startedAtMs ? true : undefined;
      },
      120_000,
      200,
    );
    assert.ok(seenBackoff, 'the waiting container showed CrashLoopBackOff');
    const pauseBefore = (attempt: number) =>
      attempts.get(attempt)!.startedAtMs - attempts.get(attempt - 1)!.finishedAtMs;
    assert.ok(pauseBefore(2) >= 9_500, `the third start waited for the 10 s back-off (${pauseBefore(2)} ms)`);
    assert.ok(
      pauseBefore(3) >= 19_500,
      `the fourth start waited for the doubled 20 s back-off (${pauseBefore(3)} ms)`,
    );
    assert.ok(pauseBefore(1) < pauseBefore(2), 'the first restart came sooner than the second');

    const done = await waitFor(
      'done to succeed',
      async () => {
        const p = await k.pod('done');
        return p?.status?.phase === 'Succeeded' ? p : undefined;
      },
      30_000,
    );
    assert.equal(containerStatus(done, 'c')?.restartCount, 0);
    assert.equal(containerStatus(done, 'c')?.state?.terminated?.reason, 'Completed');

    const failed = await waitFor(
      'fail to fail',
      async () => {
        const p = await k.pod('fail');
        return p?.status?.phase === 'Failed' ? p : undefined;
      },
      30_000,
    );
    const term = containerStatus(failed, 'c')?.state?.terminated;
    assert.equal(term?.exitCode, 2);
    assert.equal(term?.reason, 'Error');
    assert.equal(containerStatus(failed, 'c')?.restartCount, 0);
  });

  test('editing a manifest restarts only the container whose spec changed', async () => {
    const k = await startKubelet();
    // A manifest with its own UID keeps it across edits, so the edit is an update of the same pod
    // (upstream's rule). Upstream's container hash covers the name and the image: a new image is a change.
    const uid = `5d1b8f2e-0000-4000-8000-${String(process.pid).padStart(12, '0')}`;
    const spec = (changeImage: string) =>
      pod(
        'edit',
        {
          containers: [
            busybox('stay', 'exec sleep 3600'),
            { ...busybox('change', 'exec sleep 3600'), image: changeImage },
          ],
        },
        uid,
      );
    await k.writeManifest('edit.yaml', spec('busybox'));
    const first = await waitFor(
      'both containers running',
      async () => {
        const p = await k.pod('edit');
        return containerStatus(p, 'stay')?.state?.running && containerStatus(p, 'change')?.state?.running
          ? p
          : undefined;
      },
      60_000,
    );
    const stayId = containerStatus(first, 'stay')!.containerID;
    const changeId = containerStatus(first, 'change')!.containerID;

    await k.writeManifest('edit.yaml', spec('busybox:1.36'));
    const second = await waitFor(
      'the changed container to be replaced',
      async () => {
        const p = await k.pod('edit');
        const cs = containerStatus(p, 'change');
        return cs?.state?.running && cs.containerID !== changeId ? p : undefined;
      },
      60_000,
    );
    assert.equal(
      containerStatus(second, 'stay')!.containerID,
      stayId,
      'the unchanged container kept running',
    );
    assert.equal(containerStatus(second, 'stay')!.restartCount, 0);
    assert.equal(containerStatus(second, 'change')!.restartCount, 1);
    // As containerd reports it, so as upstream shows it.
    assert.equal(containerStatus(second, 'change')!.image, 'docker.io/library/busybox:1.36');
    assert.equal(second.metadata.uid, uid);
  });

  test('removing a manifest stops the pod within its grace period, with SIGKILL when SIGTERM is ignored', async () => {
    const k = await startKubelet();
    // PID 1 ignores SIGTERM unless it handles it: this one must be killed.
    const stubborn = pod('stubborn', {
      terminationGracePeriodSeconds: 3,
      containers: [busybox('main', "trap '' TERM; while true; do sleep 1; done")],
    });
    await k.writeManifest('stubborn.yaml', stubborn);
    await waitFor(
      'stubborn to run',
      async () => containerStatus(await k.pod('stubborn'), 'main')?.state?.running,
      60_000,
    );

    const removedAt = Date.now();
    await k.removeManifest('stubborn.yaml');
    const podName = `stubborn-${k.nodeName}`;
    await waitFor(
      'the container to stop',
      async () => {
        const cs = await cri.podContainers(ns, podName);
        return cs.length > 0 && cs.every((c) => c.state === 'CONTAINER_EXITED');
      },
      30_000,
      100,
    );
    const tookMs = Date.now() - removedAt;
    assert.ok(tookMs >= 2_500, `the container had its 3 s grace period (stopped after ${tookMs} ms)`);
    assert.ok(tookMs < 20_000, `the container was killed soon after its grace period (${tookMs} ms)`);
    const [c] = await cri.podContainers(ns, podName);
    const status = await cri.conn.runtime.containerStatus(c!.id);
    assert.equal(status.status.exitCode, 137, 'killed by SIGKILL');
    await waitFor('the pod to leave /pods', async () => (await k.pod('stubborn')) === undefined, 10_000);
  });

  test('a broken manifest is reported and leaves the other pods untouched', async () => {
    const k = await startKubelet();
    await k.writeManifest('good.yaml', pod('good', { containers: [busybox('main', 'exec sleep 3600')] }));
    const good = await waitFor(
      'good to run',
      async () => {
        const p = await k.pod('good');
        return containerStatus(p, 'main')?.state?.running ? p : undefined;
      },
      60_000,
    );
    const goodId = containerStatus(good, 'main')!.containerID;

    await k.writeManifest('broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: [this is not\n');
    await k.writeManifest(
      'invalid.yaml',
      JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'bad' }, spec: { containers: [] } }),
    );
    await k.writeManifest('later.yaml', pod('later', { containers: [busybox('main', 'exec sleep 3600')] }));
    await waitFor(
      'later to run',
      async () => containerStatus(await k.pod('later'), 'main')?.state?.running,
      60_000,
    );

    const logs = await k.logs();
    assert.match(logs, /broken\.yaml/, 'the broken file is named in the log');
    assert.match(logs, /invalid\.yaml/, 'the invalid pod is named in the log');
    const goodNow = await k.pod('good');
    assert.equal(containerStatus(goodNow, 'main')?.containerID, goodId, 'the good pod was not restarted');
    assert.equal(containerStatus(goodNow, 'main')?.restartCount, 0);
    assert.equal(await k.pod('bad'), undefined);
    assert.ok(k.isRunning());
  });

  test('after kill -9 and a restart, the kubelet adopts the running containers', async () => {
    const k = await startKubelet();
    await k.writeManifest('keep.yaml', pod('keep', { containers: [busybox('main', 'exec sleep 3600')] }));
    await k.writeManifest('drop.yaml', pod('drop', { containers: [busybox('main', 'exec sleep 3600')] }));
    const keep = await waitFor(
      'keep to run',
      async () => {
        const p = await k.pod('keep');
        return containerStatus(p, 'main')?.state?.running ? p : undefined;
      },
      60_000,
    );
    await waitFor(
      'drop to run',
      async () => containerStatus(await k.pod('drop'), 'main')?.state?.running,
      60_000,
    );
    const keepId = containerStatus(keep, 'main')!.containerID;

    await k.stop('SIGKILL');
    // While the kubelet is down, one pod stops being wanted.
    await k.removeManifest('drop.yaml');
    await k.start();

    const adopted = await waitFor(
      'keep to be reported Running again',
      async () => {
        const p = await k.pod('keep');
        return containerStatus(p, 'main')?.state?.running ? p : undefined;
      },
      30_000,
    );
    assert.equal(containerStatus(adopted, 'main')?.containerID, keepId, 'same container, not a new one');
    assert.equal(containerStatus(adopted, 'main')?.restartCount, 0);
    await waitFor(
      'the unwanted pod to be stopped',
      async () => {
        const cs = await cri.podContainers(ns, `drop-${k.nodeName}`);
        return cs.every((c) => c.state === 'CONTAINER_EXITED');
      },
      30_000,
    );
    // A few relists later, still the same container.
    await new Promise((r) => setTimeout(r, 3000));
    const later = await cri.podContainers(ns, `keep-${k.nodeName}`);
    assert.equal(later.filter((c) => c.state === 'CONTAINER_RUNNING').length, 1);
    assert.equal(`containerd://${later[0]!.id}`, keepId);
  });

  test('when containerd stops and starts again, the kubelet stays up and its pods come back', async () => {
    const k = await startKubelet();
    await k.writeManifest(
      'survivor.yaml',
      pod('survivor', { containers: [busybox('main', 'exec sleep 3600')] }),
    );
    const first = await waitFor(
      'survivor to run',
      async () => {
        const p = await k.pod('survivor');
        return containerStatus(p, 'main')?.state?.running ? p : undefined;
      },
      60_000,
    );
    const id = containerStatus(first, 'main')!.containerID;

    await stopContainerd();
    try {
      // The PLEG cannot relist; the kubelet keeps serving and keeps trying.
      await new Promise((r) => setTimeout(r, 4000));
      assert.ok(k.isRunning(), 'the kubelet is still running');
      const res = await fetch(`http://127.0.0.1:${k.healthzPort}/healthz/ping`);
      assert.equal(res.status, 200);
    } finally {
      await startContainerd();
    }
    // A new pod after the outage proves the runtime connection came back, not only the old container.
    await k.writeManifest('after.yaml', pod('after', { containers: [busybox('main', 'exec sleep 3600')] }));
    await waitFor(
      'after to run',
      async () => containerStatus(await k.pod('after'), 'main')?.state?.running,
      60_000,
    );
    const again = await waitFor(
      'survivor to be Running',
      async () => {
        const p = await k.pod('survivor');
        return containerStatus(p, 'main')?.state?.running ? p : undefined;
      },
      30_000,
    );
    assert.equal(containerStatus(again, 'main')?.containerID, id, 'the shim kept the container running');
    assert.equal((await fetch(`http://127.0.0.1:${k.healthzPort}/healthz`)).status, 200);
  });
});

/** Stops only the containerd daemon: the shims, and so the containers, keep running. */
async function stopContainerd(): Promise<void> {
  const { readFile } = await import('node:fs/promises');
  const stackDir = process.env.TSKUBELET_STACK_DIR ?? new URL('../../.stack', import.meta.url).pathname;
  const pid = Number((await readFile(`${stackDir}/containerd.pid`, 'utf8')).trim());
  process.kill(pid, 'SIGTERM');
  await waitFor(
    'containerd to exit',
    () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    },
    20_000,
    100,
  );
}

async function startContainerd(): Promise<void> {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const script = new URL('../../scripts/runtime-stack.sh', import.meta.url).pathname;
  await promisify(execFile)('bash', [script, 'up'], { timeout: 60_000 });
}
