/**
 * The kubelet API against the private containerd: one pod made through CRI directly (a sandbox and
 * busybox containers with the kubelet's labels), served by startKubeletServer in this process, with
 * the test API server doing TokenReview and SubjectAccessReview and its CA signing client
 * certificates. Exec, attach and port-forward go to containerd's real streaming server over
 * WebSocket v4 (proxied), WebSocket v5 (translated to SPDY), SPDY, and port-forward tunnelled in
 * WebSocket; kubectl itself is driven through a small API-server front that proxies to the kubelet.
 *
 * The pod is made behind any kubelet's back: a kubelet running on the same containerd at the same
 * time stops it as a pod nobody wants. Run it alone (as scripts/test.sh does) or on a second stack
 * (scripts/runtime-stack.sh overrides, then CONTAINER_RUNTIME_ENDPOINT).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, renameSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import WebSocket, { createWebSocketStream } from 'ws';
import type { ContainerStatus, Pod } from '../../src/api/core-v1.js';
import { connectRuntime, type RuntimeConnection } from '../../src/cri/connect-runtime.js';
import type { ContainerConfig, PodSandboxConfig } from '../../src/cri/types.js';
import { pingCheck } from '../../src/server/healthz.js';
import type { ApiPoster } from '../../src/server/delegated-auth.js';
import {
  startKubeletServer,
  type KubeletServer,
  type KubeletServerOptions,
} from '../../src/server/kubelet-server.js';
import { realClock } from '../../src/lib/clock.js';
import { FsResourceAnalyzer } from '../../src/stats/fs-resource-analyzer.js';
import { StatsProvider } from '../../src/stats/stats-provider.js';
import {
  startTestApiServer,
  type AuthorizationAttributes,
  type TestApiServer,
} from '../apiserver/test-api-server.js';
import { waitFor, sleep } from '../helpers/wait.js';
import {
  exitCodeOf,
  spdyExec,
  spdyPortForward,
  wsExec,
  type ClientTls,
} from '../unit/server/stream-clients.js';

const run = promisify(execFile);
const endpoint = process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock';
const BUSYBOX = 'docker.io/library/busybox:latest';
const CALL_TIMEOUT_MS = 60_000;
const NODE = 'kapi-node';
const NS = 'kapi-test';

interface Harness {
  conn: RuntimeConnection;
  api: TestApiServer;
  server: KubeletServer;
  base: string;
  pod: Pod;
  sandboxId: string;
  sandboxConfig: PodSandboxConfig;
  logDir: string;
  dir: string;
  adminToken: string;
  tlsClient: ClientTls;
  /** How the server was started, for tests that start another with a setting changed. */
  start: (idleMs: number, limits?: KubeletServerOptions['limits']) => Promise<KubeletServer>;
}

const h = {} as Harness;

function container(
  name: string,
  attempt: number,
  script: string,
  extra: Partial<ContainerConfig> = {},
): ContainerConfig {
  return {
    metadata: { name, attempt },
    image: { image: BUSYBOX },
    command: ['sh', '-c', script],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: {
      'io.kubernetes.pod.name': h.pod.metadata.name!,
      'io.kubernetes.pod.namespace': NS,
      'io.kubernetes.pod.uid': h.pod.metadata.uid!,
      'io.kubernetes.container.name': name,
    },
    annotations: { 'io.kubernetes.container.restartCount': String(attempt) },
    logPath: `${name}/${attempt}.log`,
    stdin: false,
    stdinOnce: false,
    tty: false,
    linux: {},
    ...extra,
  };
}

async function startContainer(
  name: string,
  attempt: number,
  script: string,
  extra: Partial<ContainerConfig> = {},
): Promise<string> {
  const id = await h.conn.runtime.createContainer(
    h.sandboxId,
    container(name, attempt, script, extra),
    h.sandboxConfig,
    {
      timeoutMs: CALL_TIMEOUT_MS,
    },
  );
  await h.conn.runtime.startContainer(id, { timeoutMs: CALL_TIMEOUT_MS });
  if (!h.pod.spec.containers.some((c) => c.name === name))
    h.pod.spec.containers.push({ name, image: BUSYBOX });
  return id;
}

/** The pod status the kubelet would report, from what CRI says now: newest attempt current, the one before last. */
async function refreshStatus(): Promise<void> {
  const all = await h.conn.runtime.listContainers({
    labelSelector: { 'io.kubernetes.pod.uid': h.pod.metadata.uid! },
  });
  const statuses: ContainerStatus[] = [];
  for (const spec of h.pod.spec.containers) {
    const mine = all
      .filter((c) => c.metadata.name === spec.name)
      .sort((a, b) => b.metadata.attempt - a.metadata.attempt);
    const describe = async (id: string) => (await h.conn.runtime.containerStatus(id)).status;
    const current = mine[0] ? await describe(mine[0].id) : undefined;
    const previous = mine[1] ? await describe(mine[1].id) : undefined;
    const terminated = (s: NonNullable<typeof current>) => ({
      terminated: { exitCode: s.exitCode, reason: s.reason, containerID: `containerd://${s.id}` },
    });
    statuses.push({
      name: spec.name,
      ready: current?.state === 'CONTAINER_RUNNING',
      restartCount: mine.length > 0 ? mine.length - 1 : 0,
      image: BUSYBOX,
      imageID: '',
      ...(current ? { containerID: `containerd://${current.id}` } : {}),
      state: !current
        ? { waiting: { reason: 'ContainerCreating' } }
        : current.state === 'CONTAINER_RUNNING'
          ? { running: { startedAt: new Date(current.startedAt / 1e6).toISOString() } }
          : terminated(current),
      lastState: previous ? terminated(previous) : {},
    } as ContainerStatus);
  }
  h.pod.status = { phase: 'Running', containerStatuses: statuses };
}

