/**
 * Who on this machine can reach the kubelet, with the built kubelet and pods through containerd.
 * An unprivileged user (nobody, through setpriv) reads nothing from the node page (neither on the
 * loopback listener nor through the socket or the page's address file) and, standalone without a
 * config file, gets no command run by the kubelet API; root still reads the node with the CLI and
 * the page with its token; a loopback flood of live feeds and log follows meets the limits and
 * ends by itself. Needs root, to start the kubelet and to drop to nobody.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tskubelet = path.join(repoRoot, 'bin/tskubelet');
const ns = 'local-access';
const NOBODY = ['--reuid=65534', '--regid=65534', '--clear-groups'];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command, as nobody when asked; bounded. */
function run(cmd: string, args: string[], asNobody = false): Promise<Run> {
  const [file, argv] = asNobody ? ['setpriv', [...NOBODY, cmd, ...args]] : [cmd, args];
  return new Promise((resolve) => {
    execFile(file, argv, { timeout: 20_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function manifest(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'app',
          image: 'busybox',
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', 'while true; do echo tick; sleep 1; done'],
          env: [{ name: 'SECRET_VALUE', value: 'hunter2' }],
        },
      ],
    },
  });
}

describe('standalone without a config file: no command runs for a local user', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess;
  let apiPort: number;
  const podName = () => `web-${kubelet.nodeName}`;

  before(async () => {
    assert.equal(process.getuid?.(), 0, 'these tests need root (to start the kubelet and drop to nobody)');
    cri = await CriInspector.connect();
    await cri.removeNamespace(ns);
    apiPort = await freePort();
    kubelet = new KubeletProcess({ noConfigFile: true, extraArgs: [`--port=${apiPort}`] });
    await kubelet.start();
    await kubelet.writeManifest('web.json', manifest('web'));
    await waitFor(
      'the pod running',
      async () => (await cri.podContainers(ns, podName()))[0]?.state === 'CONTAINER_RUNNING',
      60_000,
    );
  });

  after(async () => {
    await kubelet?.stop();
    await cri?.removeNamespace(ns);
    cri?.close();
    await kubelet?.dispose();
  });

  test('POST /run as nobody does not give uid=0 (nor as root without credentials); the log says how to open it', async () => {
    const url = `https://127.0.0.1:${apiPort}/run/${ns}/${podName()}/app?cmd=id`;
    const curl = ['-sk', '-m', '10', '-X', 'POST', '-w', '\n%{http_code}', url];
    for (const asNobody of [true, false]) {
      const r = await run('curl', curl, asNobody);
      assert.doesNotMatch(r.stdout, /uid=/, `the command ran (${asNobody ? 'nobody' : 'root'}): ${r.stdout}`);
      // Not served at all (curl: connection refused), or refused with 401/403.
      assert.ok(r.code === 7 || /\n(401|403)$/.test(r.stdout), `code ${r.code}: ${r.stdout}${r.stderr}`);
    }
    assert.match(await kubelet.logs(), /The kubelet API \(127\.0\.0\.1:\d+\) is not served/);
  });
});

