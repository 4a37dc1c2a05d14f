/**
 * grpc-js and node:http2 cost several MiB of memory (docs/benchmarks.md, "grpc-js and node:http2 only
 * when something speaks gRPC"), so the kubelet's modules must not load them when imported: only the
 * parts that speak gRPC through them load them, on first use. A value import of grpc-js anywhere in
 * the kubelet's import graph (or a generated file regenerated with ts-proto's grpc-js services) fails
 * this test.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';

const SCRIPT = `
import { createRequire } from 'node:module';
// main.ts only exports main(): importing it starts nothing, and it imports every part of the kubelet.
await import(${JSON.stringify(new URL('../../../src/cmd/main.ts', import.meta.url).href)});
const cache = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({
  modules: cache.length,
  grpcJs: cache.filter((p) => p.includes('@grpc/grpc-js')).length,
  http2: process.moduleLoadList.includes('NativeModule http2'),
}));
`;

test("importing the kubelet's modules loads neither grpc-js nor node:http2", async () => {
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', SCRIPT],
      { timeout: 60_000, cwd: new URL('../../..', import.meta.url).pathname },
      (err, out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(out)),
    ),
  );
  const line = stdout.trim().split('\n').pop() ?? '';
  const loaded = JSON.parse(line) as { modules: number; grpcJs: number; http2: boolean };
  assert.ok(loaded.modules > 0, 'the CommonJS cache was read (yaml, at least, is CommonJS)');
  assert.equal(loaded.grpcJs, 0, 'grpc-js files were loaded');
  assert.equal(loaded.http2, false, 'node:http2 was loaded');
});
