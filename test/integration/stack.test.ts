// The runtime stack itself (scripts/runtime-stack.sh up): our containerd answers CRI, has the offline
// images under the names a kubelet asks for, and gives a pod an address on the CNI bridge that the
// host, a hostPort on loopback and the pod itself can all use. Every other integration test stands
// on these facts, so when this file fails, look here first.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemoteImageService } from '../../src/cri/remote-image.js';
import { RemoteRuntimeService } from '../../src/cri/remote-runtime.js';
import type { ContainerConfig, PodSandboxConfig } from '../../src/cri/types.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';

const endpoint = process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock';
const podCidr = process.env.TSKUBELET_POD_CIDR ?? '10.244.77.0/24';
const LABEL = 'tskubelet.test/stack';

let runtime: RemoteRuntimeService;
let images: RemoteImageService;
let logDirectory: string;

before(async () => {
  runtime = new RemoteRuntimeService(endpoint);
  images = new RemoteImageService(endpoint);
  logDirectory = await mkdtemp(join(tmpdir(), 'tskubelet-stack-'));
});

after(async () => {
  // Whatever a failed assertion left running goes, so the next file starts from an empty runtime.
  for (const sandbox of await runtime.listPodSandbox({ labelSelector: { [LABEL]: 'true' } })) {
    await runtime.stopPodSandbox(sandbox.id);
    await runtime.removePodSandbox(sandbox.id);
  }
  runtime.close();
  images.close();
  await rm(logDirectory, { recursive: true, force: true });
});

/** Whether ip lies in cidr (IPv4 only, which is all the stack's bridge hands out). */
function inCidr(ip: string, cidr: string): boolean {
  const toInt = (a: string) => a.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
  const [base = '', bits = '32'] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(toInt(ip) / size) === Math.floor(toInt(base) / size);
}

async function httpGet(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  assert.equal(res.status, 200, url);
  return res.text();
}

test('containerd answers CRI v1 and reports runtime and network ready', async () => {
  const version = await runtime.version();
  assert.equal(version.runtimeName, 'containerd');
  assert.equal(version.runtimeApiVersion, 'v1');
  const { conditions } = (await runtime.status()).status;
  for (const type of ['RuntimeReady', 'NetworkReady']) {
    assert.equal(
      conditions.find((c) => c.type === type)?.status,
      true,
      `${type}: ${JSON.stringify(conditions)}`,
    );
  }
});

test('the offline images answer to the names a kubelet uses', async () => {
  const pause = await images.imageStatus({ image: 'registry.k8s.io/pause:3.9' });
  assert.ok(pause, 'the sandbox image registry.k8s.io/pause:3.9 is missing');
  // A manifest saying `image: busybox` means docker.io/library/busybox:latest.
  const busybox = await images.imageStatus({ image: 'busybox' });
  assert.ok(busybox, 'busybox is missing');
  assert.deepEqual(busybox.repoTags, ['docker.io/library/busybox:latest']);
  // Its own image, not a second name of latest's: containerd would report that second name in the
  // ContainerStatus of every pod that asked for busybox.
  const tagged = await images.imageStatus({ image: 'busybox:1.36' });
  assert.deepEqual(tagged?.repoTags, ['docker.io/library/busybox:1.36']);
});

test('a pod gets a bridge address, runs busybox, logs, and is reachable from the host', async () => {
  const hostPort = await freePort();
  const uid = `stack-${Date.now()}`;
  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: 'stack-check', uid, namespace: 'default', attempt: 0 },
    hostname: 'stack-check',
    logDirectory,
    portMappings: [{ protocol: 'TCP', containerPort: 8080, hostPort, hostIp: '' }],
    labels: { [LABEL]: 'true' },
    annotations: {},
    linux: {
      cgroupParent: '',
      sysctls: {},
      securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
    },
  };
  const sandboxId = await runtime.runPodSandbox(sandboxConfig, '');
  const { status: sandbox } = await runtime.podSandboxStatus(sandboxId);
  assert.equal(sandbox.state, 'SANDBOX_READY');
  const ip = sandbox.network?.ip ?? '';
  assert.ok(inCidr(ip, podCidr), `pod IP ${ip} is not in ${podCidr}`);

  const config: ContainerConfig = {
    metadata: { name: 'web', attempt: 0 },
    image: { image: 'busybox' },
    command: [
      'sh',
      '-c',
      'echo hello-from-pod > /tmp/index.html; echo started; exec httpd -f -p 8080 -h /tmp',
    ],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: { [LABEL]: 'true' },
    annotations: {},
    logPath: 'web/0.log',
    stdin: false,
    stdinOnce: false,
    tty: false,
  };
  const containerId = await runtime.createContainer(sandboxId, config, sandboxConfig);
  await runtime.startContainer(containerId);
  const { status } = await runtime.containerStatus(containerId);
  assert.equal(status.state, 'CONTAINER_RUNNING');
  assert.equal(status.image.image, 'docker.io/library/busybox:latest');
  assert.equal(status.logPath, join(logDirectory, 'web/0.log'));

  // The CRI log format: "<RFC 3339 nano time> <stream> <F|P> <line>".
  const log = await waitFor(
    'the container log line',
    async () => {
      const text = await readFile(status.logPath, 'utf8').catch(() => '');
      return /^\S+ stdout F started$/m.test(text) ? text : undefined;
    },
    5000,
  );
  assert.match(log, /^\d{4}-\d\d-\d\dT\S+Z stdout F started$/m);

  // host → pod address, and host → hostPort on loopback (portmap's DNAT with route_localnet).
  assert.equal(
    (await waitFor('httpd in the pod', () => httpGet(`http://${ip}:8080/index.html`), 5000)).trim(),
    'hello-from-pod',
  );
  assert.equal((await httpGet(`http://127.0.0.1:${hostPort}/index.html`)).trim(), 'hello-from-pod');

  // pod → host: the bridge's gateway address, the first of the subnet.
  const gateway = ip.replace(/\.\d+$/, '.1');
  const ping = await runtime.execSync(containerId, ['ping', '-c', '1', '-W', '2', gateway], 10);
  assert.equal(ping.exitCode, 0, ping.stdout.toString() + ping.stderr.toString());

  await runtime.stopPodSandbox(sandboxId);
  await runtime.removePodSandbox(sandboxId);
  const left = await runtime.listPodSandbox({ labelSelector: { [LABEL]: 'true' } });
  assert.deepEqual(left, []);
});