function adminHeaders(): Record<string, string> {
  return { authorization: `Bearer ${h.adminToken}` };
}

/** A request sent as written: the path is not normalised (fetch would fold ../ and %2e%2e away). */
function rawRequest(
  path: string,
  opts: { method?: string; headers?: Record<string, string>; tls?: ClientTls } = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1',
      port: h.server.port,
      path,
      method: opts.method ?? 'GET',
      headers: opts.headers ?? adminHeaders(),
      agent: false,
      timeout: CALL_TIMEOUT_MS,
      ...(opts.tls ?? h.tlsClient),
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString(), headers: res.headers }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`request ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** A request to another server started by the harness. */
function rawRequestTo(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1',
      port,
      path,
      headers: adminHeaders(),
      agent: false,
      timeout: CALL_TIMEOUT_MS,
      ...h.tlsClient,
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`request ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

async function logs(query: string): Promise<{ status: number; body: string }> {
  await refreshStatus();
  return rawRequest(`/containerLogs/${NS}/${h.pod.metadata.name}/${query}`);
}

function apiPoster(api: TestApiServer, token: string): ApiPoster {
  return {
    post: (path, body, signal) =>
      new Promise((resolve, reject) => {
        const data = Buffer.from(JSON.stringify(body));
        const req = https.request(`${api.url}${path}`, {
          method: 'POST',
          ca: api.caPem,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': data.length,
          },
          signal,
        });
        req.on('response', (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => {
            const text = Buffer.concat(parts).toString();
            if ((res.statusCode ?? 500) >= 300)
              return reject(Object.assign(new Error(text), { status: res.statusCode }));
            resolve(JSON.parse(text) as unknown);
          });
        });
        req.on('error', reject);
        req.end(data);
      }),
  };
}

/** Who may do what on this node: admins anything, stats-reader only nodes/stats and nodes/metrics. */
function policy(a: AuthorizationAttributes): boolean {
  if (a.user.groups.includes('system:masters')) return true;
  if (a.user.username === 'stats-reader')
    return a.resource === 'nodes' && ['stats', 'metrics'].includes(a.subresource);
  return false;
}

before(async () => {
  h.dir = mkdtempSync(join(tmpdir(), 'kapi-'));
  h.logDir = join(h.dir, 'pod-logs');
  h.conn = await connectRuntime(endpoint, {
    signal: AbortSignal.timeout(30_000),
    retryInitialDelayMs: 500,
  }).catch((err: unknown) => {
    throw new Error(`no CRI runtime at ${endpoint}: is the stack up (scripts/runtime-stack.sh up)?`, {
      cause: err,
    });
  });
  h.api = await startTestApiServer({
    nodeName: NODE,
    users: [
      { name: 'stats-reader', groups: ['readers'], token: `stats-${randomUUID()}` },
      { name: 'nobody', groups: [], token: `nobody-${randomUUID()}` },
    ],
    authorize: policy,
  });
  h.adminToken = h.api.adminToken;
  const caFile = join(h.dir, 'client-ca.crt');
  writeFileSync(caFile, h.api.caPem!);

  const uid = randomUUID();
  const name = `kapi-${uid.slice(0, 8)}`;
  h.pod = { metadata: { name, namespace: NS, uid }, spec: { containers: [] } };
  h.sandboxConfig = {
    metadata: { name, uid, namespace: NS, attempt: 0 },
    hostname: name,
    logDirectory: join(h.logDir, `${NS}_${name}_${uid}`),
    portMappings: [],
    labels: {
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': NS,
      'io.kubernetes.pod.uid': uid,
    },
    annotations: {},
    linux: {
      cgroupParent: '',
      securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
      sysctls: {},
    },
  };
  h.sandboxId = await h.conn.runtime.runPodSandbox(h.sandboxConfig, '', { timeoutMs: 4 * CALL_TIMEOUT_MS });
  await startContainer('shell', 0, 'sleep 3600');
  await startContainer(
    'web',
    0,
    'mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www',
  );
  await startContainer(
    'writer',
    0,
    // The pauses keep stdout and stderr in order: the runtime copies the two pipes independently.
    'for i in 1 2 3 4 5 6 7 8 9 10; do echo line-$i; done; sleep 0.3; echo err-line >&2; sleep 0.3; ' +
      // One line longer than containerd's 16 KiB limit: it is split into P parts and an F end.
      'head -c 20000 /dev/zero | tr "\\0" x; echo; echo after-long; sleep 3600',
  );
  await startContainer('timed', 0, 'echo early; sleep 2.5; echo late; sleep 3600');
  const crashed = await startContainer('crasher', 0, 'echo first-attempt; exit 1');
  await waitFor(
    'the first crasher attempt to exit',
    async () => (await h.conn.runtime.containerStatus(crashed)).status.state === 'CONTAINER_EXITED',
    20_000,
    100,
  );
  await startContainer('crasher', 1, 'echo second-attempt; sleep 3600');

  // The node's log folder: files, a sub-folder, a symlink escaping it, and one into the pod log folder.
  const nodeLogs = join(h.dir, 'var-log');
  mkdirSync(join(nodeLogs, 'sub'), { recursive: true });
  writeFileSync(join(nodeLogs, 'a.log'), 'node log line\n');
  writeFileSync(join(nodeLogs, 'sub', 'b.log'), 'sub log line\n');
  symlinkSync('/etc', join(nodeLogs, 'escape'));
  symlinkSync(h.logDir, join(nodeLogs, 'pods'));

  h.start = (idleMs, limits) =>
    startKubeletServer(
      {
        getPods: () => [h.pod],
        getRunningPods: async () => [],
        healthChecks: () => [pingCheck],
        runtime: h.conn.runtime,
        configz: () => ({ nodeName: NODE }),
        statsProvider: new StatsProvider({
          runtime: h.conn.runtime,
          images: h.conn.images,
          clock: realClock,
          nodeName: NODE,
          rootDir: h.dir,
          podLogsDir: h.logDir,
          runtimeRequestTimeoutMs: CALL_TIMEOUT_MS,
          pods: () => [h.pod],
          fsResourceAnalyzer: new FsResourceAnalyzer({
            rootDir: h.dir,
            clock: realClock,
            periodMs: 60_000,
            pods: () => [h.pod],
          }),
        }),
      },
      {
        nodeName: NODE,
        certDirectory: join(h.dir, 'pki'),
        apiPoster: apiPoster(h.api, h.adminToken),
        nodeLogsDir: nodeLogs,
        nodeLogsSymlinkRoots: [h.logDir],
        ...(limits ? { limits } : {}),
        config: {
          address: '127.0.0.1',
          port: 0,
          tlsCertFile: '',
          tlsPrivateKeyFile: '',
          tlsMinVersion: 'VersionTLS12',
          tlsCipherSuites: [],
          authentication: {
            x509: { clientCAFile: caFile },
            webhook: { enabled: true, cacheTTLMs: 120_000 },
            anonymous: { enabled: false },
          },
          authorization: {
            mode: 'Webhook',
            webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
          },
          enableDebuggingHandlers: true,
          enableSystemLogHandler: true,
          streamingConnectionIdleTimeoutMs: idleMs,
          runtimeRequestTimeoutMs: CALL_TIMEOUT_MS,
          featureGates: {},
        },
      },
    );
  h.server = await h.start(4 * 3600_000);
  h.base = `https://127.0.0.1:${h.server.port}`;
  h.tlsClient = { rejectUnauthorized: false };
  await waitFor(
    'the web server in the pod',
    async () => {
      const r = await h.conn.runtime.execSync(
        (await findId('web'))!,
        ['wget', '-q', '-O', '-', 'http://127.0.0.1:8080/'],
        5,
      );
      return r.exitCode === 0;
    },
    20_000,
    200,
  );
});

