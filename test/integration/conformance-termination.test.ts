/**
 * How containers end. Termination messages as upstream's node conformance
 * "Container Runtime ... on terminated container" cases (test/e2e/common/node/runtime.go) check
 * them, with upstream's bounds (4096 bytes of the file; 80 lines and 2048 bytes of the log); SIGTERM
 * then SIGKILL once the grace period is over; the grace period from the pod, from the deletion and
 * from a liveness probe.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { Container, Pod } from '../../src/api/core-v1.js';
import {
  busybox,
  ClusterNode,
  containerStatus,
  makePod,
  StandaloneNode,
  type TestNode,
} from '../helpers/conformance.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-conf-term-${process.pid}`;

function oneShot(name: string, script: string, extra: Partial<Container> = {}): Pod {
  return makePod(ns, name, { restartPolicy: 'Never', containers: [busybox('term', script, extra)] });
}

describe('conformance: termination', () => {
  let node: TestNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  test('termination messages: from the file (any user, any path), from the logs on error, bounded as upstream', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const cases: { pod: Pod; phase: string; message: string | RegExp }[] = [
      {
        pod: oneShot('file-default', '/bin/echo -n DONE > /dev/termination-log'),
        phase: 'Succeeded',
        message: 'DONE',
      },
      {
        pod: oneShot('file-nonroot-custom', '/bin/echo -n DONE > /dev/termination-custom-log', {
          terminationMessagePath: '/dev/termination-custom-log',
          securityContext: { runAsUser: 1000 },
        }),
        phase: 'Succeeded',
        message: 'DONE',
      },
      {
        pod: oneShot('logs-on-error', '/bin/echo -n DONE; /bin/false', {
          terminationMessagePolicy: 'FallbackToLogsOnError',
        }),
        phase: 'Failed',
        message: 'DONE',
      },
      {
        pod: oneShot('logs-not-on-success', '/bin/echo -n DONE; /bin/true', {
          terminationMessagePolicy: 'FallbackToLogsOnError',
        }),
        phase: 'Succeeded',
        message: '',
      },
      {
        pod: oneShot(
          'file-before-logs',
          '/bin/echo -n OK > /dev/termination-log; /bin/echo DONE; /bin/true',
          {
            terminationMessagePolicy: 'FallbackToLogsOnError',
          },
        ),
        phase: 'Succeeded',
        message: 'OK',
      },
      {
        // 5000 bytes written: the kubelet keeps the last 4096.
        pod: oneShot(
          'file-bounded',
          'for i in $(seq 1 1000); do printf "%04d " $i; done > /dev/termination-log; exit 3',
        ),
        phase: 'Failed',
        message: /^ 0182 0183 .* 1000 $/,
      },
      {
        // 100 lines on error: the kubelet keeps the last 80 lines, at most 2048 bytes of them.
        pod: oneShot(
          'logs-bounded',
          'for i in $(seq 1 100); do echo "line $i ........................."; done; exit 4',
          {
            terminationMessagePolicy: 'FallbackToLogsOnError',
          },
        ),
        phase: 'Failed',
        message: /^(.|\n)*line 100 \.+\n$/,
      },
    ];
    for (const c of cases) await n.createPod(c.pod);
    for (const c of cases) {
      const name = c.pod.metadata.name ?? '';
      const done = await n.waitPod(name, c.phase, (p) => p.status?.phase === c.phase, 60_000);
      const terminated = containerStatus(done, 'term')?.state?.terminated;
      assert.ok(terminated, name);
      if (typeof c.message === 'string') assert.equal(terminated.message ?? '', c.message, name);
      else assert.match(terminated.message ?? '', c.message, name);
    }
    const fileBounded =
      containerStatus(await n.pod('file-bounded'), 'term')?.state?.terminated?.message ?? '';
    assert.equal(Buffer.byteLength(fileBounded), 4096);
    const logsBounded =
      containerStatus(await n.pod('logs-bounded'), 'term')?.state?.terminated?.message ?? '';
    const lines = logsBounded.split('\n').filter((l) => l !== '');
    assert.ok(Buffer.byteLength(logsBounded) <= 2048, `${Buffer.byteLength(logsBounded)} bytes`);
    assert.ok(lines.length <= 80, `${lines.length} lines`);
    assert.equal(lines[lines.length - 1], 'line 100 .........................');
  });

  test('stopping: SIGTERM first; SIGKILL when the pod grace period runs out', async () => {
    const n = (node = await StandaloneNode.start(ns));
    await n.createPod(
      makePod(ns, 'handles-term', {
        terminationGracePeriodSeconds: 30,
        containers: [
          busybox(
            'c',
            'trap "echo TERM received; exit 0" TERM; echo started; while true; do sleep 0.2; done',
          ),
        ],
      }),
    );
    await n.createPod(
      makePod(ns, 'ignores-term', {
        terminationGracePeriodSeconds: 4,
        containers: [
          busybox('c', 'trap "echo TERM ignored" TERM; echo started; while true; do sleep 0.2; done'),
        ],
      }),
    );
    const running = new Map<string, Pod>();
    for (const name of ['handles-term', 'ignores-term']) {
      const p = await n.waitPod(name, 'Running', (x) => !!containerStatus(x, 'c')?.state?.running);
      await n.waitLogs(p, 'c', /started/);
      running.set(name, p);
    }

    const stop = async (name: string): Promise<{ ms: number; exitCode: number; output: string }> => {
      const id = (containerStatus(running.get(name), 'c')?.containerID ?? '').replace('containerd://', '');
      const t0 = Date.now();
      await n.deletePod(name);
      const status = await waitFor(
        `${name} to stop`,
        async () => {
          const { status } = await n.cri.conn.runtime.containerStatus(id, false);
          return status.state === 'CONTAINER_EXITED' ? status : undefined;
        },
        60_000,
        100,
      );
      return {
        ms: Date.now() - t0,
        exitCode: status.exitCode,
        output: await n.logs(running.get(name)!, 'c'),
      };
    };
    const [handled, ignored] = await Promise.all([stop('handles-term'), stop('ignores-term')]);
    assert.match(handled.output, /TERM received/);
    assert.equal(handled.exitCode, 0);
    assert.ok(handled.ms < 10_000, `stopped on SIGTERM, without waiting out its 30 s (${handled.ms} ms)`);
    assert.match(ignored.output, /TERM ignored/);
    assert.equal(ignored.exitCode, 137, 'SIGKILL after the grace period');
    assert.ok(ignored.ms >= 4_000, `killed only after its 4 s grace period (${ignored.ms} ms)`);
    assert.ok(ignored.ms < 15_000, `and soon after it (${ignored.ms} ms)`);
  });

  test('grace periods: a deletion shortens the pod one; a liveness probe has its own', async () => {
    const n = (node = await ClusterNode.start(ns));
    const ignoresTerm = 'trap "" TERM; echo started; while true; do sleep 0.2; done';
    await n.createPod(
      makePod(ns, 'deleted', { terminationGracePeriodSeconds: 120, containers: [busybox('c', ignoresTerm)] }),
    );
    await n.createPod(
      makePod(ns, 'probed', {
        terminationGracePeriodSeconds: 120,
        containers: [
          busybox('c', ignoresTerm, {
            livenessProbe: {
              exec: { command: ['cat', '/no/such/file'] },
              initialDelaySeconds: 2,
              periodSeconds: 1,
              failureThreshold: 1,
              terminationGracePeriodSeconds: 2,
            },
          }),
        ],
      }),
    );
    await n.waitPod('deleted', 'Running', (p) => !!containerStatus(p, 'c')?.state?.running);
    const t0 = Date.now();
    await n.deletePod('deleted', 3);
    await waitFor(
      'the kubelet to finish deleting the pod',
      async () => (await n.pod('deleted')) === undefined,
      60_000,
    );
    const deletedMs = Date.now() - t0;
    assert.ok(deletedMs >= 3_000, `the deletion's 3 s grace period was waited for (${deletedMs} ms)`);
    assert.ok(deletedMs < 20_000, `not the pod's 120 s (${deletedMs} ms)`);

    const restarted = await n.waitPod(
      'probed',
      'restarted by its liveness probe',
      (p) => (containerStatus(p, 'c')?.restartCount ?? 0) >= 1,
      40_000,
    );
    const last = containerStatus(restarted, 'c')?.lastState?.terminated;
    assert.equal(last?.exitCode, 137);
    const ranMs = Date.parse(last?.finishedAt ?? '') - Date.parse(last?.startedAt ?? '');
    // 2 s of delay, a failed probe, then the probe's 2 s grace: far below the pod's 120 s.
    assert.ok(ranMs < 20_000, `the liveness kill used the probe's 2 s grace period (ran ${ranMs} ms)`);
    await n.waitEvent('probed', 'Killing', 'spec.containers{c}');
  });
});
