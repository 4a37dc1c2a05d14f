/**
 * What upstream checks of the host before its container manager runs: failCgroupV1 (v1.31's
 * validateKubeletOSConfiguration: no start on a cgroup v1 host when set) and protectKernelDefaults
 * (setupKernelTunables: kernel tunables that differ from what the kubelet needs stop the start when
 * it is set, and are written to the needed values when it is not, as upstream does).
 */
import { access, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('container_manager');

/** Upstream's desiredState, in its order. */
const KERNEL_TUNABLES: readonly [string, number][] = [
  ['vm/overcommit_memory', 1],
  ['vm/panic_on_oom', 0],
  ['kernel/panic', 10],
  ['kernel/panic_on_oops', 1],
  ['kernel/keys/root_maxkeys', 1_000_000],
  ['kernel/keys/root_maxbytes', 25_000_000],
];

export async function checkFailCgroupV1(failCgroupV1: boolean, cgroupRoot = '/sys/fs/cgroup'): Promise<void> {
  if (!failCgroupV1) return;
  const v2 = await access(path.join(cgroupRoot, 'cgroup.controllers')).then(
    () => true,
    () => false,
  );
  if (!v2)
    throw new KubeletError(
      'INVALID_CONFIG',
      'kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is in maintenance mode',
    );
}

/** Refuses (protect) or writes (otherwise) the kernel tunables that differ from upstream's desired values. */
export async function checkKernelTunables(protect: boolean, procSysRoot = '/proc/sys'): Promise<void> {
  const errors: string[] = [];
  for (const [flag, expected] of KERNEL_TUNABLES) {
    let actual: number;
    try {
      actual = Number((await readFile(path.join(procSysRoot, flag), 'utf8')).trim());
    } catch (err) {
      errors.push(errorMessage(err));
      continue;
    }
    if (actual === expected) continue;
    if (protect)
      errors.push(`invalid kernel flag: ${flag}, expected value: ${expected}, actual value: ${actual}`);
    else {
      log.v(2, 'Updating kernel flag', { flag, expectedValue: expected, actualValue: actual });
      try {
        await writeFile(path.join(procSysRoot, flag), String(expected));
      } catch (err) {
        errors.push(errorMessage(err));
      }
    }
  }
  if (errors.length === 0) return;
  throw new KubeletError('INVALID_CONFIG', errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`);
}
