/**
 * Hostile manifests beside good ones, end to end through containerd: the good pods run;
 * each bad file is refused with exactly one log line naming the file and the field; no folder is
 * made from a UID that climbs out of --root-dir; and a kubelet restart with the bad files still
 * there keeps the good pods' containers (same IDs, no restart).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import type { Pod } from '../../src/api/core-v1.js';
import { OFF_THREAD_DECODE_MIN_BYTES } from '../../src/config/manifest-decoder.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-hostile-${process.pid}`;

function manifest(name: string, extra: { meta?: string; spec?: string; container?: string } = {}): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${ns}`,
    ...(extra.meta ? [extra.meta] : []),
    'spec:',
    '  terminationGracePeriodSeconds: 2',
    ...(extra.spec ? [extra.spec] : []),
    '  containers:',
    '  - name: main',
    '    image: busybox',
    '    imagePullPolicy: IfNotPresent',
    ...(extra.container ? [extra.container] : ['    command: ["sleep", "3600"]']),
    '',
  ].join('\n');
}

/** File name → what its one log line must say. */
const HOSTILE: Record<string, { text: string; expected: RegExp }> = {
  'negative-probe.yaml': {
    text: manifest('negative-probe', {
      container:
        '    command: ["sleep", "3600"]\n    livenessProbe: { exec: { command: ["true"] }, periodSeconds: -1 }',
    }),
    expected:
      /spec\.containers\[0\]\.livenessProbe\.periodSeconds: Invalid value: -1: must be greater than or equal to 0/,
  },
  'bad-quantity.yaml': {
    text: manifest('bad-quantity', {
      spec: '  nodeSelector: { disktype: ssd }',
      container: '    command: ["sleep", "3600"]\n    resources: { limits: { memory: lots } }',
    }),
    expected:
      /spec\.containers\[0\]\.resources\.limits\[memory\]: Invalid value: \\"lots\\": quantities must match/,
  },
  'climbing-uid.yaml': {
    text: manifest('climbing-uid', { meta: '  uid: ../../x' }),
    expected: /metadata\.uid: Invalid value: \\"\.\.\/\.\.\/x\\"/,
  },
  'wrong-types.yaml': {
    text: manifest('wrong-types', { spec: '  hostNetwork: "yes"', container: '    command: sleep 3600' }),
    expected:
      /^(?=.*spec\.containers\[0\]\.command: Invalid type: expected list, got string)(?=.*spec\.hostNetwork: Invalid type: expected boolean)/,
  },
  'octal-mode.yaml': {
    // YAML 1.1: 01000 is 512, past 0777.
    text: manifest('octal-mode', {
      spec: '  volumes: [{ name: s, secret: { secretName: s, defaultMode: 01000 } }]',
    }),
    expected:
      /spec\.volumes\[0\]\.secret\.defaultMode: Invalid value: 512: must be a number between 0 and 0777/,
  },
  'huge.yaml': {
    text: manifest('huge', {
      meta: `  annotations: { example.com/blob: "${'a'.repeat(10 * 1024 * 1024 + 10)}" }`,
    }),
    expected: /larger than the 10485760 bytes a manifest may have/,
  },
};

const GOOD = ['good-a', 'good-b'];

/**
 * good-b is large enough (over OFF_THREAD_DECODE_MIN_BYTES) to be decoded in a worker thread: the
 * built kubelet must find the worker's file beside its own code (dist/kubelet, scripts/bundle.mjs).
 */
function goodManifest(name: string): string {
  if (name !== 'good-b') return manifest(name);
  assert.ok(OFF_THREAD_DECODE_MIN_BYTES < 100 * 1024);
  return manifest(name, { meta: `  annotations: { example.com/padding: "${'p'.repeat(100 * 1024)}" }` });
}

describe('hostile manifests through containerd', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess | undefined;

  before(async () => {
    cri = await CriInspector.connect();
  });

  afterEach(async () => {
    await kubelet?.dispose();
    kubelet = undefined;
    await cri.removeNamespace(ns);
  });

  after(() => cri.close());

  async function containerIds(k: KubeletProcess): Promise<Map<string, string>> {
    return waitFor(
      'the good pods to be Running with their containers',
      async () => {
        const ids = new Map<string, string>();
        for (const name of GOOD) {
          const p: Pod | undefined = await k.pod(name);
          const cs = p?.status?.containerStatuses?.find((c) => c.name === 'main');
          if (p?.status?.phase !== 'Running' || !cs?.state?.running || !cs.containerID) return undefined;
          ids.set(name, cs.containerID);
        }
        return ids;
      },
      90_000,
    );
  }

  async function refusalLines(k: KubeletProcess): Promise<Map<string, string[]>> {
    const lines = (await k.logs()).split('\n').filter((l) => l.includes('"Could not process manifest file"'));
    const byFile = new Map<string, string[]>();
    for (const file of Object.keys(HOSTILE)) {
      const full = path.join(k.manifestDir, file);
      byFile.set(
        file,
        lines.filter((l) => l.includes(`path=${JSON.stringify(full)}`)),
      );
    }
    return byFile;
  }

  test('good pods run, each bad file is one line naming file and field, a restart keeps the good containers', async () => {
    kubelet = new KubeletProcess();
    const k = kubelet;
    await k.start();
    for (const [file, { text }] of Object.entries(HOSTILE)) await k.writeManifest(file, text);
    for (const name of GOOD) await k.writeManifest(`${name}.yaml`, goodManifest(name));

    const before = await containerIds(k);
    await waitFor(
      'a refusal line for every hostile file',
      async () => [...(await refusalLines(k)).values()].every((l) => l.length > 0),
      30_000,
    );
    // Several more rescans (fileCheckFrequency is 2 s): still one line each.
    await new Promise((r) => setTimeout(r, 5_000));
    const lines = await refusalLines(k);
    for (const [file, { expected }] of Object.entries(HOSTILE)) {
      const fileLines = lines.get(file)!;
      assert.equal(fileLines.length, 1, `${file}: ${fileLines.join('\n')}`);
      assert.match(fileLines[0]!, expected, file);
    }
    const names = (await k.pods()).map((p) => p.metadata.name).sort();
    assert.deepEqual(names, GOOD.map((n) => `${n}-${k.nodeName}`).sort(), 'only the good pods are wanted');
    assert.equal(
      existsSync(path.resolve(k.rootDir, 'pods', '../../x')),
      false,
      'no folder from the climbing UID',
    );
    assert.equal(existsSync(path.resolve(k.podLogsDir, `${ns}_climbing-uid-${k.nodeName}_../../x`)), false);
    const healthz = await fetch(`http://127.0.0.1:${k.healthzPort}/healthz`, {
      signal: AbortSignal.timeout(1000),
    });
    assert.equal(healthz.status, 200);

    // A restart with the hostile files still there: the good pods' containers are kept.
    await k.stop('SIGTERM');
    await k.start();
    const afterRestart = await containerIds(k);
    assert.deepEqual(afterRestart, before, 'the same containers run after the restart');
    for (const name of GOOD) {
      const cs = (await k.pod(name))?.status?.containerStatuses?.find((c) => c.name === 'main');
      assert.equal(cs?.restartCount, 0, name);
    }
    await waitFor(
      'the restarted kubelet to refuse every hostile file again',
      async () => [...(await refusalLines(k)).values()].every((l) => l.length === 2),
      30_000,
    );
    const running = await cri.containers(ns);
    assert.equal(running.filter((c) => c.state === 'CONTAINER_RUNNING').length, GOOD.length);
  });
});
