/**
 * The CSI registration handler against the CSI test driver's real Node service: versions are
 * validated as upstream (1.x only, a higher one for a name already taken), a registered driver is
 * recorded with its endpoint and its NodeGetInfo answer goes to the node info manager, a failing
 * node update leaves nothing registered, and deregistration forgets it.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CsiDriversStore, highestSupportedVersion } from '../../../src/volume/csi/csi-drivers-store.js';
import { CsiRegistrationHandler } from '../../../src/volume/csi/csi-registration-handler.js';
import type { NodeInfoManager } from '../../../src/volume/csi/node-info-manager.js';
import { makeVolumeHandle } from '../../../src/volume/csi/csi-plugin.js';
import { CsiTestDriver } from '../../helpers/csi-test-driver.js';

describe('CSI registration handler', () => {
  let dir: string;
  let driver: CsiTestDriver;
  const installed: string[] = [];
  let failInstall = false;
  const nim: NodeInfoManager = {
    installCSIDriver: (name, nodeId) => {
      if (failInstall) return Promise.reject(new Error('node update refused'));
      installed.push(`${name}=${nodeId}`);
      return Promise.resolve();
    },
    uninstallCSIDriver: (name) => {
      installed.push(`-${name}`);
      return Promise.resolve();
    },
  };

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'csi-handler-'));
    driver = new CsiTestDriver({
      name: 'hostdir.csi.example.com',
      csiSocket: path.join(dir, 'csi.sock'),
      registrationSocket: path.join(dir, 'reg.sock'),
      nodeId: 'node-7',
    });
    await driver.startCsi();
  });

  after(async () => {
    await driver.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('versions: the highest 1.x wins; 0.x and 2.x only are refused', () => {
    assert.deepEqual(highestSupportedVersion(['0.3.0', '1.2.0', '1.10.1', '2.0.0']), [1, 10, 1]);
    assert.deepEqual(highestSupportedVersion(['v1.5']), [1, 5]);
    assert.throws(
      () => highestSupportedVersion(['0.3.0']),
      /highest supported version reported by driver is 0.3.0, must be v1.x/,
    );
    assert.throws(() => highestSupportedVersion(['2.0.0']), /could not find a highest supported version/);
    assert.throws(() => highestSupportedVersion([]), /empty array/);
  });

  test('register asks NodeGetInfo and records the driver; deregister forgets it', async () => {
    const store = new CsiDriversStore();
    const h = new CsiRegistrationHandler(store, nim, 5_000);
    h.validatePlugin('hostdir.csi.example.com', driver.opts.csiSocket, ['1.0.0']);
    assert.throws(
      () => h.validatePlugin('hostdir.csi.example.com', driver.opts.csiSocket, ['0.3.0']),
      /^Error: validation failed for CSI Driver hostdir.csi.example.com at endpoint .*None of the versions specified \["0.3.0"\] are supported/,
    );
    await h.registerPlugin('hostdir.csi.example.com', driver.opts.csiSocket, ['1.0.0']);
    assert.equal(store.get('hostdir.csi.example.com')?.endpoint, driver.opts.csiSocket);
    assert.deepEqual(installed, ['hostdir.csi.example.com=node-7']);
    assert.equal(driver.callsOf('NodeGetInfo').length, 1);
    // The same name with the same version again is refused while the first is registered.
    assert.throws(
      () => h.validatePlugin('hostdir.csi.example.com', driver.opts.csiSocket, ['1.0.0']),
      /Another driver with the same name is already registered with a higher supported version: "1.0.0"/,
    );
    h.deRegisterPlugin('hostdir.csi.example.com');
    assert.equal(store.get('hostdir.csi.example.com'), undefined);
  });

  test('a failed node update unregisters the driver again', async () => {
    const store = new CsiDriversStore();
    const h = new CsiRegistrationHandler(store, nim, 5_000);
    failInstall = true;
    try {
      await assert.rejects(
        h.registerPlugin('hostdir.csi.example.com', driver.opts.csiSocket, ['1.0.0']),
        /node update refused/,
      );
    } finally {
      failInstall = false;
    }
    assert.deepEqual(store.names(), []);
  });

  test('an inline volume ID is csi-<sha256(pod UID + volume name)>', () => {
    const sha = createHash('sha256').update('uid-1data').digest('hex');
    assert.equal(makeVolumeHandle('uid-1', 'data'), `csi-${sha}`);
  });
});
