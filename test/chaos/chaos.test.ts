/**
 * The chaos suite against the built kubelet and the private containerd. CI runs
 * the short form through `npm test`; `npm run chaos` runs the long one (scripts/chaos.sh). The form
 * comes from CHAOS_PODS, CHAOS_KUBELET_KILLS, CHAOS_CONTAINERD_KILLS and CHAOS_OUTAGE_S.
 *
 * Standalone mode: N static pods, then the kubelet killed K times, containerd M times, and a restart
 * among hostile manifests. Cluster mode: N pods from the test API server, which then goes away for
 * the outage and comes back on the same port with the same state. After each fault the node must
 * show every pod running with the same container, no restart and every emptyDir file as it was.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { sleep } from '../helpers/wait.js';
import {
  ChaosObserver,
  chaosFormFromEnv,
  chaosPod,
  crashContainerd,
  formatTally,
  probeHealthz,
  HOSTILE_POD_NAMES,
  hostileManifests,
  losses,
  seedsFor,
  startContainerd,
  type NodeSnapshot,
  type Tally,
} from './chaos.js';

const form = chaosFormFromEnv();
/** Time for the first start of every pod: containerd needs about a second a pod on a busy 2-core machine. */
const START_TIMEOUT_MS = 60_000 + form.pods * 3_000;
/** After a fault: the kubelet's start, a relist, and the readiness probes' first round (10 s period). */
const SETTLE_TIMEOUT_MS = 120_000;
/** How long the node must look whole before a stage counts as settled. */
const HOLD_MS = 3_000;
/** After the hostile restart: long enough for several housekeeping rounds, which is when a kubelet that misjudged its sources would stop pods. */
const HOSTILE_HOLD_MS = 12_000;
const HOSTILE_SETTLE_TIMEOUT_MS = 60_000;
const suiteStartedMs = Date.now();

function report(t: Tally): string[] {
  console.log(formatTally(t));
  return losses(t).map((l) => `${t.stage}: ${l}`);
}

