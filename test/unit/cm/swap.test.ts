import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createContainerManager } from '../../../src/cm/container-manager.js';
import { checkSwap, SwapOnError } from '../../../src/cm/swap.js';
import { isKubeletError } from '../../../src/lib/errors.js';
import { config } from './fixtures.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'swap-test-'));
const HEADER = 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n';
const noSwap = path.join(dir, 'no-swap');
writeFileSync(noSwap, HEADER);
const swapOn = path.join(dir, 'swap-on');
writeFileSync(swapOn, HEADER + '/swapfile                               file\t\t1048572\t\t0\t\t-2\n');

test('swap off: the kubelet starts', async () => {
  await checkSwap(true, noSwap);
});

test('swap on with failSwapOn: refused with upstream message', async () => {
  await assert.rejects(checkSwap(true, swapOn), (err: unknown) => {
    assert.ok(err instanceof SwapOnError);
    assert.ok(isKubeletError(err, 'SWAP_ON'));
    assert.match(
      err.message,
      /^running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false/,
    );
    assert.match(err.message, /\/swapfile/);
    return true;
  });
});

test('swap on without failSwapOn, or no /proc/swaps: runs', async () => {
  await checkSwap(false, swapOn);
  await checkSwap(true, path.join(dir, 'missing'));
});

test('the container manager refuses to be made while swap is on, whatever the cgroup layout', async () => {
  await assert.rejects(
    createContainerManager({ config: config({ failSwapOn: true, cgroupsPerQOS: false }), swapsFile: swapOn }),
    SwapOnError,
  );
  const cm = await createContainerManager({
    config: config({ failSwapOn: true, cgroupsPerQOS: false }),
    swapsFile: noSwap,
  });
  assert.ok(cm);
});
