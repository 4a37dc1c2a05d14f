import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ClusterSettings } from '../../../bench/cluster-density.js';
import { clusterReport, type RunFigures } from '../../../bench/cluster-report.js';
import type { RoundTraffic } from '../../../bench/cluster-traffic.js';

const traffic: RoundTraffic = {
  perPod: { 'create events': { requests: 3, requestBytes: 3000, responseBytes: 3000 } },
  steadyPerMin: {},
  startup: {},
  wirePerPod: { watchEvents: {} },
  benchWatchPerPod: { events: 0, bytes: 0 },
};

function settings(over: Partial<ClusterSettings>): ClusterSettings {
  return {
    sizes: [100],
    rounds: 2,
    steadyMs: 10_000,
    settleMs: 5000,
    createParallel: 10,
    automountToken: true,
    readyTimeoutMs: 120_000,
    sides: ['tskubelet', 'peer'],
    kubeletArgs: [],
    nodeArgs: [],
    peerArgs: [],
    peerNodeArgs: [],
    kubeletEnv: {},
    peerEnv: {},
    work: '/tmp/w',
    out: '/tmp/o',
    nodeName: 'bench-node',
    adminKubeconfig: '/tmp/a',
    nodeKubeconfig: '/tmp/n',
    ownControlPlane: true,
    endpoint: 'unix:///tmp/c.sock',
    timeline: false,
    windowSignal: false,
    warmBatch: false,
    ...over,
  };
}

const run = (side: RunFigures['side'], round: number, cpu: number): RunFigures => ({
  side,
  n: 100,
  round,
  figures: { start_cpu_s: cpu },
  traffic,
});

test('a tskubelet peer: its figures as peer_*, the ratios within a round, named apart in the traffic', () => {
  const s = settings({
    peerBinary: '/repo/bin/tskubelet',
    peerKind: 'tskubelet',
    peerVersion: 'Kubernetes v1.30.0+tskubelet.0.1.0',
    peerNodeArgs: ['--max-semi-space-size=4'],
  });
  // Round 2 ran the peer first: the order in runs must not matter.
  const runs = [run('tskubelet', 1, 6), run('peer', 1, 5), run('peer', 2, 8), run('tskubelet', 2, 8)];
  const { figures, traffic: md } = clusterReport(runs, s, {});
  const byMetric = (m: string) => figures.find((f) => f.metric === m);
  assert.match(
    byMetric('peer_rounds')!.note!,
    /tskubelet \/repo\/bin\/tskubelet .* with node --max-semi-space-size=4/,
  );
  assert.equal(byMetric('start_cpu_s')!.value, 7);
  assert.equal(byMetric('peer_start_cpu_s')!.value, 6.5);
  const ratio = byMetric('vs_peer_start_cpu_s')!;
  assert.equal(ratio.min, 1);
  assert.equal(ratio.max, 1.2);
  assert.match(md, /tskubelet \(peer\)/);
});

test('an upstream peer keeps its name in the traffic tables', () => {
  const s = settings({ peerBinary: '/opt/kubelet', peerKind: 'upstream', peerVersion: 'Kubernetes v1.28.7' });
  const { figures, traffic: md } = clusterReport([run('tskubelet', 1, 6), run('peer', 1, 4)], s, {});
  assert.match(figures.find((f) => f.metric === 'peer_rounds')!.note!, /the upstream kubelet \/opt\/kubelet/);
  assert.match(md, /upstream/);
  assert.doesNotMatch(md, /\(peer\)/);
});
