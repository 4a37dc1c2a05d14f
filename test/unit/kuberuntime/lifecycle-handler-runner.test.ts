import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { LifecycleHandlerRunner } from '../../../src/kuberuntime/lifecycle-handler-runner.js';
import { FakeClock } from '../../../src/lib/clock.js';

const pod: Pod = { metadata: { name: 'web', namespace: 'prod', uid: 'u-1' }, spec: { containers: [] } };

async function runningContainer(fake: FakeRuntime): Promise<string> {
  fake.addImage('busybox:latest');
  const sb = await fake.runPodSandbox(
    {
      metadata: { name: 'web', namespace: 'prod', uid: 'u-1', attempt: 0 },
      hostname: '',
      logDirectory: '',
      portMappings: [],
      labels: {},
      annotations: {},
    },
    '',
  );
  const id = await fake.createContainer(
    sb,
    {
      metadata: { name: 'app', attempt: 0 },
      image: { image: 'busybox:latest' },
      command: [],
      args: [],
      workingDir: '',
      envs: [],
      mounts: [],
      labels: {},
      annotations: {},
      logPath: '',
      stdin: false,
      stdinOnce: false,
      tty: false,
    },
    {
      metadata: { name: 'web', namespace: 'prod', uid: 'u-1', attempt: 0 },
      hostname: '',
      logDirectory: '',
      portMappings: [],
      labels: {},
      annotations: {},
    },
  );
  await fake.startContainer(id);
  return id;
}

test('exec: success, and a non-zero exit in upstream words', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  const id = await runningContainer(fake);
  const runner = new LifecycleHandlerRunner({ runtimeService: fake, clock });
  const c: Container = { name: 'app' };
  assert.deepEqual(await runner.run(id, pod, c, { exec: { command: ['true'] } }, ''), { ok: true });
  fake.execSync = async () => ({ stdout: Buffer.from('out'), stderr: Buffer.from('bad'), exitCode: 2 });
  assert.deepEqual(await runner.run(id, pod, c, { exec: { command: ['sh', '-c', 'exit 2'] } }, ''), {
    ok: false,
    message:
      'Exec lifecycle hook ([sh -c exit 2]) for Container "app" in Pod "web_prod(u-1)" failed - error: command \'sh -c exit 2\' exited with 2: bad, message: "outbad"',
  });
});

test('sleep waits on the clock; httpGet reaches the pod with its headers and a named port', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  const runner = new LifecycleHandlerRunner({ runtimeService: fake, clock, kubernetesVersion: 'v1.30.2' });
  let done = false;
  const sleeping = runner.run('x', pod, { name: 'app' }, { sleep: { seconds: 5 } }, '').then((r) => {
    done = true;
    return r;
  });
  await Promise.resolve();
  clock.advance(4_999);
  await Promise.resolve();
  assert.equal(done, false);
  clock.advance(1);
  assert.deepEqual(await sleeping, { ok: true });

  let seen: { url?: string; headers?: IncomingHttpHeaders } = {};
  const server = createServer((req, res) => {
    seen = { url: req.url, headers: req.headers };
    res.statusCode = 500; // Not judged: only a failed request fails the hook.
    res.end('no');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as AddressInfo).port;
    const c: Container = { name: 'app', ports: [{ name: 'http', containerPort: port }] };
    const r = await runner.run(
      'x',
      pod,
      c,
      { httpGet: { path: 'hook', port: 'http', httpHeaders: [{ name: 'X-Test', value: '1' }] } },
      '127.0.0.1',
    );
    assert.deepEqual(r, { ok: true });
    assert.equal(seen.url, '/hook');
    assert.equal(seen.headers?.['x-test'], '1');
    assert.equal(seen.headers?.['user-agent'], 'kube-lifecycle/1.30');
    assert.equal(seen.headers?.accept, '*/*');
    // The hook's own User-Agent replaces the kubelet's.
    await runner.run(
      'x',
      pod,
      c,
      { httpGet: { path: '/', port, httpHeaders: [{ name: 'user-agent', value: 'mine' }] } },
      '127.0.0.1',
    );
    assert.equal(seen.headers?.['user-agent'], 'mine');
  } finally {
    server.close();
  }
  const refused = await runner.run(
    'x',
    pod,
    { name: 'app' },
    { httpGet: { path: '/x', port: 1 } },
    '127.0.0.1',
  );
  assert.equal(refused.ok, false);
  assert.match(
    refused.ok ? '' : refused.message,
    /^HTTP lifecycle hook \(\/x\) for Container "app" in Pod "web_prod\(u-1\)" failed - error: /,
  );
});
