import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import type { ExecSyncResponse } from '../../../src/cri/types.js';
import type { EventRecorder } from '../../../src/kuberuntime/event-recorder.js';
import { realClock } from '../../../src/lib/clock.js';
import { Prober, probeUserAgent } from '../../../src/prober/prober.js';

interface RecordedEvent {
  fieldPath: string;
  type: string;
  reason: string;
  message: string;
}

function recorder(): EventRecorder & { events: RecordedEvent[] } {
  const events: RecordedEvent[] = [];
  return {
    events,
    event: (_pod, fieldPath, type, reason, message) => events.push({ fieldPath, type, reason, message }),
  };
}

function podWith(container: Container): Pod {
  return { metadata: { name: 'web', namespace: 'prod', uid: 'u1' }, spec: { containers: [container] } };
}

const target = { containerId: 'c1', podIP: '127.0.0.1' };

describe('Prober', () => {
  let server: Server;
  let port: number;

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/healthz') res.writeHead(200).end('ok');
      else if (req.url === '/elsewhere') res.writeHead(302, { location: 'http://localhost:1/' }).end('moved');
      else res.writeHead(500).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  after(() => new Promise<void>((r) => server.close(() => r())));

  function prober(exec?: (cmd: string[]) => ExecSyncResponse | Error) {
    const rec = recorder();
    let execCalls = 0;
    const p = new Prober({
      runtimeService: {
        async execSync(_id, cmd) {
          execCalls++;
          const r = exec?.(cmd) ?? new Error('no exec');
          if (r instanceof Error) throw r;
          return r;
        },
      },
      kubernetesVersion: 'v1.30.0',
      clock: realClock,
      recorder: rec,
    });
    return { p, rec, execCalls: () => execCalls };
  }

  test('a failure is an Unhealthy event in upstream words', async () => {
    const { p, rec } = prober();
    const c: Container = { name: 'app', livenessProbe: { httpGet: { port, path: '/broken' } } };
    const v = await p.probe('liveness', podWith(c), c, target);
    assert.deepEqual(v, { result: 'Failure' });
    assert.deepEqual(rec.events, [
      {
        fieldPath: 'spec.containers{app}',
        type: 'Warning',
        reason: 'Unhealthy',
        message: 'Liveness probe failed: HTTP probe failed with statuscode: 500',
      },
    ]);
  });

  test('a success records nothing', async () => {
    const { p, rec } = prober();
    const c: Container = {
      name: 'app',
      readinessProbe: { httpGet: { port: 'web', path: '/healthz' } },
      ports: [{ name: 'web', containerPort: port }],
    };
    assert.deepEqual(await p.probe('readiness', podWith(c), c, target), { result: 'Success' });
    assert.deepEqual(rec.events, []);
  });

  test('CVE-2020-8559: a warning is a success with a ProbeWarning event', async () => {
    const { p, rec } = prober();
    const c: Container = { name: 'app', readinessProbe: { httpGet: { port, path: '/elsewhere' } } };
    assert.deepEqual(await p.probe('readiness', podWith(c), c, target), { result: 'Success' });
    assert.deepEqual(
      rec.events.map((e) => [e.reason, e.message]),
      [['ProbeWarning', 'Readiness probe warning: Probe terminated redirects, Response body: moved']],
    );
  });

  test('exec failure output goes into the event', async () => {
    const { p, rec } = prober(() => ({
      stdout: Buffer.alloc(0),
      stderr: Buffer.from('not ready yet'),
      exitCode: 1,
    }));
    const c: Container = { name: 'app', startupProbe: { exec: { command: ['check'] } } };
    assert.deepEqual(await p.probe('startup', podWith(c), c, target), { result: 'Failure' });
    assert.equal(rec.events[0]?.message, 'Startup probe failed: not ready yet');
  });

  test('a probe that cannot run is tried three times, then reported as errored and thrown away', async () => {
    const { p, rec, execCalls } = prober(() => new Error('runtime is down'));
    const c: Container = { name: 'app', livenessProbe: { exec: { command: ['check'] } } };
    const v = await p.probe('liveness', podWith(c), c, target);
    assert.equal(v.result, 'Failure');
    assert.equal(v.error?.message, 'runtime is down');
    assert.equal(execCalls(), 3);
    assert.deepEqual(
      rec.events.map((e) => [e.reason, e.message]),
      [['Unhealthy', 'Liveness probe errored and resulted in unknown state: runtime is down']],
    );
  });

  test('a port name the container does not have is an error', async () => {
    const { p, rec } = prober();
    const c: Container = { name: 'app', livenessProbe: { tcpSocket: { port: 'admin' } } };
    const v = await p.probe('liveness', podWith(c), c, target);
    assert.equal(v.error?.message, 'port "admin" not found');
    assert.equal(
      rec.events[0]?.message,
      'Liveness probe errored and resulted in unknown state: port "admin" not found',
    );
  });

  test('tcpSocket goes to the pod IP unless the probe names a host', async () => {
    const { p } = prober();
    const c: Container = { name: 'app', livenessProbe: { tcpSocket: { port } } };
    assert.deepEqual(await p.probe('liveness', podWith(c), c, target), { result: 'Success' });
  });

  test('a container without that probe passes', async () => {
    const { p } = prober();
    const c: Container = { name: 'app' };
    assert.deepEqual(await p.probe('liveness', podWith(c), c, target), { result: 'Success' });
  });

  test('User-Agent is kube-probe/<major>.<minor>', () => {
    assert.equal(probeUserAgent('v1.30.0'), 'kube-probe/1.30');
    assert.equal(probeUserAgent('1.31.2+tskubelet.0.1.0'), 'kube-probe/1.31');
  });
});