async function findId(name: string): Promise<string | undefined> {
  const cs = await h.conn.runtime.listContainers({
    labelSelector: { 'io.kubernetes.pod.uid': h.pod.metadata.uid!, 'io.kubernetes.container.name': name },
  });
  return cs.sort((a, b) => b.metadata.attempt - a.metadata.attempt)[0]?.id;
}

after(async () => {
  await h.server?.close();
  if (h.sandboxId) {
    await h.conn.runtime.stopPodSandbox(h.sandboxId, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
    await h.conn.runtime.removePodSandbox(h.sandboxId, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
  }
  h.conn?.close();
  await h.api?.stop();
  if (h.dir) rmSync(h.dir, { recursive: true, force: true });
});

function execUrl(container: string, query: string): string {
  return `${h.base}/exec/${NS}/${h.pod.metadata.name}/${container}?${query}`;
}

describe('exec and attach', () => {
  test('WebSocket v4 is proxied to containerd: stdout, stderr and the exit code', async () => {
    const r = await wsExec(
      execUrl(
        'shell',
        'command=sh&command=-c&command=echo+out%3B+echo+err+%3E%262%3B+exit+3&output=1&error=1',
      ),
      ['v4.channel.k8s.io'],
      {
        headers: adminHeaders(),
        tls: h.tlsClient,
      },
    );
    assert.equal(r.protocol, 'v4.channel.k8s.io');
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.status?.reason, 'NonZeroExitCode');
    assert.equal(exitCodeOf(r), 3);
  });

  test('WebSocket v5 is translated to SPDY: stdin is half-closed and cat ends', async () => {
    const r = await wsExec(
      execUrl('shell', 'command=cat&input=1&output=1&error=1'),
      ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
      {
        headers: adminHeaders(),
        tls: h.tlsClient,
        stdin: Buffer.from('hello through v5\n'),
        closeStdin: true,
      },
    );
    assert.equal(r.protocol, 'v5.channel.k8s.io');
    assert.equal(r.stdout, 'hello through v5\n');
    assert.equal(r.status?.status, 'Success');
    const failed = await wsExec(
      execUrl('shell', 'command=sh&command=-c&command=echo+bad+%3E%262%3B+exit+7&output=1&error=1'),
      ['v5.channel.k8s.io'],
      {
        headers: adminHeaders(),
        tls: h.tlsClient,
      },
    );
    assert.equal(failed.stderr, 'bad\n');
    assert.equal(exitCodeOf(failed), 7);
  });

  test('SPDY exec with stdin, stdout and stderr reaches containerd through the kubelet', async () => {
    const r = await spdyExec(
      execUrl(
        'shell',
        'command=sh&command=-c&command=cat%3B+echo+done+%3E%262%3B+exit+2&input=1&output=1&error=1',
      ),
      {
        stdin: Buffer.from('spdy stdin\n'),
        headers: adminHeaders(),
        tls: h.tlsClient,
      },
    );
    assert.equal(r.protocol, 'v4.channel.k8s.io');
    assert.equal(r.stdout, 'spdy stdin\n');
    assert.equal(r.stderr, 'done\n');
    assert.equal(exitCodeOf(r), 2);
  });

  test('a TTY exec over v5 echoes through the terminal', async () => {
    const r = await wsExec(
      execUrl('shell', 'command=sh&command=-c&command=echo+tty-%24%28tty%29&output=1&tty=1'),
      ['v5.channel.k8s.io'],
      {
        headers: adminHeaders(),
        tls: h.tlsClient,
      },
    );
    assert.match(r.stdout, /tty-\/dev\/pts\/\d+/);
    assert.equal(r.status?.status, 'Success');
  });

  test('attach to a container that reads stdin', async () => {
    await startContainer('attachable', 0, 'read line; echo "got $line"; sleep 3600', {
      stdin: true,
      stdinOnce: false,
    });
    const r = await wsExec(
      `${h.base}/attach/${NS}/${h.pod.metadata.name}/attachable?input=1&output=1&error=1`,
      ['v5.channel.k8s.io'],
      {
        headers: adminHeaders(),
        tls: h.tlsClient,
        stdin: Buffer.from('ping\n'),
        // containerd ends an attach when the client's stdin ends: close it once the answer is in.
        closeStdinWhen: (out) => out.includes('got ping'),
      },
    ).catch((err: unknown) => err as Error);
    if (r instanceof Error) throw r;
    assert.match(r.stdout, /got ping/, JSON.stringify(r));
  });

  test('streams idle for streamingConnectionIdleTimeout are closed, proxied or translated', async () => {
    const quick = await h.start(1500);
    try {
      for (const protocol of ['v4.channel.k8s.io', 'v5.channel.k8s.io']) {
        const started = Date.now();
        await wsExec(
          `https://127.0.0.1:${quick.port}/exec/${NS}/${h.pod.metadata.name}/shell?command=sleep&command=30&output=1`,
          [protocol],
          { headers: adminHeaders(), tls: h.tlsClient },
        );
        const tookMs = Date.now() - started;
        assert.ok(tookMs >= 1400 && tookMs < 10_000, `${protocol} closed after ${tookMs} ms`);
      }
    } finally {
      await quick.close();
    }
  });

  test('session and connection limits hold under a flood that stops by itself; then exec works as before', async () => {
    const limited = await h.start(4 * 3600_000, { maxStreamingSessions: 2, maxConnectionsPerListener: 12 });
    const url = (cmd: string) =>
      `https://127.0.0.1:${limited.port}/exec/${NS}/${h.pod.metadata.name}/shell?${cmd}&output=1`;
    const exec = (cmd: string) =>
      wsExec(url(cmd), ['v4.channel.k8s.io'], { headers: adminHeaders(), tls: h.tlsClient }).catch(
        (err: Error & { statusCode?: number }) => err,
      );
    try {
      // Two sessions that end by themselves after 3 s hold both slots; a flood of 10 more meanwhile.
      const holders = [exec('command=sleep&command=3'), exec('command=sleep&command=3')];
      await sleep(500);
      const flood = await Promise.all(Array.from({ length: 10 }, () => exec('command=true')));
      for (const r of flood) {
        assert.ok(r instanceof Error, 'no session over the limit');
        assert.equal(r.statusCode, 429, r.message);
        assert.match(
          r.message,
          /too many concurrent exec, attach and port-forward sessions on this kubelet \(limit 2\)/,
        );
      }
      // The holders were served to their end.
      for (const r of await Promise.all(holders)) {
        if (r instanceof Error) throw r;
        assert.equal(exitCodeOf(r), 0);
      }
      // A flood of plain requests over the connection limit: each answered, 200 or 503.
      const answers = await Promise.all(
        Array.from({ length: 40 }, () =>
          rawRequestTo(limited.port, '/pods').then(
            (a) => a.status,
            (err: Error) => err.message,
          ),
        ),
      );
      assert.ok(
        answers.every((a) => a === 200 || a === 503),
        JSON.stringify(answers),
      );
      // Afterwards, as before.
      await waitFor(
        'the listener to serve again',
        async () => (await rawRequestTo(limited.port, '/pods')).status === 200,
        10_000,
      );
      const ok = await exec('command=echo&command=served');
      if (ok instanceof Error) throw ok;
      assert.equal(ok.stdout, 'served\n');
    } finally {
      await limited.close();
    }
  });

  test('errors: no stream asked 400, unknown pod 404, unknown container 500 as upstream, plain GET 500', async () => {
    let r = await rawRequest(`/exec/${NS}/${h.pod.metadata.name}/shell?command=true`);
    assert.equal(r.status, 400);
    assert.equal(r.body, 'you must specify at least 1 of stdin, stdout, stderr');
    r = await rawRequest(`/exec/${NS}/no-such-pod/shell?command=true&output=1`);
    assert.equal(r.status, 404);
    assert.equal(r.body, 'pod does not exist');
    r = await rawRequest(`/exec/${NS}/${h.pod.metadata.name}/nope?command=true&output=1`);
    assert.equal(r.status, 500);
    assert.equal(r.body, 'container not found ("nope")');
    r = await rawRequest(`/exec/${NS}/${h.pod.metadata.name}/shell?command=true&output=1`);
    assert.equal(r.status, 500);
    assert.equal(r.body, 'Upgrade request required\n');
  });

  test('/run returns the output of ExecSync, and a non-zero exit as 500', async () => {
    let r = await rawRequest(`/run/${NS}/${h.pod.metadata.name}/shell?cmd=echo+hello+run`, {
      method: 'POST',
      headers: adminHeaders(),
    });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'hello run\n');
    r = await rawRequest(`/run/${NS}/${h.pod.metadata.name}/shell?cmd=false`, {
      method: 'POST',
      headers: adminHeaders(),
    });
    assert.equal(r.status, 500);
    assert.match(r.body, /^command 'false' exited with 1/);
    r = await rawRequest(`/run/${NS}/${h.pod.metadata.name}/shell?cmd=true`);
    assert.equal(r.status, 405);
  });
});