/** A GET over the socket or loopback that resolves with its status once the headers came; closes at once. */
function knock(
  target: { socketPath: string } | { port: number },
  p: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const where = 'port' in target ? { host: '127.0.0.1', port: target.port } : target;
    const req = http.get({ ...where, path: p, agent: false, timeout: 10_000 }, (res) => {
      if (res.statusCode === 200) {
        resolve({ status: 200, body: '' });
        return; // held open by the caller's destroy below
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${p} timed out`)));
    req.on('error', reject);
    held.push(req);
  });
}
const held: http.ClientRequest[] = [];

describe('the node page and the command line: root (and its group) only', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess;
  const podName = () => `web-${kubelet.nodeName}`;
  const MAX_FEEDS = 4;
  const MAX_FOLLOWS = 3;

  before(async () => {
    assert.equal(process.getuid?.(), 0, 'these tests need root (to start the kubelet and drop to nobody)');
    cri = await CriInspector.connect();
    await cri.removeNamespace(ns);
    kubelet = new KubeletProcess({
      extraArgs: [`--node-page-max-subscribers=${MAX_FEEDS}`, `--node-page-max-log-follows=${MAX_FOLLOWS}`],
    });
    await kubelet.start();
    // Only the node page's own folder keeps nobody out, not a private temporary folder above it.
    await chmod(kubelet.dir, 0o755);
    await chmod(kubelet.rootDir, 0o755);
    await kubelet.writeManifest('web.json', manifest('web'));
    await waitFor(
      'the pod running',
      async () => (await cri.podContainers(ns, podName()))[0]?.state === 'CONTAINER_RUNNING',
      60_000,
    );
  });

  after(async () => {
    for (const r of held) r.destroy();
    await kubelet?.stop();
    await cri?.removeNamespace(ns);
    cri?.close();
    await kubelet?.dispose();
  });

  const socket = () => path.join(kubelet.rootDir, 'node-page', 'kubelet.sock');
  const urlFile = () => path.join(kubelet.rootDir, 'node-page', 'url');

  test('nobody reads no pod, event or log: not on loopback, not through the socket, not from the address file', async () => {
    const base = `http://127.0.0.1:${kubelet.healthzPort}`;
    for (const p of [
      '/node/api/pods',
      '/node/api/snapshot',
      '/node/api/events',
      `/node/api/logs/${ns}/${podName()}/app`,
    ]) {
      const r = await run('curl', ['-s', '-m', '10', '-w', '\n%{http_code}', `${base}${p}`], true);
      assert.match(r.stdout, /\n401$/, `${p}: ${r.stdout}`);
      assert.doesNotMatch(r.stdout, /hunter2|"items"|tick/);
    }
    const viaSocket = await run(
      'curl',
      ['-s', '-m', '10', '--unix-socket', socket(), 'http://localhost/node/api/pods'],
      true,
    );
    assert.notEqual(viaSocket.code, 0);
    assert.doesNotMatch(viaSocket.stdout, /hunter2/);
    const cat = await run('cat', [urlFile()], true);
    assert.notEqual(cat.code, 0);
    assert.doesNotMatch(cat.stdout, /token=/);
    const cli = await run(
      process.execPath,
      [tskubelet, 'get', 'pods', '-A', `--root-dir=${kubelet.rootDir}`],
      true,
    );
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /permission denied/);
    assert.doesNotMatch(cli.stdout, /web-/);
    // /healthz stays open, as upstream's.
    assert.equal((await run('curl', ['-s', '-m', '10', `${base}/healthz`], true)).stdout, 'ok');
  });

  test('root: the CLI lists the pods and prints the page address; the token opens the data', async () => {
    const get = await run(process.execPath, [
      tskubelet,
      'get',
      'pods',
      '-A',
      `--root-dir=${kubelet.rootDir}`,
    ]);
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stdout, new RegExp(`^${ns}\\s+${podName()}\\s+1/1\\s+Running`, 'm'));
    const url = await run(process.execPath, [tskubelet, 'node-page-url', `--root-dir=${kubelet.rootDir}`]);
    assert.equal(url.code, 0, url.stderr);
    const token = /#token=([A-Za-z0-9_-]+)$/.exec(url.stdout.trim())?.[1];
    assert.ok(token, url.stdout);
    const pods = await run('curl', [
      '-s',
      '-m',
      '10',
      '-H',
      `Authorization: Bearer ${token}`,
      `http://127.0.0.1:${kubelet.healthzPort}/node/api/pods`,
    ]);
    assert.match(pods.stdout, /hunter2/);
  });

  test('a loopback flood of live feeds and log follows: the limits hold, the rest get 429, and it ends by itself', async () => {
    const feeds = Array.from({ length: MAX_FEEDS + 8 }, () =>
      knock({ socketPath: socket() }, '/node/api/stream'),
    );
    const follows = Array.from({ length: MAX_FOLLOWS + 8 }, () =>
      knock({ socketPath: socket() }, `/node/api/logs/${ns}/${podName()}/app?follow=true`),
    );
    const feedAnswers = await Promise.all(feeds);
    const followAnswers = await Promise.all(follows);
    const count = (a: { status: number }[], s: number) => a.filter((x) => x.status === s).length;
    assert.equal(count(feedAnswers, 200), MAX_FEEDS);
    assert.equal(count(feedAnswers, 429), 8);
    assert.match(feedAnswers.find((a) => a.status === 429)!.body, /--node-page-max-subscribers/);
    assert.equal(count(followAnswers, 200), MAX_FOLLOWS);
    assert.equal(count(followAnswers, 429), 8);
    assert.match(followAnswers.find((a) => a.status === 429)!.body, /--node-page-max-log-follows/);
    // The flood stops: every client goes, and the places come back.
    for (const r of held.splice(0)) r.destroy();
    let last = '';
    await waitFor(
      'a live feed and a follow accepted again',
      async () => {
        const [feed, follow] = [
          await knock({ socketPath: socket() }, '/node/api/stream'),
          await knock({ socketPath: socket() }, `/node/api/logs/${ns}/${podName()}/app?follow=true`),
        ];
        for (const r of held.splice(0)) r.destroy();
        last = `live feed ${feed.status}, follow ${follow.status}`;
        return feed.status === 200 && follow.status === 200;
      },
      20_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message} (last: ${last})`);
    });
    const health = await run('curl', ['-s', '-m', '10', `http://127.0.0.1:${kubelet.healthzPort}/healthz`]);
    assert.equal(health.stdout, 'ok');
  });
});
