/**
 * Graceful node shutdown end to end: the built kubelet in cluster mode against the test API server
 * and the private containerd, with a stand-in for systemd-logind on a private dbus-daemon
 * (DBUS_SYSTEM_BUS_ADDRESS points the kubelet at it). The inhibitor lock is taken at start;
 * PrepareForShutdown(true) turns the node NotReady, refuses new pods, and stops the pods one
 * priority group at a time within each group's seconds, with upstream's status; then the lock is
 * released. PrepareForShutdown(false) takes it again and the node is Ready again. Without any bus
 * the kubelet says so once and runs its pods.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import type { Node } from '../../src/api/node.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { connectLogind } from '../../src/nodeshutdown/logind-dbus.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { FakeLogind } from '../helpers/fake-logind.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-nodeshutdown-${process.pid}`;
const NODE_NAME = `it-nodeshutdown-node-${process.pid}`;
const MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
/** Budgets of the groups: priority 0, 100000 and the critical ones. */
const LOW_S = 3;
const MID_S = 3;
const CRITICAL_S = 2;

/** sh that ignores SIGTERM: only the grace period's SIGKILL stops it, so it uses its whole budget. */
const STUBBORN = "trap '' TERM; while true; do sleep 1; done";
const POLITE = "trap 'exit 0' TERM; while true; do sleep 1; done";

function podObject(name: string, command: string, spec: Partial<Pod['spec']> = {}): Pod {
  return {
    metadata: { name, namespace: ns },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 30,
      containers: [
        { name: 'main', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', command] },
      ],
      ...spec,
    },
  };
}