describe('port-forward', () => {
  const pfPath = () => `/portForward/${NS}/${h.pod.metadata.name}`;
  const httpGet = Buffer.from('GET / HTTP/1.0\r\nHost: pod\r\n\r\n');

  test('SPDY port-forward reaches the pod port', async () => {
    const body = await spdyPortForward(`${h.base}${pfPath()}`, 8080, httpGet, {
      headers: adminHeaders(),
      tls: h.tlsClient,
    });
    assert.match(body, /200 OK/);
    assert.match(body, /hello-from-pod/);
  });

  // kubectl's own name for the tunnel, SPDY/3.1+portforward.k8s.io, is not a token the ws package
  // will send; the kubectl test below covers it, this one the legacy name and the byte relay.
  test('SPDY tunnelled in WebSocket (v2.portforward.k8s.io) reaches the pod port', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${h.server.port}${pfPath()}`, ['v2.portforward.k8s.io'], {
      headers: adminHeaders(),
      rejectUnauthorized: false,
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    assert.equal(ws.protocol, 'v2.portforward.k8s.io');
    const duplex = createWebSocketStream(ws);
    const body = await spdyPortForward('', 8080, httpGet, {
      socket: { socket: duplex as unknown as Socket, head: Buffer.alloc(0) },
    });
    assert.match(body, /hello-from-pod/);
    ws.terminate();
  });

  test('WebSocket v4 port-forward with ?port= is proxied to containerd', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${h.server.port}${pfPath()}?port=8080`, ['v4.channel.k8s.io'], {
      headers: adminHeaders(),
      rejectUnauthorized: false,
    });
    const data: Buffer[] = [];
    const done = new Promise<void>((resolve, reject) => {
      let first = true;
      ws.on('message', (m: Buffer) => {
        if (m[0] === 0) {
          // The first message on each channel is the port, little-endian.
          if (first) {
            first = false;
            assert.equal(m.readUInt16LE(1), 8080);
            ws.send(Buffer.concat([Buffer.from([0]), httpGet]));
            return;
          }
          data.push(m.subarray(1));
        }
      });
      ws.on('close', () => resolve());
      ws.on('error', reject);
      setTimeout(() => ws.close(), 5000).unref();
    });
    await done;
    assert.match(Buffer.concat(data).toString(), /hello-from-pod/);
  });

  test('a WebSocket port-forward without ports is a 400', async () => {
    const r = await rawRequest(pfPath(), {
      headers: {
        ...adminHeaders(),
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-protocol': 'v4.channel.k8s.io',
      },
    }).catch((err: unknown) => ({ status: -1, body: String(err), headers: {} }));
    assert.equal(r.status, 400);
    assert.equal(r.body, 'query parameter "port" is required');
  });
});

