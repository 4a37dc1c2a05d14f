/**
 * Runs scenarios at once on one kubelet in cluster mode (the built kubelet, the test API server, the
 * private containerd): every pod is created together, then each is watched until its whole status
 * and events equal upstream's expectation, or until its own bound, when the last difference is kept.
 * Deletion scenarios delete their pod once it reaches the given state and time its departure.
 */
import * as grpc from '@grpc/grpc-js';
import { copyFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/core-v1.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import {
  healthServiceDefinition,
  servingStatusNumber,
  type HealthCheckRequest,
  type HealthCheckResponse,
} from '../../src/prober/grpc-health.js';
import { ClusterNode } from '../helpers/conformance.js';
import { TestRegistry } from '../helpers/conformance-registry.js';
import { freePort } from '../helpers/ports.js';
import { diffEvents, diffValues, eventViews, normaliseStatus } from './expect.js';
import type { Scenario, ScenarioContext } from './scenario.js';
import {
  admissionScenarios,
  configObjects,
  imageScenarios,
  volumeScenarios,
} from './scenarios/images-volumes-admission.js';
import { hookAndDeletionScenarios } from './scenarios/hooks-deletion.js';
import { initContainerScenarios } from './scenarios/init-containers.js';
import { lifecycleScenarios } from './scenarios/lifecycle.js';
import { probeScenarios } from './scenarios/probes.js';

/** Where the kubelet's log is kept when a scenario differs. */
export const KEPT_LOG = path.join(os.tmpdir(), 'tskubelet-differential-kubelet.log');

export interface ScenarioResult {
  scenario: Scenario;
  passed: boolean;
  /** Readable differences at the bound (empty when passed). */
  diff: string[];
  elapsedMs: number;
}

/** The environment scenarios refer to: the gRPC health server's port, the loopback registry, the namespace. */
export interface ScenarioEnv {
  namespace: string;
  grpcPort: number;
  registryHost: string;
}

export function allScenarios(env: ScenarioEnv): Scenario[] {
  return [
    ...probeScenarios(env.grpcPort),
    ...lifecycleScenarios(),
    ...initContainerScenarios(),
    ...hookAndDeletionScenarios(),
    ...imageScenarios(env.registryHost),
    ...volumeScenarios(env.namespace),
    ...admissionScenarios(),
  ];
}

/** A gRPC health server on every address: SERVING for "", NOT_SERVING for "down". */
async function startHealthServer(): Promise<{ port: number; stop: () => Promise<void> }> {
  const server = new grpc.Server();
  server.addService(healthServiceDefinition, {
    Check: (
      call: grpc.ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>,
      callback: grpc.sendUnaryData<HealthCheckResponse>,
    ) => {
      const service = call.request.service;
      if (service === '') return callback(null, { status: servingStatusNumber('SERVING') });
      if (service === 'down') return callback(null, { status: servingStatusNumber('NOT_SERVING') });
      callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('0.0.0.0:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { port, stop: () => new Promise((resolve) => server.tryShutdown(() => resolve())) };
}

interface Running {
  scenario: Scenario;
  createdAtMs: number;
  ctx?: ScenarioContext;
  deletedAtMs?: number;
  goneAtMs?: number;
  lastDiff: string[];
  done?: ScenarioResult;
}

function contextOf(pod: Pod): ScenarioContext {
  const { name = '', namespace = '', uid = '' } = pod.metadata;
  return { name, namespace, uid, podRef: `${name}_${namespace}(${uid})` };
}

/** One look at a scenario: its differences now (empty: it matches). */
function check(node: ClusterNode, r: Running, nowMs: number, allEvents: CoreEvent[]): string[] {
  const s = r.scenario;
  const pod = node.server.store.tryGet('pods', s.name, node.namespace) as unknown as Pod | undefined;
  if (pod) r.ctx = contextOf(pod);
  if (!r.ctx) return ['the pod is not in the API'];
  const events = eventViews(allEvents, { metadata: { name: s.name } } as Pod);
  const eventDiff = diffEvents(s.events(r.ctx), events);
  if (s.deletion) {
    if (r.deletedAtMs === undefined) {
      if (pod && s.deletion.when(pod)) {
        node.server.store.delete(
          'pods',
          s.name,
          node.namespace,
          s.deletion.gracePeriodSeconds === undefined
            ? {}
            : { gracePeriodSeconds: s.deletion.gracePeriodSeconds },
        );
        r.deletedAtMs = nowMs;
      }
      return [`not yet deleted (waiting for its state; phase ${pod?.status?.phase ?? '(none)'})`];
    }
    if (pod) return [`still in the API ${nowMs - r.deletedAtMs} ms after the delete`];
    r.goneAtMs ??= nowMs;
    const took = r.goneAtMs - r.deletedAtMs;
    const { min, max } = s.deletion.goneAfterMs;
    const timing =
      took < min || took > max
        ? [`gone ${took} ms after the delete, expected within [${min}, ${max}] ms`]
        : [];
    return [...timing, ...eventDiff];
  }
  if (!pod) return ['the pod left the API'];
  const statusDiff = s.status ? diffValues(s.status(r.ctx), normaliseStatus(pod.status), 'status') : [];
  return [...statusDiff, ...eventDiff];
}

export async function runScenarios(
  node: ClusterNode,
  scenarios: Scenario[],
  opts: { pollMs?: number } = {},
): Promise<ScenarioResult[]> {
  const pollMs = opts.pollMs ?? 500;
  const start = Date.now();
  const running: Running[] = [];
  for (const scenario of scenarios) {
    await node.createPod({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: scenario.name, namespace: node.namespace, ...scenario.metadata },
      spec: { terminationGracePeriodSeconds: 2, ...scenario.spec },
    });
    running.push({ scenario, createdAtMs: Date.now(), lastDiff: [] });
  }
  for (;;) {
    const now = Date.now();
    // One list per round: the API server runs in this process, and a list per scenario would starve it.
    const allEvents = node.events();
    for (const r of running) {
      if (r.done) continue;
      let diff: string[];
      try {
        diff = check(node, r, now, allEvents);
      } catch (err) {
        diff = [`the check threw: ${(err as Error).message}`];
      }
      r.lastDiff = diff;
      if (diff.length === 0 || now - r.createdAtMs > r.scenario.timeoutMs)
        r.done = { scenario: r.scenario, passed: diff.length === 0, diff, elapsedMs: now - r.createdAtMs };
    }
    if (running.every((r) => r.done)) break;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  void start;
  return running.map((r) => r.done!);
}

/** The report a person reads: one line per scenario, the differences under each that failed. */
export function formatReport(results: ScenarioResult[]): string {
  const lines: string[] = [];
  for (const r of results) {
    const s = r.scenario;
    const mark = r.passed
      ? s.knownDifferent
        ? 'PASS (marked known-different: remove the mark)'
        : 'PASS'
      : s.knownDifferent
        ? 'KNOWN-DIFFERENT'
        : 'FAIL';
    lines.push(`${mark.padEnd(15)} ${s.area.padEnd(20)} ${s.name} (${(r.elapsedMs / 1000).toFixed(1)} s)`);
    if (!r.passed) {
      for (const src of s.sources) lines.push(`    upstream: ${src}`);
      if (s.knownDifferent) lines.push(`    known different: ${s.knownDifferent}`);
      for (const d of r.diff) lines.push(`    - ${d}`);
    }
  }
  const passed = results.filter((r) => r.passed).length;
  const known = results.filter((r) => !r.passed && r.scenario.knownDifferent);
  lines.push(`${passed}/${results.length} scenarios match upstream; ${known.length} known different`);
  if (passed < results.length) lines.push(`the kubelet's log: ${KEPT_LOG}`);
  for (const k of known) lines.push(`  known different: ${k.scenario.name}: ${k.scenario.knownDifferent}`);
  return lines.join('\n');
}

/** Starts what the scenarios need, runs the selected ones, and tears everything down. */
export async function runDifferential(select: (s: Scenario) => boolean): Promise<ScenarioResult[]> {
  const namespace = `diff-${process.pid}`;
  const health = await startHealthServer();
  const registry = await TestRegistry.start(await freePort());
  let node: ClusterNode | undefined;
  try {
    // A cluster DNS address, as every real cluster has: without one each pod gets MissingClusterDNS.
    node = await ClusterNode.start(namespace, ['--cluster-dns=10.96.0.10', '--cluster-domain=cluster.local']);
    for (const { resource, obj } of configObjects(namespace)) node.create(resource, obj);
    const scenarios = allScenarios({ namespace, grpcPort: health.port, registryHost: registry.host }).filter(
      select,
    );
    const results = await runScenarios(node, scenarios);
    if (process.env.DIFFERENTIAL_DEBUG) {
      const counts = new Map<string, number>();
      for (const r of node.server.requests)
        if (r.resource === 'events')
          counts.set(`${r.verb} ${r.code}`, (counts.get(`${r.verb} ${r.code}`) ?? 0) + 1);
      console.log('event requests:', Object.fromEntries(counts), 'events stored:', node.events().length);
    }
    if (results.some((r) => !r.passed)) await copyFile(node.kubelet.logFile, KEPT_LOG).catch(() => undefined);
    return results;
  } finally {
    await node?.dispose();
    await registry.stop();
    await health.stop();
  }
}
