/**
 * The node page in a real headless Chromium (Debian's chromium, driven by puppeteer-core), with
 * static pods run by the built kubelet through containerd: the pods with their phases, a crash loop
 * with its restarts and back-off, a pod added while the page is open, a pod's log tail. Also the
 * CLI (`tskubelet get pods`, `describe pod`, `events`, `logs`) against the same pods, the page's
 * CSP, and the refusal of clients that are not on this machine.
 *
 * Screenshots are kept in the kubelet's temporary folder (the path is printed); with
 * TSKUBELET_UPDATE_DOCS_SCREENSHOT=1 the last one also replaces docs/node-page.png.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ns = 'node-page';

function manifest(name: string, command: string, restartPolicy = 'Always'): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      terminationGracePeriodSeconds: 1,
      restartPolicy,
      containers: [
        { name: 'app', image: 'busybox', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', command] },
      ],
    },
  });
}

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(repoRoot, 'bin/tskubelet'), ...args],
      { timeout: 15_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function rawGet(
  host: string,
  port: number,
  p: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path: p, headers, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${p} timed out`)));
    req.on('error', reject);
  });
}

/** An address of this machine that is not loopback, to reach the listener as another machine would. */
function externalAddress(): string | undefined {
  for (const addrs of Object.values(os.networkInterfaces()))
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}