describe('container logs', () => {
  test('the whole log, with a line longer than the runtime splits joined back', async () => {
    await waitFor('after-long', async () => (await logs('writer')).body.includes('after-long'), 10_000, 200);
    const r = await logs('writer');
    assert.equal(r.status, 200);
    const lines = r.body.split('\n');
    assert.deepEqual(lines.slice(0, 11), [
      ...Array.from({ length: 10 }, (_, i) => `line-${i + 1}`),
      'err-line',
    ]);
    assert.equal(lines[11], 'x'.repeat(20000));
    assert.equal(lines[12], 'after-long');
  });

  test('tailLines, limitBytes, timestamps and the legacy tail', async () => {
    assert.equal((await logs('writer?tailLines=2')).body.split('\n').slice(-2)[0], 'after-long');
    assert.equal((await logs('writer?limitBytes=10')).body, 'line-1\nlin');
    const ts = (await logs('writer?timestamps=true&tailLines=1')).body;
    assert.match(ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z after-long\n$/);
    assert.equal((await logs('writer?tail=1')).body, 'after-long\n');
    assert.ok((await logs('writer?tail=all')).body.startsWith('line-1\n'));
  });

  test('sinceTime and sinceSeconds skip older lines', async () => {
    await waitFor('late', async () => (await logs('timed')).body.includes('late'), 10_000, 200);
    const stamped = (await logs('timed?timestamps=true')).body.trim().split('\n');
    const lateAt = stamped.find((l) => l.endsWith(' late'))!.split(' ')[0]!;
    const sinceTime = lateAt.slice(0, 19) + 'Z';
    assert.equal((await logs(`timed?sinceTime=${sinceTime}`)).body, 'late\n');
    await sleep(1200);
    assert.equal((await logs('timed?sinceSeconds=1')).body, '');
  });

  test('previous=true reads the last terminated attempt', async () => {
    assert.equal((await logs('crasher')).body, 'second-attempt\n');
    assert.equal((await logs('crasher?previous=true')).body, 'first-attempt\n');
    const r = await logs('shell?previous=true');
    assert.equal(r.status, 400);
    assert.equal(r.body, `previous terminated container "shell" in pod "${h.pod.metadata.name}" not found`);
  });

  test('follow streams lines as they are written and ends once the container exits', async () => {
    await startContainer('ticker', 0, 'sleep 1; for i in 1 2 3 4 5; do echo tick-$i; sleep 0.3; done');
    const started = Date.now();
    const r = await logs('ticker?follow=true');
    assert.equal(r.body, 'tick-1\ntick-2\ntick-3\ntick-4\ntick-5\n');
    assert.ok(Date.now() - started >= 1000, 'the request waited for lines written later');
  });

  test('follow goes on across a rotation (rename, then the runtime reopens the file)', async () => {
    const id = await startContainer(
      'rotator',
      0,
      'i=0; while [ $i -lt 30 ]; do echo r-$i; i=$((i+1)); sleep 0.1; done',
    );
    const reading = logs('rotator?follow=true');
    await sleep(1200);
    const file = join(h.sandboxConfig.logDirectory, 'rotator', '0.log');
    renameSync(file, `${file}.20260101-000000`);
    await h.conn.runtime.reopenContainerLog(id);
    const r = await reading;
    assert.deepEqual(
      r.body.trim().split('\n'),
      Array.from({ length: 30 }, (_, i) => `r-${i}`),
    );
  });

  test('a client that leaves a follow ends the read on the kubelet side', async () => {
    await refreshStatus();
    const gone = new Promise<void>((resolve, reject) => {
      const req = https.request({
        host: '127.0.0.1',
        port: h.server.port,
        path: `/containerLogs/${NS}/${h.pod.metadata.name}/shell?follow=true`,
        headers: adminHeaders(),
        agent: false,
        rejectUnauthorized: false,
      });
      req.on('response', (res) => {
        assert.equal(res.statusCode, 200);
        // Leave while the kubelet waits for lines that never come.
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 300);
      });
      req.on('error', (err) => (req.destroyed ? resolve() : reject(err)));
      req.end();
    });
    await gone;
    const inflight = async () => {
      const m =
        /kubelet_http_inflight_requests\{method="GET",path="containerLogs",server_type="readwrite",long_running="false"\} (\d+)/.exec(
          (await rawRequest('/metrics')).body,
        );
      return Number(m?.[1] ?? 0);
    };
    await waitFor('the follow to end on the kubelet side', async () => (await inflight()) === 0, 5000, 100);
  });

  test('errors keep upstream codes and words', async () => {
    let r = await logs('nope');
    assert.equal(r.status, 404);
    assert.equal(r.body, `container "nope" not found in pod "${h.pod.metadata.name}"`);
    r = await rawRequest(`/containerLogs/${NS}/no-such-pod/shell`);
    assert.equal(r.status, 404);
    assert.equal(r.body, 'pod "no-such-pod" does not exist');
    r = await logs('writer?sinceSeconds=5&sinceTime=2020-01-01T00:00:00Z');
    assert.equal(r.status, 422);
    assert.equal(r.body, '{"message": "Invalid request."}');
    r = await logs('writer?tailLines=abc');
    assert.equal(r.status, 400);
    assert.equal(r.body, '{"message": "Unable to decode query."}');
    r = await logs('writer?limitBytes=0');
    assert.equal(r.status, 422);
  });

  test('dot segments never reach a handler', async () => {
    for (const p of [
      `/containerLogs/${NS}/../etc/passwd`,
      `/containerLogs/${NS}/%2e%2e/%2e%2e/passwd`,
      `/containerLogs/%2E%2E/${h.pod.metadata.name}/shell`,
      `/containerLogs/${NS}/${h.pod.metadata.name}/..%2fshell`,
    ]) {
      const r = await rawRequest(p);
      assert.equal(r.status, 400, p);
    }
  });
});

