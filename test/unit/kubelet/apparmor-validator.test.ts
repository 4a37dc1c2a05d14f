import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { Pod } from '../../../src/api/core-v1.js';
import { AppArmorValidator, isAppArmorEnabled } from '../../../src/kubelet/apparmor-validator.js';

const confined: Pod = {
  metadata: { name: 'p', namespace: 'ns' },
  spec: { securityContext: { appArmorProfile: { type: 'RuntimeDefault' } }, containers: [{ name: 'c' }] },
};

describe('AppArmorValidator', () => {
  test('a host without AppArmor refuses confined pods with reason AppArmor and upstream message', () => {
    assert.deepEqual(new AppArmorValidator(false).admit(confined), {
      admit: false,
      reason: 'AppArmor',
      message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host',
    });
  });

  test('pods that ask for nothing, and pods already running, are admitted', () => {
    const v = new AppArmorValidator(false);
    assert.deepEqual(v.admit({ metadata: {}, spec: { containers: [{ name: 'c' }] } }), { admit: true });
    assert.deepEqual(v.admit({ ...confined, status: { phase: 'Running' } }), { admit: true });
    assert.deepEqual(new AppArmorValidator(true).admit(confined), { admit: true });
  });

  test('the host check reads securityfs and the module parameter', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'apparmor-'));
    try {
      const securityFsDir = path.join(dir, 'apparmor');
      const enabledParameter = path.join(dir, 'enabled');
      assert.equal(isAppArmorEnabled({ securityFsDir, enabledParameter }), false);
      await mkdir(securityFsDir);
      await writeFile(enabledParameter, 'N\n');
      assert.equal(isAppArmorEnabled({ securityFsDir, enabledParameter }), false);
      await writeFile(enabledParameter, 'Y\n');
      assert.equal(isAppArmorEnabled({ securityFsDir, enabledParameter }), true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
