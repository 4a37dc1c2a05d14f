/**
 * What the built kubelet (dist/kubelet, `npm run build`) loads before it does anything: Node
 * built-ins that only some work needs are loaded on first use (src/lib/lazy-builtin.ts), so an idle
 * kubelet does not hold them (docs/benchmarks.md, "Node built-ins on first use"). Checked on the
 * bundle, in a plain node (tsx itself loads some of them), because the bundle is what runs.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const bundle = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/kubelet/main.js');

// Each with the work that loads it.
const ON_FIRST_USE = {
  zlib: 'a SPDY stream or a compressed log rotation',
  worker_threads: 'a manifest of 64 KiB or more',
  'dns/promises': "a look-up of the node's name",
  perf_hooks: 'nothing: durations come from process.hrtime',
  http2: "containerd's event stream, or a client of the pod resources or device plugin socket",
};

function builtinsLoadedByImport(): Promise<string[]> {
  const script = `await import(${JSON.stringify(bundle)}); console.log(JSON.stringify(process.moduleLoadList));`;
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      { timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '' } },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`${err.message}\n${stderr}`));
        const loaded = JSON.parse(stdout) as string[];
        resolve(
          loaded.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length)),
        );
      },
    ),
  );
}

test('importing the bundle loads none of the built-ins kept for first use', async () => {
  assert.ok(existsSync(bundle), `${bundle} is missing: run npm run build first`);
  const loaded = await builtinsLoadedByImport();
  // The check itself works: the bundle's own start-up needs these.
  for (const needed of ['http', 'net', 'fs/promises'])
    assert.ok(loaded.includes(needed), `${needed} not loaded`);
  const early = Object.keys(ON_FIRST_USE).filter((name) => loaded.includes(name));
  assert.deepEqual(
    early,
    [],
    early
      .map(
        (name) =>
          `node:${name} is loaded at import, though only ${ON_FIRST_USE[name as keyof typeof ON_FIRST_USE]} needs it`,
      )
      .join('; '),
  );
});