describe('/logs/', () => {
  test('lists folders as Go does, serves files, redirects a folder without its slash', async () => {
    let r = await rawRequest('/logs/');
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'] ?? '', /text\/html/);
    assert.ok(r.body.includes('<a href="a.log">a.log</a>\n'));
    assert.ok(r.body.includes('<a href="sub/">sub/</a>\n'));
    r = await rawRequest('/logs/a.log');
    assert.equal(r.body, 'node log line\n');
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    r = await rawRequest('/logs/sub');
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, 'sub/');
    r = await rawRequest('/logs/a.log', { headers: { ...adminHeaders(), range: 'bytes=5-7' } });
    assert.equal(r.status, 206);
    assert.equal(r.body, 'log');
  });

  test('logs-traversal: traversal and symlink escapes are refused; a symlink into the pod log folder is followed', async () => {
    for (const p of [
      '/logs/../../etc/passwd',
      '/logs/%2e%2e/etc/passwd',
      '/logs/sub/%2E%2E/%2e%2e/etc/passwd',
      '/logs/sub/..%2F..%2Fetc/passwd',
    ]) {
      assert.equal((await rawRequest(p)).status, 400, p);
    }
    assert.equal((await rawRequest('/logs/escape/passwd')).status, 404);
    assert.equal((await rawRequest('/logs/escape/')).status, 404);
    const r = await rawRequest(`/logs/pods/${NS}_${h.pod.metadata.name}_${h.pod.metadata.uid}/crasher/0.log`);
    assert.equal(r.status, 200);
    assert.match(r.body, /stdout F first-attempt/);
  });
});

