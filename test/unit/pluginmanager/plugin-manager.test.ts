/**
 * The plugin manager against real registration sockets (the CSI test driver's registration server)
 * in a scratch plugins_registry: a socket found at start and one created later are registered
 * through GetInfo, the handler's validate and register, and NotifyRegistrationStatus; a socket
 * removed is deregistered; an unknown type and a failed validation are told to the plugin and
 * retried with back-off.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { PluginHandler } from '../../../src/pluginmanager/cache/types.js';
import { PluginManager, pluginsRegistryDir } from '../../../src/pluginmanager/plugin-manager.js';
import { CsiTestDriver } from '../../helpers/csi-test-driver.js';
import { waitFor } from '../../helpers/wait.js';

class RecordingHandler implements PluginHandler {
  readonly calls: string[] = [];
  rejectNames = new Set<string>();

  validatePlugin(name: string, endpoint: string, versions: string[]): void {
    this.calls.push(`validate ${name} ${path.basename(endpoint)} ${versions.join(',')}`);
    if (this.rejectNames.has(name)) throw new Error(`${name} is not welcome`);
  }

  registerPlugin(name: string, endpoint: string): void {
    this.calls.push(`register ${name} ${path.basename(endpoint)}`);
  }

  deRegisterPlugin(name: string): void {
    this.calls.push(`deregister ${name}`);
  }
}

describe('plugin manager', () => {
  let root: string;
  let manager: PluginManager;
  const handler = new RecordingHandler();
  const drivers: CsiTestDriver[] = [];

  function driver(name: string, type = 'CSIPlugin'): CsiTestDriver {
    const d = new CsiTestDriver({
      name,
      type,
      csiSocket: path.join(root, `${name}.sock`),
      registrationSocket: path.join(pluginsRegistryDir(root), `${name}-reg.sock`),
    });
    drivers.push(d);
    return d;
  }

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'pluginmanager-'));
  });

  after(async () => {
    await manager?.stop();
    for (const d of drivers) await d.stop();
    await rm(root, { recursive: true, force: true });
  });

  test('registers sockets found at start and created later, and deregisters removed ones', async () => {
    const early = driver('early.example.com');
    await early.startRegistration();
    // Not sockets, or hidden: ignored.
    await writeFile(path.join(pluginsRegistryDir(root), 'notes.txt'), 'x');
    manager = new PluginManager({ socketDir: pluginsRegistryDir(root), loopPeriodMs: 100 });
    manager.addHandler('CSIPlugin', handler);
    await manager.start();
    await waitFor('early to register', () => early.statuses.length > 0, 10_000, 20);
    assert.deepEqual(early.statuses[0], { pluginRegistered: true, error: '' });
    assert.deepEqual(handler.calls, [
      'validate early.example.com early.example.com.sock 1.0.0',
      'register early.example.com early.example.com.sock',
    ]);

    const late = driver('late.example.com');
    await late.startRegistration();
    await waitFor('late to register', () => late.statuses.length > 0, 10_000, 20);
    assert.equal(late.statuses[0]?.pluginRegistered, true);
    assert.deepEqual(
      manager
        .registeredPlugins()
        .map((p) => p.name)
        .sort(),
      ['early.example.com', 'late.example.com'],
    );

    await early.stopRegistration();
    await waitFor(
      'early to deregister',
      () => handler.calls.includes('deregister early.example.com'),
      10_000,
      20,
    );
    assert.deepEqual(
      manager.registeredPlugins().map((p) => p.name),
      ['late.example.com'],
    );
  });

  test('an unknown type and a failed validation are told to the plugin and retried with back-off', async () => {
    const odd = driver('odd.example.com', 'NoSuchPlugin');
    await odd.startRegistration();
    await waitFor('odd to hear back', () => odd.statuses.length > 0, 10_000, 20);
    assert.equal(odd.statuses[0]?.pluginRegistered, false);
    assert.match(
      odd.statuses[0]?.error ?? '',
      /no handler registered for plugin type: NoSuchPlugin at socket/,
    );

    handler.rejectNames.add('shunned.example.com');
    const shunned = driver('shunned.example.com');
    await shunned.startRegistration();
    await waitFor('two refusals', () => shunned.statuses.length >= 2, 10_000, 20);
    assert.match(
      shunned.statuses[0]?.error ?? '',
      /^RegisterPlugin error -- plugin validation failed with err: shunned.example.com is not welcome$/,
    );
    // Back-off: 500 ms, then 1 s, so in the first ~1.6 s there are at most 3 attempts, not one per 100 ms pass.
    await new Promise((r) => setTimeout(r, 600));
    assert.ok(shunned.callsOf('GetInfo').length <= 3, `retried ${shunned.callsOf('GetInfo').length} times`);
    assert.ok(!manager.registeredPlugins().some((p) => p.name === 'shunned.example.com'));
  });
});
