/**
 * Who on this machine can reach the kubelet, with the built kubelet and pods through containerd:
 * standalone without a config file, an unprivileged user (nobody, through setpriv) gets no command
 * run by the kubelet API. Needs root, to start the kubelet and to drop to nobody.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait.js';

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
