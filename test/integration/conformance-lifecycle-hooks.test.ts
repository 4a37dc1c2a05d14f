/**
 * The postStart and preStop hooks with exec, httpGet and sleep, as upstream's node
 * conformance "Container Lifecycle Hook" cases (test/e2e/common/node/lifecycle_hook.go) check them:
 * a handler pod (busybox httpd, which logs every URL it serves) receives the hooks' requests; a
 * failing postStart kills its container (FailedPostStartHook) and the restart policy takes over;
 * preStop runs inside the grace period.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
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
import { CertificateAuthority } from '../apiserver/certs.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-conf-hooks-${process.pid}`;
const HANDLER_PORT = 8080;
// A container that exits at once on SIGTERM, so a stop takes only as long as its preStop hook.
const TERM_AWARE = 'trap "exit 0" TERM; while true; do sleep 0.2; done';

const handlerPod = (): Pod =>
  makePod(ns, 'handler', {
    containers: [
      busybox(
        'handler',
        `mkdir -p /www && for p in poststart-exec poststart-http prestop-exec prestop-http; do echo ok > /www/echo-$p; done; exec httpd -f -vv -p ${HANDLER_PORT} -h /www`,
        { ports: [{ containerPort: HANDLER_PORT, name: 'http' }] },
      ),
    ],
  });

function hookPod(name: string, lifecycle: Container['lifecycle'], grace = 30): Pod {
  return makePod(ns, name, {
    terminationGracePeriodSeconds: grace,
    containers: [busybox('hooked', TERM_AWARE, { lifecycle })],
  });
}

describe('conformance: lifecycle hooks', () => {
  let node: TestNode | undefined;

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  async function startHandler(n: StandaloneNode): Promise<{ pod: Pod; ip: string }> {
    await n.createPod(handlerPod());
    const pod = await n.waitPod('handler', 'Running', (p) => !!containerStatus(p, 'handler')?.state?.running);
    // httpd is serving once it answers; the hooks must not race its start.
    await n.waitLogs(pod, 'handler', /^/, 5_000).catch(() => undefined);
    return { pod, ip: pod.status?.podIP ?? '' };
  }

  test('postStart and preStop exec and httpGet hooks reach the handler; the container runs meanwhile', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const handler = await startHandler(n);
    const fetchPath = (p: string) => `wget -q -O /dev/null http://${handler.ip}:${HANDLER_PORT}/echo-${p}`;

    await n.createPod(
      hookPod('exec-hooks', {
        postStart: { exec: { command: ['sh', '-c', fetchPath('poststart-exec')] } },
        preStop: { exec: { command: ['sh', '-c', fetchPath('prestop-exec')] } },
      }),
    );
    // A named port resolves against the hooked container's own ports.
    const httpPod = hookPod('http-hooks', {
      postStart: { httpGet: { host: handler.ip, port: HANDLER_PORT, path: '/echo-poststart-http' } },
      preStop: { httpGet: { host: handler.ip, port: 'http-port', path: '/echo-prestop-http' } },
    });
    httpPod.spec.containers[0]!.ports = [{ name: 'http-port', containerPort: HANDLER_PORT }];
    await n.createPod(httpPod);

    for (const name of ['exec-hooks', 'http-hooks']) {
      const p = await n.waitPod(name, 'Running', (x) => !!containerStatus(x, 'hooked')?.state?.running);
      assert.equal(containerStatus(p, 'hooked')?.restartCount, 0, name);
    }
    await n.waitLogs(handler.pod, 'handler', /url:\/echo-poststart-exec/);
    await n.waitLogs(handler.pod, 'handler', /url:\/echo-poststart-http/);

    await n.deletePod('exec-hooks');
    await n.deletePod('http-hooks');
    await n.waitLogs(handler.pod, 'handler', /url:\/echo-prestop-exec/);
    await n.waitLogs(handler.pod, 'handler', /url:\/echo-prestop-http/);
    await waitFor(
      'both hooked pods to be gone',
      async () => (await n.pod('exec-hooks')) === undefined && (await n.pod('http-hooks')) === undefined,
      30_000,
    );
  });

  test('postStart and preStop httpGet hooks over HTTPS reach a server with an unverifiable certificate', async () => {
    // Upstream's e2e handler (agnhost netexec) serves a self-signed certificate; upstream's hooks do
    // not verify it. The kubelet runs the hook, so a server in this process on loopback stands in.
    const ca = await CertificateAuthority.create();
    const pair = await ca.issueServing('hook-target', ['127.0.0.1'], ['localhost']);
    const urls: string[] = [];
    const server = createHttpsServer({ cert: pair.certPem, key: pair.keyPem }, (req, res) => {
      urls.push(req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const n = (node = await StandaloneNode.start(ns));
      const hook = (msg: string) => ({
        httpGet: { scheme: 'HTTPS' as const, host: '127.0.0.1', port, path: `/echo?msg=${msg}` },
      });
      await n.createPod(hookPod('https-hooks', { postStart: hook('poststart'), preStop: hook('prestop') }));
      const p = await n.waitPod(
        'https-hooks',
        'Running',
        (x) => !!containerStatus(x, 'hooked')?.state?.running,
      );
      assert.equal(containerStatus(p, 'hooked')?.restartCount, 0);
      assert.deepEqual(urls, ['/echo?msg=poststart']);
      await n.deletePod('https-hooks');
      await waitFor('the preStop hook to reach the server', async () => urls.length === 2, 30_000);
      assert.deepEqual(urls, ['/echo?msg=poststart', '/echo?msg=prestop']);
    } finally {
      server.closeAllConnections();
      server.close();
      await ca.dispose();
    }
  });

  test('a sleep preStop delays the stop by its length, but never past the grace period', async () => {
    const n = (node = await StandaloneNode.start(ns));
    await n.createPod(hookPod('sleep-short', { preStop: { sleep: { seconds: 4 } } }, 30));
    // Validation refuses a sleep hook longer than the grace period (upstream's validateSleepAction), so
    // the hook that outlasts its grace is an exec one.
    await n.createPod(hookPod('sleep-long', { preStop: { exec: { command: ['sleep', '120'] } } }, 3));
    // A sleep postStart holds the start back but does not fail it.
    await n.createPod(hookPod('sleep-start', { postStart: { sleep: { seconds: 2 } } }, 2));
    for (const name of ['sleep-short', 'sleep-long', 'sleep-start'])
      await n.waitPod(name, 'Running', (x) => !!containerStatus(x, 'hooked')?.state?.running);

    const stopped = async (name: string): Promise<number> => {
      const started = Date.now();
      await n.deletePod(name);
      await waitFor(
        `${name}'s container to stop`,
        async () =>
          (await n.cri.podContainers(ns, `${name}-${n.kubelet.nodeName}`)).every(
            (c) => c.state !== 'CONTAINER_RUNNING',
          ),
        60_000,
        100,
      );
      return Date.now() - started;
    };
    const [shortMs, longMs] = await Promise.all([stopped('sleep-short'), stopped('sleep-long')]);
    assert.ok(shortMs >= 4_000, `the 4 s preStop sleep ran before the stop (stopped after ${shortMs} ms)`);
    assert.ok(shortMs < 15_000, `and nothing else held the stop (stopped after ${shortMs} ms)`);
    // 3 s of grace run out during the hook; the container then still gets the 2 s minimum to stop.
    assert.ok(
      longMs < 15_000,
      `the 120 s preStop hook was cut at the grace period (stopped after ${longMs} ms)`,
    );
    assert.equal(containerStatus(await n.pod('sleep-start'), 'hooked')?.restartCount, 0);
  });

  test('a failing postStart hook kills the container: FailedPostStartHook, then the restart policy', async () => {
    const n = (node = await ClusterNode.start(ns));
    // `sleep` as PID 1 ignores SIGTERM: the kill ends in SIGKILL after the pod's 2 s, exit code 137.
    const failing = (name: string, restartPolicy: Pod['spec']['restartPolicy']): Pod =>
      makePod(ns, name, {
        restartPolicy,
        containers: [
          busybox('main', 'exec sleep 3600', {
            lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo hook failed >&2; exit 7'] } } },
          }),
        ],
      });
    await n.createPod(failing('poststart-always', 'Always'));
    await n.createPod(failing('poststart-never', 'Never'));

    const event = await n.waitEvent('poststart-always', 'FailedPostStartHook', 'spec.containers{main}');
    assert.equal(event.type, 'Warning');
    // The message carries no hook output: it could hold secrets.
    assert.equal(event.message, 'PostStartHook failed');
    await n.waitEvent('poststart-always', 'Killing', 'spec.containers{main}');

    const restarted = await n.waitPod(
      'poststart-always',
      'restarted after the failed hook',
      (p) => (containerStatus(p, 'main')?.restartCount ?? 0) >= 1,
      60_000,
    );
    const last = containerStatus(restarted, 'main')?.lastState?.terminated;
    assert.equal(last?.exitCode, 137);
    assert.equal(last?.reason, 'Error');

    const failed = await n.waitPod('poststart-never', 'Failed', (p) => p.status?.phase === 'Failed', 60_000);
    const cs = containerStatus(failed, 'main');
    assert.equal(cs?.restartCount, 0);
    assert.equal(cs?.state?.terminated?.exitCode, 137);
  });
});
