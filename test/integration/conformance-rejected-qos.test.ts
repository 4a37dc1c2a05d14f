/**
 * A hidden difference of the side-by-side run on a v1.28.7 control plane: a pod refused
 * at admission (NodeAffinity, OutOfcpu, SysctlForbidden) ends with upstream's bare rejection status,
 * phase, reason and message and no qosClass (v1.28's rejectPod sets none and its API server lets the
 * status patch clear the one set at create; from v1.29 the API server backfills it, see
 * cluster-admission.test.ts).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { busybox, ClusterNode, makePod } from '../helpers/conformance.js';

const ns = `it-conf-rejqos-${process.pid}`;

describe('conformance: rejected pods carry no qosClass on a v1.28 API server', () => {
  let node: ClusterNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  test('NodeAffinity, OutOfcpu and SysctlForbidden end Failed with the bare rejection status', async () => {
    const n = (node = await ClusterNode.start(ns, [], {
      version: { major: '1', minor: '28', gitVersion: 'v1.28.7' },
    }));
    const pods: { pod: Pod; qosAtCreate: string; reason: string }[] = [
      {
        pod: makePod(ns, 'picky', {
          nodeSelector: { 'tskubelet.test/disk': 'ssd' },
          containers: [busybox('main', 'sleep 3600')],
        }),
        qosAtCreate: 'BestEffort',
        reason: 'NodeAffinity',
      },
      {
        pod: makePod(ns, 'too-big', {
          containers: [
            busybox('main', 'sleep 3600', {
              resources: { requests: { cpu: '1000' } },
            }),
          ],
        }),
        qosAtCreate: 'Burstable',
        reason: 'OutOfcpu',
      },
      {
        pod: makePod(ns, 'unsafe-sysctl', {
          securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '10000' }] },
          containers: [busybox('main', 'sleep 3600')],
        }),
        qosAtCreate: 'BestEffort',
        reason: 'SysctlForbidden',
      },
    ];
    for (const { pod, qosAtCreate } of pods) {
      await n.createPod(pod);
      const created = await n.pod(pod.metadata.name ?? '');
      assert.equal(created?.status?.qosClass, qosAtCreate, 'the API server sets it at create');
    }
    for (const { pod, reason } of pods) {
      const name = pod.metadata.name ?? '';
      const failed = await n.waitPod(name, 'Failed', (p) => p.status?.phase === 'Failed', 30_000);
      const status = failed.status ?? {};
      assert.equal(status.reason, reason, name);
      assert.match(status.message ?? '', /^Pod was rejected: /, name);
      assert.equal(status.qosClass, undefined, `${name}: no qosClass after the rejection`);
      assert.deepEqual(await n.cri.podContainers(ns, name), [], `${name} never reached the runtime`);
    }
  });
});
