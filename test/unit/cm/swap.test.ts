import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { createContainerManager } from '../../../src/cm/container-manager.js';
import { checkSwap, detectSwapSettings, SwapOnError } from '../../../src/cm/swap.js';
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

describe('memorySwap.swapBehavior at start (upstream v1.30 server.go, the swap controller, MachineInfo)', () => {
  const meminfo = path.join(dir, 'meminfo');
  writeFileSync(
    meminfo,
    'MemTotal:       16384000 kB\nMemFree:         1000 kB\nSwapTotal:       4096000 kB\n',
  );

  function v1Root(withMemsw: boolean): string {
    const root = mkdtempSync(path.join(dir, 'v1-'));
    mkdirSync(path.join(root, 'memory'));
    if (withMemsw)
      writeFileSync(path.join(root, 'memory', 'memory.memsw.limit_in_bytes'), '9223372036854771712\n');
    return root;
  }

  function v2Root(withSwapMax: boolean): { root: string; selfCgroup: string } {
    const root = mkdtempSync(path.join(dir, 'v2-'));
    writeFileSync(path.join(root, 'cgroup.controllers'), 'cpu memory pids\n');
    mkdirSync(path.join(root, 'kubelet.slice'));
    if (withSwapMax) writeFileSync(path.join(root, 'kubelet.slice', 'memory.swap.max'), 'max\n');
    const selfCgroup = path.join(root, 'self-cgroup');
    writeFileSync(selfCgroup, '0::/kubelet.slice\n');
    return { root, selfCgroup };
  }

  const base = { failSwapOn: true, memorySwap: { swapBehavior: '' }, featureGates: {} };

  test('LimitedSwap on cgroup v1 with NodeSwap (on by default) is refused with upstream words', async () => {
    await assert.rejects(
      detectSwapSettings(
        { ...base, memorySwap: { swapBehavior: 'LimitedSwap' } },
        { cgroupRoot: v1Root(true), meminfo },
      ),
      (err: unknown) => {
        assert.ok(isKubeletError(err, 'INVALID_CONFIG'));
        assert.equal(
          err.message,
          'swap feature is enabled and LimitedSwap but it is only supported with cgroupv2',
        );
        return true;
      },
    );
  });

  test('cgroup v1: the controller is memory.memsw.limit_in_bytes; capacities from meminfo', async () => {
    const s = await detectSwapSettings(
      { ...base, memorySwap: { swapBehavior: 'NoSwap' } },
      { cgroupRoot: v1Root(true), meminfo },
    );
    assert.deepEqual(s, {
      behavior: 'NoSwap',
      nodeSwapEnabled: true,
      controllerAvailable: true,
      cgroupV2: false,
      memoryCapacityBytes: 16384000 * 1024,
      swapCapacityBytes: 4096000 * 1024,
    });
    const none = await detectSwapSettings(base, { cgroupRoot: v1Root(false), meminfo });
    assert.equal(none.controllerAvailable, false);
  });

  test("cgroup v2: the controller is memory.swap.max in the kubelet's own cgroup; LimitedSwap allowed", async () => {
    const { root, selfCgroup } = v2Root(true);
    const s = await detectSwapSettings(
      { ...base, memorySwap: { swapBehavior: 'LimitedSwap' } },
      { cgroupRoot: root, selfCgroup, meminfo },
    );
    assert.equal(s.cgroupV2, true);
    assert.equal(s.controllerAvailable, true);
    assert.equal(s.behavior, 'LimitedSwap');
    const without = v2Root(false);
    const none = await detectSwapSettings(base, {
      cgroupRoot: without.root,
      selfCgroup: without.selfCgroup,
      meminfo,
    });
    assert.equal(none.controllerAvailable, false);
  });

  test('with NodeSwap off, swap stays off for every container (nodeSwapEnabled false)', async () => {
    const s = await detectSwapSettings(
      { ...base, featureGates: { NodeSwap: false } },
      { cgroupRoot: v1Root(true), meminfo },
    );
    assert.equal(s.nodeSwapEnabled, false);
  });
});
