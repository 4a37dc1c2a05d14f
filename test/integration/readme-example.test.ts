/**
 * The README's first command as a new user meets it: scripts/run-example.sh's tskubelet, with the
 * example config (scripts/example-kubelet-config.yaml) and pods (examples/), at the default
 * verbosity, through the private containerd. Only the healthz port, folders and node name differ, so the
 * run neither meets another kubelet's ports nor leaves files outside its own folder.
 *
 * For a minute after start-up it must print fewer than 40 lines (the crash-looping example and
 * MissingClusterDNS once printed three event lines a second, forever), while `tskubelet events`
 * still lists every event with its count.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CriInspector } from '../helpers/cri-inspect.js';
import { runtimeEndpoint, unmountUnder } from '../helpers/kubelet-process.js';
import { freePort } from '../helpers/ports.js';
import { sleep, waitFor } from '../helpers/wait.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(repoRoot, 'bin/tskubelet');
const WATCH_MS = 60_000;
const MAX_LINES = 40;
/** A developer's second stack shares the machine's cgroups with the first (see kubelet-process.ts). */
const privateStack = (process.env.TSKUBELET_STACK_BRIDGE ?? 'tskube0') !== 'tskube0';

interface Line {
  atMs: number;
  text: string;
}

describe("the README's example at the default verbosity", () => {
  const nodeName = `readme-${process.pid}`;
  const lines: Line[] = [];
  let dir: string;
  let kubelet: ChildProcess | undefined;
  let healthzPort: number;
  let cri: CriInspector;

  before(async () => {
    cri = await CriInspector.connect();
    dir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-readme-'));
    healthzPort = await freePort();
    // run-example.sh's drop-in (the runtime endpoint), with this run's own settings beside it: as
    // config fields rather than flags, so that start-up prints no deprecation warning either.
    const dropIns = path.join(dir, 'config.d');
    await mkdir(dropIns);
    const dropIn = [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `containerRuntimeEndpoint: ${runtimeEndpoint}`,
      `healthzPort: ${healthzPort}`,
      ...(privateStack ? ['cgroupsPerQOS: false', 'enforceNodeAllocatable: []'] : []),
    ];
    await writeFile(path.join(dropIns, '10-runtime.conf'), `${dropIn.join('\n')}\n`);
    const args = [
      bin,
      // What run-example.sh passes...
      `--config=${path.join(repoRoot, 'scripts/example-kubelet-config.yaml')}`,
      `--config-dir=${dropIns}`,
      `--root-dir=${path.join(dir, 'root')}`,
      // ...and what keeps this run to itself.
      `--cert-dir=${path.join(dir, 'pki')}`,
      `--hostname-override=${nodeName}`,
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    kubelet = child;
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop() ?? '';
        for (const text of parts) lines.push({ atMs: Date.now(), text });
      });
    }
  });

  after(async () => {
    const child = kubelet;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    // The example's pods are in "default": remove only this node's.
    for (const sb of await cri.sandboxes('default')) {
      if (!sb.metadata.name.endsWith(`-${nodeName}`)) continue;
      await cri.conn.runtime.stopPodSandbox(sb.id).catch(() => undefined);
      await cri.conn.runtime.removePodSandbox(sb.id).catch(() => undefined);
    }
    cri.close();
    // The example's config keeps pod logs in /var/log/pods (upstream's default): remove this node's.
    for (const logs of ['/var/log/pods', '/var/log/containers']) {
      for (const name of await readdir(logs).catch(() => [] as string[]))
        if (name.includes(`-${nodeName}_`)) await rm(path.join(logs, name), { recursive: true, force: true });
    }
    await unmountUnder(dir);
    await rm(dir, { recursive: true, force: true });
  });

  /** The CLI as root runs it on the node (src/cli), against this kubelet. */
  async function cli(...args: string[]): Promise<string> {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [bin, ...args, `--root-dir=${path.join(dir, 'root')}`],
      { timeout: 20_000 },
    );
    return stdout;
  }

  test('prints start-up, the pod starts and the first back-off, then stays quiet', async (t) => {
    const started = await waitFor(
      'the kubelet to start',
      () => {
        if (kubelet?.exitCode !== null) throw new Error(`kubelet exited: ${text(lines)}`);
        return lines.findIndex((l) => l.text.includes('"Kubelet started"')) + 1 || undefined;
      },
      30_000,
    );
    const startedAtMs = lines[started - 1]!.atMs;
    // The first thing a new user reads is the kubelet starting, not a warning the example caused.
    const startUp = lines.slice(0, started);
    assert.deepEqual(
      startUp.filter((l) => l.text.includes('has been deprecated')).map((l) => l.text),
      [],
    );
    await sleep(startedAtMs + WATCH_MS - Date.now());
    const after = lines.slice(started).filter((l) => l.atMs <= startedAtMs + WATCH_MS);

    // The example did run: two pods up, one crash-looping (NAME READY STATUS RESTARTS AGE).
    const table = await cli('get', 'pods');
    const row = (name: string) =>
      table.split('\n').find((r) => r.startsWith(`${name}-${nodeName} `)) ?? `${name}: not listed`;
    for (const name of ['counter', 'web']) assert.match(row(name), /\s1\/1\s+Running\s+0\s/, table);
    const restarts = Number(/^\S+\s+\S+\s+\S+\s+(\d+)/.exec(row('crashloop'))?.[1]);
    assert.ok(restarts >= 2, `crashloop restarted: ${table}`);

    t.diagnostic(
      `${after.length} lines in the ${WATCH_MS / 1000} s after "Kubelet started":\n${text(after)}`,
    );
    assert.ok(after.length < MAX_LINES, `${after.length} lines in ${WATCH_MS} ms:\n${text(after)}`);
    // What was printed was worth printing: each event once.
    const events = after.filter((l) => l.text.includes('"Event occurred"'));
    assert.equal(events.filter((l) => l.text.includes('reason="BackOff"')).length, 1, text(events));
    assert.equal(
      events.filter((l) => l.text.includes('reason="MissingClusterDNS"') && l.text.includes('kind="Node"'))
        .length,
      1,
      text(events),
    );
    for (const name of ['counter', 'web', 'crashloop'])
      assert.equal(
        events.filter((l) => l.text.includes(`reason="Started"`) && l.text.includes(`${name}-${nodeName}`))
          .length,
        1,
        `${name} started, once: ${text(events)}`,
      );
  });

  test('`tskubelet events` lists the BackOff events with their counts', async (t) => {
    const stdout = await cli('events');
    const rows = stdout.split('\n');
    assert.match(rows[0] ?? '', /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE/);
    const backOff = rows.filter((r) => /\sBackOff\s/.test(r) && r.includes(`pod/crashloop-${nodeName}`));
    assert.equal(backOff.length, 1, stdout);
    const count = Number(/\(x(\d+) over \S+\)/.exec(backOff[0]!)?.[1]);
    t.diagnostic(`BackOff after about a minute: ${backOff[0]}`);
    // The pod is synced when each back-off runs out (10 s, 20 s, 40 s), not each second: a few per
    // exit, where a sync each second while waiting counted about 50 in the minute.
    assert.ok(count >= 2 && count <= 20, `a BackOff for each exit in back-off, counted: ${backOff[0]}`);
    assert.match(backOff[0]!, /Back-off restarting failed container fail in pod crashloop-/);
    const dns = rows.filter(
      (r) => /\sMissingClusterDNS\s/.test(r) && r.includes(`pod/crashloop-${nodeName}`),
    );
    assert.match(dns[0] ?? '', /\(x\d+ over /, stdout);
  });
});

function text(lines: Line[]): string {
  return lines.map((l) => l.text).join('\n');
}