describe('authentication and authorization', () => {
  async function clientCert(user: string, groups: string[]): Promise<ClientTls> {
    const pair = await h.api.issueClientCertificate(user, groups);
    return { cert: pair.certPem, key: pair.keyPem, rejectUnauthorized: false };
  }

  test('no credentials and a bad token are 401', async () => {
    let r = await rawRequest('/pods', { headers: {} });
    assert.equal(r.status, 401);
    assert.match(r.body, /^Unauthorized/);
    r = await rawRequest('/pods', { headers: { authorization: 'Bearer not-a-token' } });
    assert.equal(r.status, 401);
    assert.match(r.body, /invalid bearer token/);
  });

  test('a client certificate from the client CA authenticates; a denied user gets upstream 403s', async () => {
    const admin = await clientCert('cert-admin', ['system:masters']);
    assert.equal((await rawRequest('/pods', { headers: {}, tls: admin })).status, 200);
    const denied = await clientCert('cert-denied', ['somebody']);
    let r = await rawRequest('/pods', { headers: {}, tls: denied });
    assert.equal(r.status, 403);
    assert.equal(
      r.body,
      'Forbidden (user=cert-denied, verb=get, resource=nodes, subresource=pods)\n' +
        'Forbidden (user=cert-denied, verb=get, resource=nodes, subresource=proxy)\n',
    );
    r = await rawRequest(`/run/${NS}/${h.pod.metadata.name}/shell?cmd=true`, {
      method: 'POST',
      headers: {},
      tls: denied,
    });
    assert.equal(r.body, 'Forbidden (user=cert-denied, verb=create, resource=nodes, subresource=proxy)\n');
  });

  test('a certificate from another CA is 401, even with a good token beside it failing nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kapi-ca-'));
    try {
      await run(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-keyout',
          join(dir, 'k.pem'),
          '-out',
          join(dir, 'c.pem'),
          '-days',
          '1',
          '-subj',
          '/CN=intruder/O=system:masters',
        ],
        { timeout: 20_000 },
      );
      const { readFileSync } = await import('node:fs');
      const foreign = {
        cert: readFileSync(join(dir, 'c.pem')),
        key: readFileSync(join(dir, 'k.pem')),
        rejectUnauthorized: false,
      };
      assert.equal((await rawRequest('/pods', { headers: {}, tls: foreign })).status, 401);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('stats-reader may read /metrics and /stats but not exec, run or containerLogs', async () => {
    const headers = { authorization: `Bearer ${h.api.tokenFor('stats-reader')}` };
    assert.equal((await rawRequest('/metrics', { headers })).status, 200);
    assert.equal((await rawRequest('/metrics/probes', { headers })).status, 200);
    assert.equal((await rawRequest('/stats/summary', { headers })).status, 200);
    for (const [method, p] of [
      ['GET', `/exec/${NS}/${h.pod.metadata.name}/shell?command=id&output=1`],
      ['POST', `/run/${NS}/${h.pod.metadata.name}/shell?cmd=id`],
      ['GET', `/containerLogs/${NS}/${h.pod.metadata.name}/writer`],
      ['GET', '/configz'],
    ] as const) {
      const r = await rawRequest(p, { method, headers });
      assert.equal(r.status, 403, p);
      assert.match(
        r.body,
        /^Forbidden \(user=stats-reader, verb=(get|create), resource=nodes, subresource=(proxy|configz)\)\n/,
      );
    }
    const logsDenied = await rawRequest('/logs/', { headers });
    assert.equal(
      logsDenied.body,
      'Forbidden (user=stats-reader, verb=get, resource=nodes, subresource=log)\n',
    );
  });

  test('a token in the WebSocket subprotocol authenticates (browsers cannot set headers)', async () => {
    const token = Buffer.from(h.adminToken).toString('base64url');
    const r = await wsExec(
      execUrl('shell', 'command=echo&command=hi&output=1'),
      ['v4.channel.k8s.io', `base64url.bearer.authorization.k8s.io.${token}`],
      {
        tls: h.tlsClient,
      },
    );
    assert.equal(r.stdout, 'hi\n');
  });

  test('TokenReview and SubjectAccessReview answers are cached', async () => {
    const headers = { authorization: `Bearer ${h.api.tokenFor('nobody')}` };
    const count = (resource: string) => h.api.requests.filter((x) => x.resource === resource).length;
    const reviews = count('tokenreviews');
    const accessReviews = count('subjectaccessreviews');
    for (let i = 0; i < 5; i++) assert.equal((await rawRequest('/healthz', { headers })).status, 403);
    assert.equal(count('tokenreviews') - reviews, 1);
    // Two questions (healthz, then proxy), each asked once and then kept for the unauthorized TTL.
    assert.equal(count('subjectaccessreviews') - accessReviews, 2);
  });
});

describe('the rest of the API', () => {
  test('/healthz, /pods, /configz, /metrics', async () => {
    assert.equal((await rawRequest('/healthz')).body, 'ok');
    assert.equal((await rawRequest('/healthz/ping')).status, 200);
    const pods = JSON.parse((await rawRequest('/pods')).body) as { kind: string; items: Pod[] };
    assert.equal(pods.kind, 'PodList');
    assert.equal(pods.items[0]?.metadata.name, h.pod.metadata.name);
    assert.deepEqual(JSON.parse((await rawRequest('/configz')).body), { kubeletconfig: { nodeName: NODE } });
    const metrics = (await rawRequest('/metrics')).body;
    assert.match(metrics, /# TYPE kubelet_http_requests_total counter/);
    assert.match(
      metrics,
      /kubelet_http_requests_total\{method="GET",path="pods",server_type="readwrite",long_running="false"\} \d+/,
    );
    assert.equal((await rawRequest('/metrics/cadvisor')).status, 404);
  });

  test("/metrics/resource has the pod containers' CPU and memory from CRI", async () => {
    const text = (await rawRequest('/metrics/resource')).body;
    assert.match(
      text,
      new RegExp(
        `container_memory_working_set_bytes\\{container="shell",pod="${h.pod.metadata.name}",namespace="${NS}"\\} \\d+ \\d+`,
      ),
    );
    assert.match(text, /node_cpu_usage_seconds_total [\d.]+ \d+/);
    assert.match(text, /scrape_error 0/);
  });

  test('the self-signed certificate names the node and is kept across restarts', async () => {
    const cert = await new Promise<tls.PeerCertificate>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port: h.server.port, rejectUnauthorized: false }, () => {
        resolve(s.getPeerCertificate());
        s.end();
      });
      s.on('error', reject);
    });
    assert.match(String(cert.subject.CN), new RegExp(`^${NODE}@\\d+$`));
    assert.equal(cert.subjectaltname, `DNS:${NODE}`);
  });
});

const hasKubectl = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].some((p) => existsSync(p));