describe(`chaos, standalone: ${form.pods} static pods`, () => {
  const ns = `chaos-${process.pid}`;
  const seeds = seedsFor(form.pods);
  let cri: CriInspector;
  let kubelet: KubeletProcess;
  let observer: ChaosObserver;
  let baseline: NodeSnapshot;

  before(async () => {
    cri = await CriInspector.connect();
    kubelet = new KubeletProcess({ nodeName: `chaos-node-${process.pid}` });
    await kubelet.start();
    for (const [i, seed] of seeds.entries())
      await kubelet.writeManifest(`chaos-${i}.json`, chaosPod(ns, i, seed));
    observer = new ChaosObserver(
      cri,
      ns,
      async () => (await kubelet.pods()).filter((p) => p.metadata.namespace === ns),
      kubelet.rootDir,
      seeds,
    );
    const { snapshot, settled, ms } = await observer.settle(START_TIMEOUT_MS, HOLD_MS);
    baseline = snapshot;
    const t = observer.tally('start', snapshot, snapshot, settled, ms);
    console.log(formatTally(t));
    if (!settled)
      throw new Error(
        `the pods did not all start: ${losses(t).join('; ')}\n${(await kubelet.logs()).slice(-6000)}`,
      );
    assert.deepEqual(observer.seedProblems(snapshot), []);
  });

  after(async () => {
    await startContainerd().catch((err: unknown) =>
      console.error(`chaos: containerd did not come back: ${String(err)}`),
    );
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
  });

  test(`the kubelet killed with SIGKILL ${form.kubeletKills} times: every pod, container and emptyDir file kept`, async () => {
    const lost: string[] = [];
    for (let i = 1; i <= form.kubeletKills; i++) {
      await kubelet.stop('SIGKILL');
      await kubelet.start();
      const { snapshot, settled, ms } = await observer.settle(SETTLE_TIMEOUT_MS, HOLD_MS);
      lost.push(
        ...report(observer.tally(`kubelet kill ${i}/${form.kubeletKills}`, baseline, snapshot, settled, ms)),
      );
    }
    assert.deepEqual(lost, [], (await kubelet.logs()).slice(-6000));
  });

  test(`containerd killed with SIGKILL ${form.containerdKills} times: every pod, container and emptyDir file kept`, async () => {
    const lost: string[] = [];
    for (let i = 1; i <= form.containerdKills; i++) {
      await crashContainerd();
      // Long enough for the kubelet to notice: a relist or two fails meanwhile.
      await sleep(2_000);
      await startContainerd();
      const { snapshot, settled, ms } = await observer.settle(SETTLE_TIMEOUT_MS, HOLD_MS);
      lost.push(
        ...report(
          observer.tally(`containerd kill ${i}/${form.containerdKills}`, baseline, snapshot, settled, ms),
        ),
      );
    }
    assert.equal(kubelet.isRunning(), true, 'the kubelet outlives its runtime');
    assert.deepEqual(lost, [], (await kubelet.logs()).slice(-6000));
  });

  test('a restart among hostile manifests: they are refused alone, nothing else is touched, /healthz answers', async () => {
    const hostile = hostileManifests(ns);
    const before = new Set(await readdir(kubelet.dir));
    const problems: string[] = [];
    try {
      await kubelet.stop('SIGKILL');
      for (const [file, text] of Object.entries(hostile)) await kubelet.writeManifest(file, text);
      try {
        await kubelet.start();
      } catch (err) {
        problems.push(`the kubelet did not come up: ${(err as Error).message.slice(0, 300)}`);
      }
      if (problems.length === 0) {
        let slowestHealthzMs = 0;
        let healthzFailure = '';
        let healthy = false;
        let polling = true;
        const poller = (async () => {
          // From its first 200 with the PLEG's check in it on: before that the kubelet is still
          // starting, and until the kubelet is built /healthz checks only that the runtime answers.
          while (polling && !healthy) {
            const first = await probeHealthz(kubelet.healthzPort);
            healthy = !first.failure && first.body.includes('[+]pleg ok');
            healthzFailure = first.failure;
            if (!healthy) await sleep(250);
          }
          if (healthy) healthzFailure = '';
          while (polling) {
            const answer = await probeHealthz(kubelet.healthzPort);
            slowestHealthzMs = Math.max(slowestHealthzMs, answer.ms);
            healthzFailure ||= answer.failure;
            await sleep(1_000);
          }
        })();
        // Shorter than other stages: pods stopped here do not come back, so waiting longer tells nothing.
        const { snapshot, settled, ms } = await observer.settle(HOSTILE_SETTLE_TIMEOUT_MS, HOSTILE_HOLD_MS);
        polling = false;
        await poller;
        problems.push(
          ...report(observer.tally('hostile manifests restart', baseline, snapshot, settled, ms)),
        );
        console.log(`chaos: slowest /healthz among hostile manifests: ${slowestHealthzMs} ms`);
        if (!healthy) problems.push(`/healthz never answered 200: ${healthzFailure}`);
        if (slowestHealthzMs > 1_000)
          problems.push(
            `/healthz took ${slowestHealthzMs} ms (want < 1000)${healthzFailure ? `: ${healthzFailure}` : ''}`,
          );
        if (!kubelet.isRunning()) problems.push('the kubelet exited');
      }
      // A UID such as ../../x must not reach the file system: nothing new beside --root-dir.
      const appeared = (await readdir(kubelet.dir)).filter((e) => !before.has(e));
      if (appeared.length)
        problems.push(`outside --root-dir: ${appeared.join(', ')} appeared in ${kubelet.dir}`);
      const ran = (await cri.sandboxes(ns)).filter((sb) =>
        HOSTILE_POD_NAMES.some((n) => sb.metadata.name.startsWith(`${n}-`)),
      );
      if (ran.length)
        problems.push(`hostile pods reached containerd: ${ran.map((sb) => sb.metadata.name).join(', ')}`);
    } finally {
      for (const file of Object.keys(hostile)) await kubelet.removeManifest(file);
    }
    assert.deepEqual(problems, [], (await kubelet.logs()).slice(-6000));
  });
});