describe('graceful node shutdown through logind on a private bus', () => {
  let server: TestApiServer;
  let logind: FakeLogind;
  let kubelet: KubeletProcess;
  let cri: CriInspector;
  let dir = '';

  const apiPod = (name: string) => server.store.tryGet('pods', name, ns) as unknown as Pod | undefined;
  const node = () => server.store.tryGet('nodes', NODE_NAME) as unknown as Node | undefined;
  const ready = () => node()?.status?.conditions?.find((c) => c.type === 'Ready');
  const withLog = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      throw new Error(
        `${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-6000)}`,
      );
    });
  /**
   * When the pod's container exited (from the runtime), in ms since the epoch. Waited for a moment:
   * a pod killed with its group's whole budget, as upstream kills it, dies just after the group's
   * timer ends and the lock may go; the assertions below bound by how much.
   */
  const finishedAtMs = async (name: string): Promise<number> => {
    const [c] = await cri.podContainers(ns, name);
    assert.ok(c, `no container for ${name}`);
    const status = await waitFor(
      `${name} to have stopped`,
      async () => {
        const s = (await cri.conn.runtime.containerStatus(c.id)).status;
        return s?.state === 'CONTAINER_EXITED' ? s : undefined;
      },
      3_000,
      50,
    );
    return status.finishedAt / 1e6;
  };

  before(async () => {
    logind = await FakeLogind.start();
    server = await startTestApiServer({ nodeName: NODE_NAME });
    server.store.create('namespaces', { metadata: { name: ns } });
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-nodeshutdown-'));
    const kubeconfig = path.join(dir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({
      nodeName: NODE_NAME,
      extraArgs: [`--kubeconfig=${kubeconfig}`],
      extraConfig: [
        // A cancelled shutdown shows at the next status round (upstream does not sync at once then).
        'nodeStatusUpdateFrequency: 2s',
        'shutdownGracePeriodByPodPriority:',
        `- {priority: 0, shutdownGracePeriodSeconds: ${LOW_S}}`,
        `- {priority: 100000, shutdownGracePeriodSeconds: ${MID_S}}`,
        `- {priority: 2000000000, shutdownGracePeriodSeconds: ${CRITICAL_S}}`,
      ],
      env: { DBUS_SYSTEM_BUS_ADDRESS: logind.address },
    });
    await kubelet.start();
  });

  after(async () => {
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
    await server?.stop();
    await logind?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('pods stop by priority group within their budgets; the lock is held until then', async () => {
    const lock = await withLog(waitFor('the inhibitor lock', () => logind.inhibitCalls[0], 15_000));
    assert.deepEqual(lock.args, [
      'shutdown',
      'kubelet',
      'Kubelet needs time to handle node shutdown',
      'delay',
    ]);
    assert.equal(logind.heldLocks(), 1);

    const pods = [
      podObject('low', STUBBORN),
      podObject('low-polite', POLITE),
      podObject('mid', STUBBORN, { priority: 100000, terminationGracePeriodSeconds: 1 }),
      podObject('critical', STUBBORN, { priorityClassName: 'system-node-critical' }),
    ];
    for (const p of pods) server.store.create('pods', p as unknown as Record<string, unknown>);
    for (const p of pods) {
      const name = p.metadata.name ?? '';
      await withLog(waitFor(`${name} to run`, () => apiPod(name)?.status?.phase === 'Running', 30_000));
    }
    await withLog(waitFor('the node to be Ready', () => ready()?.status === 'True', 15_000));

    // Any local user can send what logind sends (dbus-send --system --type=signal ...): ignored.
    await logind.spoofPrepareForShutdown(true);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(ready()?.status, 'True', 'a spoofed PrepareForShutdown turned the node NotReady');
    assert.equal(lock.releasedAtMs, undefined);
    assert.match(await kubelet.logs(), /Ignored a PrepareForShutdown signal that logind did not send/);

    const t0 = Date.now();
    logind.prepareForShutdown(true);

    await withLog(
      waitFor(
        'the node to turn NotReady',
        () => ready()?.status === 'False' && ready()?.message?.includes('node is shutting down'),
        5_000,
      ),
    );
    // A pod that comes now is refused.
    server.store.create('pods', podObject('late', POLITE) as unknown as Record<string, unknown>);

    const releasedAtMs = await withLog(
      waitFor('the lock to be released', () => lock.releasedAtMs, (LOW_S + MID_S + CRITICAL_S + 10) * 1000),
    );
    const finished = {
      lowPolite: (await finishedAtMs('low-polite')) - t0,
      low: (await finishedAtMs('low')) - t0,
      mid: (await finishedAtMs('mid')) - t0,
      critical: (await finishedAtMs('critical')) - t0,
    };
    const released = releasedAtMs - t0;
    // Stop times after the signal, in ms, for the reader of a failure.
    const times = JSON.stringify({ ...finished, released });
    console.log(`node shutdown: stop times after the signal (ms): ${times}`);
    assert.ok(finished.lowPolite < 2000, `the polite low pod stops on SIGTERM: ${times}`);
    // The stubborn low pod is killed when its group's seconds run out, not before.
    assert.ok(finished.low >= LOW_S * 1000 - 500 && finished.low < (LOW_S + 2) * 1000, times);
    // The middle group starts only then, and its pod's own shorter grace period (1 s) wins.
    assert.ok(finished.mid >= finished.low, times);
    assert.ok(finished.mid - finished.low < 2500, times);
    // The critical pod goes last, with its group's 2 s.
    assert.ok(finished.critical - finished.mid >= CRITICAL_S * 1000 - 500, times);
    assert.ok(finished.critical < (LOW_S + MID_S + CRITICAL_S + 3) * 1000, times);
    assert.ok(released >= finished.critical - 200, `the lock goes after the last pod: ${times}`);
    assert.equal(logind.heldLocks(), 0);

    // Upstream's status: Failed, unless the pod's containers all exited 0 on SIGTERM (a pod that
    // already succeeded keeps Succeeded); reason, message and DisruptionTarget either way.
    const phases = { low: 'Failed', 'low-polite': 'Succeeded', mid: 'Failed', critical: 'Failed' };
    for (const [name, phase] of Object.entries(phases)) {
      const p = await withLog(
        waitFor(
          `${name} to show the shutdown status`,
          () => {
            const s = apiPod(name)?.status;
            return s?.phase === phase && s.conditions?.some((c) => c.type === 'DisruptionTarget')
              ? s
              : undefined;
          },
          15_000,
        ),
      );
      assert.equal(p.reason, 'Terminated', name);
      assert.equal(p.message, MESSAGE, name);
      const dt = p.conditions?.find((c) => c.type === 'DisruptionTarget');
      assert.deepEqual(
        [dt?.status, dt?.reason, dt?.message],
        ['True', 'TerminationByKubelet', MESSAGE],
        name,
      );
    }
    const late = await withLog(
      waitFor(
        'the late pod to be refused',
        () => (apiPod('late')?.status?.phase === 'Failed' ? apiPod('late') : undefined),
        10_000,
      ),
    );
    assert.equal(late.status?.reason, 'NodeShutdown');
    assert.equal(late.status?.message, 'Pod was rejected: Pod was rejected as the node is shutting down.');
    assert.deepEqual(await cri.podContainers(ns, 'late'), []);

    const events = () =>
      (server.store.list('events', { namespace: 'default' }).items as unknown as CoreEvent[]).filter(
        (e) => e.reason === 'NodeShutdown' && e.involvedObject.kind === 'Node',
      );
    await withLog(
      waitFor(
        'the NodeShutdown event',
        () => events().some((e) => e.message === 'Shutdown manager detected shutdown event'),
        10_000,
      ),
    );
  });

  test('a cancelled shutdown takes the lock again and the node is Ready again', async () => {
    logind.prepareForShutdown(false);
    await withLog(waitFor('a second inhibitor lock', () => logind.inhibitCalls[1], 10_000));
    assert.equal(logind.heldLocks(), 1);
    await withLog(waitFor('the node to be Ready again', () => ready()?.status === 'True', 15_000));
  });

  test("SIGUSR1 starts the same shutdown (tskubelet's own way to try it by hand)", async () => {
    kubelet.signal('SIGUSR1');
    await withLog(
      waitFor('the node to be NotReady', () => ready()?.message?.includes('node is shutting down'), 10_000),
    );
    const log = await kubelet.logs();
    assert.match(log, /Received shutdown signal from USR1/);
    assert.doesNotMatch(log, /Ignored SIGUSR1|Debugger listening/);
  });
});

describe('the logind client on a private bus', () => {
  test('reads InhibitDelayMaxUSec, writes the drop-in, reloads logind through systemd, and holds a real lock', async () => {
    const logind = await FakeLogind.start();
    const confDir = await mkdtemp(path.join(os.tmpdir(), 'logind-conf-'));
    try {
      logind.inhibitDelayMaxUSec = 5_000_000n;
      const con = await connectLogind({ busAddress: logind.address, logindConfigDirectory: confDir });
      assert.equal(await con.currentInhibitDelayMs(), 5000);
      await con.overrideInhibitDelay(45_000);
      assert.equal(
        await readFile(path.join(confDir, '99-kubelet.conf'), 'utf8'),
        '# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=45\n',
      );
      await con.reloadLogindConf();
      assert.deepEqual(logind.killUnitCalls, [['systemd-logind.service', 'all', 1]]);
      const lock = await con.inhibitShutdown();
      await waitFor('the stand-in to hand out its lock', () => logind.inhibitCalls[0], 5_000);
      await new Promise((r) => setTimeout(r, 700)); // the stand-in drops its own copy after 500 ms
      assert.equal(logind.heldLocks(), 1, 'our descriptor keeps the lock');
      con.releaseInhibitLock(lock);
      await waitFor('the lock to be released', () => logind.inhibitCalls[0]?.releasedAtMs, 5_000);
      con.close();
    } finally {
      await logind.stop();
      await rm(confDir, { recursive: true, force: true });
    }
  });
});

describe('PrepareForShutdown from anyone but logind', () => {
  test("a spoofed signal from another connection is ignored, logind's own is honoured, also after logind restarts", async () => {
    const logind = await FakeLogind.start();
    const con = await connectLogind({ busAddress: logind.address });
    try {
      const events: boolean[] = [];
      await con.monitorShutdown(
        (active) => events.push(active),
        () => undefined,
      );

      await logind.spoofPrepareForShutdown(true);
      // logind's own, sent after the spoofs have been delivered, is the first event seen.
      logind.prepareForShutdown(false);
      await waitFor("logind's signal", () => events.length > 0 || undefined, 5_000);
      assert.deepEqual(events, [false]);

      const before = logind.uniqueName;
      await logind.restart();
      assert.notEqual(logind.uniqueName, before);
      // The daemon announces the new owner before it passes on anything the new owner sends.
      await logind.spoofPrepareForShutdown(true);
      logind.prepareForShutdown(true);
      await waitFor("the restarted logind's signal", () => events.length > 1 || undefined, 5_000);
      assert.deepEqual(events, [false, true]);
    } finally {
      con.close();
      await logind.stop();
    }
  });
});

describe('graceful node shutdown without logind', () => {
  test('the kubelet says so once and runs its pods', async () => {
    const kubelet = new KubeletProcess({
      extraConfig: ['shutdownGracePeriod: 10s', 'shutdownGracePeriodCriticalPods: 4s'],
      env: { DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${os.tmpdir()}/no-such-bus-${process.pid}` },
    });
    const cri = await CriInspector.connect();
    const podNs = `it-nologind-${process.pid}`;
    try {
      await kubelet.start();
      await kubelet.writeManifest('web.json', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: podNs },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            { name: 'main', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
          ],
        },
      });
      await waitFor(
        'the static pod to run',
        async () => (await kubelet.pod('web'))?.status?.phase === 'Running',
        30_000,
      );
      const log = await kubelet.logs();
      const lines = log.split('\n').filter((l) => l.includes('Failed to start node shutdown manager'));
      assert.equal(lines.length, 1, log.slice(-4000));
      assert.match(lines[0]!, /no-such-bus/);
      assert.doesNotMatch(log, /parsed but not acted on[^\n]*shutdownGracePeriod/);
    } finally {
      await kubelet.dispose();
      await cri.removeNamespace(podNs);
      cri.close();
    }
  });
});
