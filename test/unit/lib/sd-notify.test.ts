/**
 * The systemd integration: READY=1 and WATCHDOG=1 reach a unix datagram socket named by NOTIFY_SOCKET
 * (a python3 listener stands in for systemd, since Node cannot bind one), the watchdog interval and
 * its health gate, and the unit file with kubeadm's drop-in passing `systemd-analyze verify`.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { realClock } from '../../../src/lib/clock.js';
import { SdNotifier, startWatchdog, watchdogIntervalMs } from '../../../src/lib/sd-notify.js';

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'sd-notify-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A python3 AF_UNIX SOCK_DGRAM listener printing each datagram on one line; resolves once bound. */
async function listener(socketPath: string): Promise<{ messages: string[]; stop(): void }> {
  const code = [
    'import socket, sys',
    's = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)',
    `s.bind(${JSON.stringify(socketPath)})`,
    'print("bound", flush=True)',
    'while True:',
    '    print(s.recv(4096).decode().replace("\\n", "|"), flush=True)',
  ].join('\n');
  const child = spawn('python3', ['-c', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const messages: string[] = [];
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const l of lines) {
        if (l === 'bound') resolve();
        else messages.push(l);
      }
    });
  });
  return { messages, stop: () => child.kill() };
}

async function waitFor(fn: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 10_000;
  while (!fn()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('READY=1 and WATCHDOG=1 reach the NOTIFY_SOCKET listener; an unhealthy kubelet withholds the watchdog', async () => {
  const socketPath = join(dir, 'notify.sock');
  const l = await listener(socketPath);
  try {
    const notifier = new SdNotifier(socketPath);
    assert.equal(await notifier.notify('READY=1'), undefined);
    await waitFor(() => l.messages.some((m) => m.includes('READY=1')), 'READY=1');
    assert.match(
      l.messages.find((m) => m.includes('READY=1'))!,
      new RegExp(`MAINPID=${process.pid}`),
    );

    let healthy: string | undefined = undefined;
    const reasons: string[] = [];
    const stop = startWatchdog(
      notifier,
      100,
      async () => healthy,
      realClock,
      (r) => reasons.push(r),
    );
    try {
      await waitFor(() => l.messages.filter((m) => m.includes('WATCHDOG=1')).length >= 2, 'two WATCHDOG=1');
      healthy = 'pleg: PLEG is not healthy';
      await waitFor(() => reasons.length >= 2, 'the unhealthy ticks');
      const count = l.messages.filter((m) => m.includes('WATCHDOG=1')).length;
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(
        l.messages.filter((m) => m.includes('WATCHDOG=1')).length,
        count,
        'no WATCHDOG=1 while unhealthy',
      );
      assert.equal(reasons[0], 'pleg: PLEG is not healthy');
    } finally {
      stop();
    }
  } finally {
    l.stop();
  }
});

test('the watchdog interval is half of WATCHDOG_USEC, for this process only', () => {
  assert.equal(watchdogIntervalMs({ WATCHDOG_USEC: '60000000' }, 42), 30_000);
  assert.equal(watchdogIntervalMs({ WATCHDOG_USEC: '60000000', WATCHDOG_PID: '42' }, 42), 30_000);
  assert.equal(watchdogIntervalMs({ WATCHDOG_USEC: '60000000', WATCHDOG_PID: '7' }, 42), undefined);
  assert.equal(watchdogIntervalMs({}, 42), undefined);
});

test('a notifier whose socket is gone reports the error instead of throwing', async () => {
  const err = await new SdNotifier(join(dir, 'missing.sock')).notify('READY=1');
  assert.ok(err);
});

test('the unit file and the kubeadm drop-in pass systemd-analyze verify', async () => {
  // systemd-analyze verify checks ExecStart's binary exists: point it at a staged copy of the tree.
  const root = join(dir, 'root');
  const unitDir = join(root, 'kubelet.service.d');
  mkdirSync(unitDir, { recursive: true });
  const bin = join(root, 'tskubelet');
  writeFileSync(bin, '#!/bin/sh\n', { mode: 0o755 });
  const unit = readFileSync(join(REPO, 'packaging/systemd/kubelet.service'), 'utf8');
  const dropin = readFileSync(join(REPO, 'packaging/systemd/kubelet.service.d/10-kubeadm.conf'), 'utf8');
  assert.match(unit, /^Type=notify$/m);
  assert.match(unit, /^NotifyAccess=all$/m);
  assert.match(unit, /^WatchdogSec=/m);
  for (const v of [
    'KUBELET_KUBECONFIG_ARGS',
    'KUBELET_CONFIG_ARGS',
    'KUBELET_KUBEADM_ARGS',
    'KUBELET_EXTRA_ARGS',
  ])
    assert.ok(dropin.includes(`$${v}`), v);
  assert.match(dropin, /^EnvironmentFile=-\/var\/lib\/kubelet\/kubeadm-flags.env$/m);
  assert.match(dropin, /^EnvironmentFile=-\/etc\/default\/kubelet$/m);
  writeFileSync(join(root, 'kubelet.service'), unit.replaceAll('/usr/local/bin/tskubelet', bin));
  writeFileSync(join(unitDir, '10-kubeadm.conf'), dropin.replaceAll('/usr/local/bin/tskubelet', bin));
  assert.ok(existsSync('/usr/bin/systemd-analyze'), 'systemd-analyze (Debian package systemd) is needed');
  // --man=no: no man pages in this image; the exit code is what counts (warnings about the
  // container's own units go to stderr and are not about these files).
  const { stderr } = await run('systemd-analyze', ['verify', '--man=no', join(root, 'kubelet.service')], {
    timeout: 30_000,
  }).catch((err: { stderr?: string; code?: number }) => {
    throw new Error(`systemd-analyze verify failed (${String(err.code)}): ${err.stderr ?? ''}`);
  });
  assert.doesNotMatch(stderr, /kubelet\.service|10-kubeadm\.conf/, stderr);
});