describe(`chaos, cluster mode: ${form.pods} pods through a ${form.outageSeconds} s API server outage`, () => {
  const ns = `chaos-cl-${process.pid}`;
  const nodeName = `chaos-cl-node-${process.pid}`;
  const seeds = seedsFor(form.pods);
  let cri: CriInspector;
  let server: TestApiServer;
  let kubelet: KubeletProcess;
  let observer: ChaosObserver;
  let baseline: NodeSnapshot;
  let configDir = '';

  before(async () => {
    cri = await CriInspector.connect();
    server = await startTestApiServer({ nodeName });
    server.store.create('namespaces', { metadata: { name: ns } });
    configDir = await mkdtemp(path.join(os.tmpdir(), 'chaos-cluster-'));
    const kubeconfig = path.join(configDir, 'kubelet.kubeconfig');
    await server.writeKubeconfig(kubeconfig, server.nodeUser, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    kubelet = new KubeletProcess({ nodeName, extraArgs: [`--kubeconfig=${kubeconfig}`] });
    await kubelet.start();
    for (const [i, seed] of seeds.entries()) {
      const pod = chaosPod(ns, i, seed);
      pod.spec.nodeName = nodeName;
      server.store.create('pods', pod as never, ns);
    }
    observer = new ChaosObserver(
      cri,
      ns,
      () => Promise.resolve(server.store.list('pods', { namespace: ns }).items as unknown as Pod[]),
      kubelet.rootDir,
      seeds,
    );
    const { snapshot, settled, ms } = await observer.settle(START_TIMEOUT_MS, HOLD_MS);
    baseline = snapshot;
    const t = observer.tally('start (cluster)', snapshot, snapshot, settled, ms);
    console.log(formatTally(t));
    if (!settled)
      throw new Error(
        `the pods did not all start: ${losses(t).join('; ')}\n${(await kubelet.logs()).slice(-6000)}`,
      );
    assert.deepEqual(observer.seedProblems(snapshot), []);
  });

  after(async () => {
    await server?.resume();
    await kubelet?.dispose();
    await cri?.removeNamespace(ns);
    cri?.close();
    await server?.stop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
    console.log(`chaos: the suite took ${((Date.now() - suiteStartedMs) / 1000).toFixed(0)} s`);
  });

  test('the pods run on while the API server is away, and the API shows them whole once it is back', async () => {
    const problems: string[] = [];
    await server.pause();
    const outageEndsMs = Date.now() + form.outageSeconds * 1000;
    let samples = 0;
    while (Date.now() < outageEndsMs) {
      const during = await observer.observe();
      // The API cannot be told anything now: what counts is containerd's side and the data.
      const running = [...baseline.entries()].filter(
        ([name, b]) => during.get(name)?.containerId === b.containerId,
      );
      if (running.length !== form.pods)
        problems.push(`during the outage: ${form.pods - running.length} pod(s) lost their container`);
      if (!kubelet.isRunning()) problems.push('the kubelet exited during the outage');
      const answer = await probeHealthz(kubelet.healthzPort);
      if (answer.ms > 1_000)
        problems.push(`/healthz failed during the outage: ${answer.failure || `${answer.ms} ms`}`);
      samples++;
      if (problems.length) break;
      await sleep(Math.min(5_000, Math.max(0, outageEndsMs - Date.now())));
    }
    await server.resume();
    console.log(`chaos: ${form.outageSeconds} s outage, ${samples} sample(s) taken during it`);
    const { snapshot, settled, ms } = await observer.settle(SETTLE_TIMEOUT_MS, HOLD_MS);
    problems.push(
      ...report(observer.tally(`API server outage ${form.outageSeconds} s`, baseline, snapshot, settled, ms)),
    );
    assert.deepEqual(problems, [], (await kubelet.logs()).slice(-6000));
  });
});