describe('kubectl through an API server front', { skip: !hasKubectl && 'kubectl is not installed' }, () => {
  let front: http.Server;
  // Upgraded sockets are not the HTTP server's any more: closing it does not end them.
  const frontSockets = new Set<Socket>();
  let kubeconfig: string;

  before(async () => {
    // Stands in for the API server's pods/exec and pods/portforward: converts PodExecOptions to the
    // kubelet's query and proxies the upgrade to the kubelet, as kube-apiserver does.
    front = http.createServer((req, res) => {
      const json = (body: unknown) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      // Just enough discovery for kubectl to know pods and their exec/attach/portforward subresources.
      const pathname = new URL(req.url ?? '/', 'http://front').pathname;
      if (pathname === '/api')
        return json({ kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
      if (pathname === '/apis') return json({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
      if (pathname === '/api/v1')
        return json({
          kind: 'APIResourceList',
          groupVersion: 'v1',
          resources: [
            {
              name: 'pods',
              singularName: 'pod',
              namespaced: true,
              kind: 'Pod',
              verbs: ['get', 'list'],
              shortNames: ['po'],
            },
            {
              name: 'pods/exec',
              singularName: '',
              namespaced: true,
              kind: 'PodExecOptions',
              verbs: ['create', 'get'],
            },
            {
              name: 'pods/attach',
              singularName: '',
              namespaced: true,
              kind: 'PodAttachOptions',
              verbs: ['create', 'get'],
            },
            {
              name: 'pods/portforward',
              singularName: '',
              namespaced: true,
              kind: 'PodPortForwardOptions',
              verbs: ['create', 'get'],
            },
          ],
        });
      const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(pathname);
      if (req.method === 'GET' && m && m[2] === h.pod.metadata.name) {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            ...h.pod,
            status: { ...h.pod.status, phase: 'Running' },
          }),
        );
        return;
      }
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'NotFound',
          code: 404,
        }),
      );
    });
    front.on('upgrade', (req, socket: Socket, head) => {
      frontSockets.add(socket);
      const u = new URL(req.url ?? '/', 'http://front');
      const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)$/.exec(u.pathname);
      if (!m) {
        socket.destroy();
        return;
      }
      const q = new URLSearchParams();
      let path: string;
      if (m[3] === 'portforward') {
        path = `/portForward/${m[1]}/${m[2]}`;
        for (const p of u.searchParams.getAll('ports')) q.append('port', p);
      } else {
        path = `/${m[3]}/${m[1]}/${m[2]}/${u.searchParams.get('container') ?? ''}`;
        for (const c of u.searchParams.getAll('command')) q.append('command', c);
        for (const [from, to] of [
          ['stdin', 'input'],
          ['stdout', 'output'],
          ['stderr', 'error'],
          ['tty', 'tty'],
        ] as const)
          if (u.searchParams.get(from) === 'true') q.set(to, '1');
      }
      const upstream = tls.connect(
        { host: '127.0.0.1', port: h.server.port, rejectUnauthorized: false },
        () => {
          const lines = [
            `${req.method} ${path}?${q.toString()} HTTP/1.1`,
            `Host: 127.0.0.1:${h.server.port}`,
            `Authorization: Bearer ${h.adminToken}`,
          ];
          for (let i = 0; i < req.rawHeaders.length; i += 2) {
            const name = req.rawHeaders[i]!;
            if (/^(host|authorization)$/i.test(name)) continue;
            lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
          }
          upstream.write(lines.join('\r\n') + '\r\n\r\n');
          if (head.length) upstream.write(head);
          upstream.pipe(socket);
          socket.pipe(upstream);
        },
      );
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    kubeconfig = join(h.dir, 'front.kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: front, cluster: {server: "http://127.0.0.1:' +
          (front.address() as AddressInfo).port +
          '"}}]',
        'users: [{name: u, user: {token: "unused"}}]',
        'contexts: [{name: c, context: {cluster: front, user: u, namespace: ' + NS + '}}]',
        'current-context: c',
        '',
      ].join('\n'),
    );
  });

  after(async () => {
    front?.closeAllConnections();
    for (const s of frontSockets) s.destroy();
    await new Promise<void>((resolve) => (front ? front.close(() => resolve()) : resolve()));
  });

  function kubectl(args: string[], env: Record<string, string> = {}, input?: string) {
    return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        'kubectl',
        ['--kubeconfig', kubeconfig, ...args],
        { timeout: 60_000, env: { ...process.env, ...env } },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      if (input !== undefined) child.stdin?.end(input);
      else child.stdin?.end();
    });
  }

  test('kubectl exec over WebSocket v5 (its default): stdin, stdout and the exit code', async () => {
    await refreshStatus();
    const r = await kubectl(
      ['exec', '-i', h.pod.metadata.name!, '-c', 'shell', '--', 'sh', '-c', 'cat; exit 4'],
      {},
      'from kubectl\n',
    );
    assert.equal(r.stdout, 'from kubectl\n', r.stderr);
    assert.equal(r.code, 4, r.stderr);
  });

  test('kubectl exec over SPDY (websockets turned off)', async () => {
    await refreshStatus();
    const r = await kubectl(
      ['exec', h.pod.metadata.name!, '-c', 'shell', '--', 'sh', '-c', 'echo spdy-ok; echo to-err >&2'],
      {
        KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false',
      },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'spdy-ok\n');
    assert.match(r.stderr, /to-err/);
  });

  test('kubectl port-forward (WebSocket tunnel, and SPDY)', async () => {
    for (const env of [{}, { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' }]) {
      const child = execFile(
        'kubectl',
        ['--kubeconfig', kubeconfig, 'port-forward', `pod/${h.pod.metadata.name}`, ':8080'],
        {
          env: { ...process.env, ...env },
          timeout: 60_000,
        },
      );
      try {
        const local = await new Promise<number>((resolve, reject) => {
          let out = '';
          child.stdout?.on('data', (d: Buffer) => {
            out += d.toString();
            const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
            if (m) resolve(Number(m[1]));
          });
          child.once('exit', (code) => reject(new Error(`kubectl port-forward exited ${code}: ${out}`)));
        });
        const res = await fetch(`http://127.0.0.1:${local}/`, { signal: AbortSignal.timeout(20_000) });
        assert.equal(await res.text(), 'hello-from-pod\n', JSON.stringify(env));
      } finally {
        child.kill();
      }
    }
  });
});
