/**
 * What upstream checks of the host before its container manager runs: failCgroupV1 (refused on a
 * cgroup v1 host) and protectKernelDefaults (refused when the kernel's tunables differ from what the
 * kubelet needs, written when it is off), each in upstream's words.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { checkFailCgroupV1, checkKernelTunables } from '../../../src/cm/host-checks.js';

const dir = mkdtempSync(path.join(tmpdir(), 'host-checks-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function procSys(values: Record<string, string>): string {
  const root = mkdtempSync(path.join(dir, 'sys-'));
  for (const [name, value] of Object.entries(values)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), `${value}\n`);
  }
  return root;
}

const GOOD = {
  'vm/overcommit_memory': '1',
  'vm/panic_on_oom': '0',
  'kernel/panic': '10',
  'kernel/panic_on_oops': '1',
  'kernel/keys/root_maxkeys': '1000000',
  'kernel/keys/root_maxbytes': '25000000',
};

test('failCgroupV1 refuses a cgroup v1 host, and only when set', async () => {
  const v1 = mkdtempSync(path.join(dir, 'v1-'));
  const v2 = mkdtempSync(path.join(dir, 'v2-'));
  writeFileSync(path.join(v2, 'cgroup.controllers'), 'cpu memory\n');
  await assert.rejects(checkFailCgroupV1(true, v1), {
    message:
      'kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is in maintenance mode',
  });
  await checkFailCgroupV1(true, v2);
  await checkFailCgroupV1(false, v1);
});

test("protectKernelDefaults refuses tunables that differ, every one named in upstream's words", async () => {
  await checkKernelTunables(true, procSys(GOOD));
  const root = procSys({ ...GOOD, 'vm/overcommit_memory': '0', 'kernel/panic': '0' });
  await assert.rejects(checkKernelTunables(true, root), {
    message:
      '[invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0, ' +
      'invalid kernel flag: kernel/panic, expected value: 10, actual value: 0]',
  });
  // Off (the default), the kubelet sets them itself, as upstream's does.
  await checkKernelTunables(false, root);
  assert.equal(readFileSync(path.join(root, 'vm/overcommit_memory'), 'utf8'), '1');
  assert.equal(readFileSync(path.join(root, 'kernel/panic'), 'utf8'), '10');
  await checkKernelTunables(true, root);
});