describe('the node page in Chromium, and the CLI, with pods through containerd', () => {
  let cri: CriInspector;
  let kubelet: KubeletProcess;
  let browser: Browser;
  let page: Page;
  let artifacts: string;
  const cspViolations: string[] = [];
  const podName = (n: string) => `${n}-${kubelet.nodeName}`;
  const base = () => `http://127.0.0.1:${kubelet.healthzPort}`;
  let shots = 0;
  const shot = async (label: string) => {
    const file = path.join(artifacts, `${String(++shots).padStart(2, '0')}-${label}.png`);
    await page.screenshot({ path: file, fullPage: true });
    return file;
  };
  const cell = (pod: string, cls: string) =>
    page.evaluate(
      (key, c) => document.querySelector(`tr[data-pod="${key}"] .${c}`)?.textContent ?? undefined,
      `${ns}/${podName(pod)}`,
      cls,
    );

  /** What a failed wait on the crash pod last saw: the page's cells, the pod as the kubelet has it, the kubelet's log about it. */
  const crashDiagnostics = async (cells: Record<string, string | undefined>): Promise<string> => {
    const pod = await kubelet.pod('crash').catch((e: unknown) => `(/pods failed: ${(e as Error).message})`);
    const uid = typeof pod === 'object' ? (pod?.metadata.uid ?? '') : '';
    const name = podName('crash');
    const logLines = (await kubelet.logs())
      .split('\n')
      .filter((l) => l.includes(name) || (uid !== '' && l.includes(uid)))
      .slice(-40);
    return [
      `the page's cells when last read: ${JSON.stringify(cells)}`,
      `now ${new Date().toISOString()}; the crash pod from /pods: ${JSON.stringify(typeof pod === 'object' ? pod?.status : pod)}`,
      `the kubelet's last ${logLines.length} log lines about it (${kubelet.logFile}):`,
      ...logLines,
    ].join('\n');
  };

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run 'scripts/runtime-stack.sh install'`);
    cri = await CriInspector.connect();
    await cri.removeNamespace(ns);
    // On every address, so a request from another address can be refused by the page itself.
    kubelet = new KubeletProcess({ extraConfig: ['healthzBindAddress: 0.0.0.0'] });
    await kubelet.start();
    artifacts = await mkdtemp(path.join(kubelet.dir, 'screenshots-'));
    console.log(`node page screenshots: ${artifacts}`);
    await kubelet.writeManifest(
      'web.json',
      manifest('web', 'i=0; while true; do echo "hello from web $i"; i=$((i+1)); sleep 1; done'),
    );
    await kubelet.writeManifest('crash.json', manifest('crash', 'echo crashing; exit 3'));
    await kubelet.writeManifest('done.json', manifest('done', 'echo finished', 'Never'));
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
    });
    // The address root gets from `tskubelet node-page-url`, with the page's token.
    const url = await cli(['node-page-url', `--root-dir=${kubelet.rootDir}`]);
    assert.equal(url.code, 0, url.stderr);
    assert.match(url.stdout, new RegExp(`^${base()}/node/#token=`));
    await page.goto(url.stdout.trim(), { waitUntil: 'domcontentloaded', timeout: 15_000 });
    // A marker that a reload would wipe.
    await page.evaluate(() => Object.assign(window, { __sameDocument: true }));
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await kubelet?.stop();
    await cri?.removeNamespace(ns);
    cri?.close();
    // The screenshots live in the kubelet's folder: keep them by copying when asked for the docs.
    if (process.env.TSKUBELET_UPDATE_DOCS_SCREENSHOT === '1' && shots > 0)
      await copyFile(path.join(artifacts, 'docs.png'), path.join(repoRoot, 'docs/node-page.png'));
    if (process.env.TSKUBELET_KEEP_ARTIFACTS !== '1') await kubelet?.dispose();
    else console.log(`kept: ${kubelet.dir}`);
  });

  test('lists the pods with their phases', async () => {
    await waitFor(
      'web Running and done Completed on the page',
      async () => {
        const web = await cell('web', 'status');
        const done = await cell('done', 'status');
        return web === 'Running' && done === 'Completed';
      },
      30_000,
    );
    const phase = await page.evaluate(
      (key) => document.querySelector<HTMLElement>(`tr[data-pod="${key}"] .status`)?.dataset.phase,
      `${ns}/${podName('done')}`,
    );
    assert.equal(phase, 'Succeeded');
    assert.equal(await cell('web', 'ready'), '1/1');
    assert.equal(await cell('web', 'source'), 'file');
    assert.match((await cell('web', 'ip')) ?? '', /^\d+\.\d+\.\d+\.\d+$/);
    // Static pods have no creationTimestamp: their age runs from the status's startTime.
    for (const name of ['web', 'done']) assert.match((await cell(name, 'age')) ?? '', /^\d+s$/, name);
    console.log(`screenshot: ${await shot('pods')}`);
  });

  test("shows the node's allocatable memory and ephemeral storage in the unit of its capacity", async () => {
    const rows = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLTableRowElement>('#resources tbody tr')].map((r) =>
        [...r.cells].slice(0, 3).map((c) => c.textContent ?? ''),
      ),
    );
    for (const resource of ['memory', 'ephemeral-storage']) {
      const [, capacity, allocatable] = rows.find(([name]) => name === resource) ?? [];
      const unit = /^\d+([A-Za-z]*)$/.exec(capacity ?? '')?.[1];
      assert.ok(unit !== undefined, `${resource} capacity: ${JSON.stringify(rows)}`);
      assert.match(allocatable ?? '', new RegExp(`^\\d+${unit}$`), `${resource}: ${JSON.stringify(rows)}`);
      assert.ok(
        parseInt(allocatable!, 10) <= parseInt(capacity!, 10),
        `${resource}: ${JSON.stringify(rows)}`,
      );
    }
  });

  test('a crash-looping pod shows its restarts and back-off', async () => {
    let lastCells: Record<string, string | undefined> = {};
    const seen = await waitFor(
      'crash in CrashLoopBackOff with restarts and a back-off left',
      async () => {
        const status = await cell('crash', 'status');
        const restarts = await cell('crash', 'restarts');
        const backoff = await cell('crash', 'backoff');
        lastCells = { at: new Date().toISOString(), status, restarts, backoff };
        return status === 'CrashLoopBackOff' && /^[1-9]/.test(restarts ?? '') && /^\d+s$/.test(backoff ?? '')
          ? { restarts, backoff }
          : undefined;
      },
      40_000,
    ).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}\n${await crashDiagnostics(lastCells)}`);
    });
    assert.match(seen.restarts ?? '', /^\d+ \(\d+s ago\)$/);
    console.log(`screenshot: ${await shot('crash-loop')}`);
  });

  test('a new pod appears without a reload', async () => {
    await kubelet.writeManifest('late.json', manifest('late', 'sleep 3600'));
    await waitFor('late on the page', async () => (await cell('late', 'status')) === 'Running', 30_000);
    assert.equal(
      await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument),
      true,
    );
  });

  test("a pod's log tail, events and spec show when it is clicked", async () => {
    await page.click(`tr[data-pod="${ns}/${podName('web')}"]`);
    await waitFor(
      'the log tail of web',
      async () =>
        page.evaluate(() =>
          /hello from web \d+/.test(document.querySelector('[data-log="app"] pre')?.textContent ?? ''),
        ),
      15_000,
    );
    const detail = await page.evaluate(() => ({
      spec: document.getElementById('detail-spec')?.textContent ?? '',
      events: [...document.querySelectorAll('#detail-events tbody tr')].map((r) => r.textContent ?? ''),
    }));
    assert.match(detail.spec, /"containers"/);
    assert.ok(
      detail.events.some((e) => e.includes('Started')),
      detail.events.join('\n'),
    );
    console.log(`screenshot: ${await shot('pod-detail')}`);
    await page.screenshot({ path: path.join(artifacts, 'docs.png') });
    // The events section lists the node's events, newest first.
    const reasons = await page.evaluate(() =>
      [...document.querySelectorAll('#event-table tbody tr td:nth-child(3)')].map((c) => c.textContent),
    );
    assert.ok(reasons.includes('BackOff') || reasons.includes('Started'), reasons.join(','));
  });

  test('carries a strict CSP and no inline script', async () => {
    const res = await rawGet('127.0.0.1', kubelet.healthzPort, '/node/');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-security-policy']), /default-src 'self'/);
    assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc=)[^>]*>/i, 'a script without src');
    assert.doesNotMatch(res.body, /\son[a-z]+\s*=/i, 'an inline event handler');
    assert.doesNotMatch(res.body, /\sstyle\s*=/i, 'an inline style');
    assert.deepEqual(cspViolations, []);
  });

  test('refuses clients not on this machine, and requests naming another host', async (t) => {
    const external = externalAddress();
    if (!external) return t.skip('this machine has no non-loopback IPv4 address to come from');
    const remote = await rawGet(external, kubelet.healthzPort, '/node/api/pods');
    assert.equal(remote.status, 403, remote.body);
    // /healthz itself stays open, as upstream's.
    assert.equal((await rawGet(external, kubelet.healthzPort, '/healthz')).status, 200);
    const rebound = await rawGet('127.0.0.1', kubelet.healthzPort, '/node/', { Host: 'evil.example:80' });
    assert.equal(rebound.status, 403);
  });

  test('tskubelet get pods / describe / events / logs print what kubectl would', async () => {
    const server = `--root-dir=${kubelet.rootDir}`;
    const get = await cli(['get', 'pods', '-n', ns, server]);
    assert.equal(get.code, 0, get.stderr);
    const lines = get.stdout.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
    const row = (n: string) => lines.find((l) => l.startsWith(`${podName(n)} `))?.split(/\s{2,}/);
    assert.deepEqual(row('web')?.slice(1, 4), ['1/1', 'Running', '0']);
    assert.deepEqual(row('done')?.slice(1, 3), ['0/1', 'Completed']);
    assert.match(row('crash')?.[2] ?? '', /^(CrashLoopBackOff|Error)$/);
    assert.match(row('crash')?.[3] ?? '', /^\d+ \(\d+s ago\)$/);

    const describe = await cli(['describe', 'pod', podName('web'), '-n', ns, server]);
    assert.equal(describe.code, 0, describe.stderr);
    assert.match(describe.stdout, /^Name:\s+web-/m);
    assert.match(describe.stdout, /^Namespace:\s+node-page$/m);
    assert.match(describe.stdout, /^Status:\s+Running$/m);
    assert.match(describe.stdout, /^Containers:\n {2}app:\n {4}Container ID:\s+containerd:\/\//m);
    assert.match(describe.stdout, /^ {4}State:\s+Running$/m);
    assert.match(describe.stdout, /^Events:\n {2}Type\s+Reason\s+Age\s+From\s+Message\n {2}----/m);
    assert.match(describe.stdout, /^ {2}Normal\s+Started\s+\S+\s+kubelet\s+Started container app$/m);

    const events = await cli(['events', '-n', ns, server]);
    assert.equal(events.code, 0, events.stderr);
    assert.match(events.stdout, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/m);
    assert.match(
      events.stdout,
      new RegExp(`Warning\\s+BackOff\\s+pod/${podName('crash')}\\s+Back-off restarting failed container`),
    );

    const logs = await cli(['logs', podName('web'), '-n', ns, '--tail=2', server]);
    assert.equal(logs.code, 0, logs.stderr);
    assert.match(logs.stdout, /^hello from web \d+\nhello from web \d+\n$/);

    const missing = await cli(['describe', 'pod', 'nope', '-n', ns, server]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /pod "nope" not found/);
  });
});
