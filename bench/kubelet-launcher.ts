/**
 * The built kubelet (bin/tskubelet → dist/) as a child process for the density bench, with its own
 * manifest folder, root dir, pod log dir and ports under a temporary folder. Unlike the integration
 * tests' helper it keeps the kubelet's own defaults (verbosity, fileCheckFrequency): the bench
 * measures the kubelet a user runs, not one tuned for tests.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, type WriteStream } from 'node:fs';
import { mkdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pod, PodList } from '../src/api/core-v1.js';
import { sleep } from './report.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// From dist/bench/ the repository is two levels up.
const kubeletBin = [path.join(repoRoot, 'bin/tskubelet'), path.join(repoRoot, '../bin/tskubelet')];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function findKubeletBin(): Promise<string> {
  for (const candidate of kubeletBin) {
    if (
      await readFile(candidate).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  throw new Error(`bin/tskubelet not found near ${repoRoot}`);
}

export interface KubeletLaunchOptions {
  runtimeEndpoint: string;
  nodeName: string;
  /** Extra flags after the ones set here. */
  extraArgs?: string[];
  /** Flags for node itself (`--cpu-prof`, `--trace-gc`), for looking into a figure. */
  nodeArgs?: string[];
}

export class BenchKubelet {
  readonly dir: string;
  readonly manifestDir: string;
  readonly logFile: string;
  readOnlyPort = 0;
  private healthzPort = 0;
  private child: ChildProcess | undefined;
  private logStream: WriteStream | undefined;
  private exited: Promise<void> | undefined;

  constructor(private readonly opts: KubeletLaunchOptions) {
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'tskubelet-bench-'));
    this.manifestDir = path.join(this.dir, 'manifests');
    this.logFile = path.join(this.dir, 'kubelet.log');
  }

  get pid(): number {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error('the kubelet is not running');
    return pid;
  }

  /** Starts the kubelet and waits (bounded) until /healthz and the read-only /pods answer. */
  async start(timeoutMs = 30_000): Promise<void> {
    await mkdir(this.manifestDir, { recursive: true });
    this.healthzPort = await freePort();
    this.readOnlyPort = await freePort();
    const configFile = path.join(this.dir, 'kubelet-config.yaml');
    // podLogsDir has no flag upstream; the rest are flags, as a user would pass them.
    await writeFile(
      configFile,
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        `podLogsDir: ${path.join(this.dir, 'pod-logs')}`,
        '',
      ].join('\n'),
    );
    const args = [
      ...(this.opts.nodeArgs ?? []),
      await findKubeletBin(),
      `--config=${configFile}`,
      `--pod-manifest-path=${this.manifestDir}`,
      `--container-runtime-endpoint=${this.opts.runtimeEndpoint}`,
      `--root-dir=${path.join(this.dir, 'root')}`,
      `--hostname-override=${this.opts.nodeName}`,
      `--healthz-port=${this.healthzPort}`,
      `--read-only-port=${this.readOnlyPort}`,
      ...(this.opts.extraArgs ?? []),
    ];
    this.logStream = createWriteStream(this.logFile, { flags: 'a' });
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.pipe(this.logStream, { end: false });
    child.stderr?.pipe(this.logStream, { end: false });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));

    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(
          `the kubelet exited during start-up (${child.exitCode ?? child.signalCode}): ${await this.tail()}`,
        );
      }
      const healthy = await fetch(`http://127.0.0.1:${this.healthzPort}/healthz`, {
        signal: AbortSignal.timeout(1000),
      }).then(
        (res) => res.status === 200,
        () => false,
      );
      if (
        healthy &&
        (await this.pods().then(
          () => true,
          () => false,
        ))
      )
        return;
      if (Date.now() > deadline)
        throw new Error(`the kubelet did not become healthy within ${timeoutMs} ms: ${await this.tail()}`);
      await sleep(100);
    }
  }

  /** Writes a manifest atomically (the file source never reads half a file); resolves when it is in place. */
  async writeManifest(fileName: string, pod: Pod): Promise<void> {
    const tmp = path.join(this.manifestDir, `.${fileName}.tmp`);
    await writeFile(tmp, JSON.stringify(pod));
    await rename(tmp, path.join(this.manifestDir, fileName));
  }

  async removeManifest(fileName: string): Promise<void> {
    await rm(path.join(this.manifestDir, fileName), { force: true });
  }

  async pods(): Promise<Pod[]> {
    const res = await fetch(`http://127.0.0.1:${this.readOnlyPort}/pods`, {
      signal: AbortSignal.timeout(5000),
    });
    if (res.status !== 200) throw new Error(`/pods answered ${res.status}`);
    return ((await res.json()) as PodList).items;
  }

  isRunning(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGTERM, then SIGKILL after 15 s. Pods keep running, as upstream: the caller removes them. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child && this.isRunning()) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await this.exited;
      clearTimeout(timer);
    }
    this.child = undefined;
    this.logStream?.end();
  }

  /** The last lines of the kubelet's log, for error messages. */
  async tail(lines = 30): Promise<string> {
    const text = await readFile(this.logFile, 'utf8').catch(() => '');
    return text.split('\n').slice(-lines).join('\n');
  }

  /** Stops the kubelet and removes its folder, unless keepDir (to read the log after a failure). */
  async dispose(keepDir = false): Promise<void> {
    await this.stop();
    if (keepDir) return;
    // The kubelet makes its root dir a shared bind mount, and pods' volumes are mounts under it.
    const table = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
    const prefix = `${await realpath(this.dir).catch(() => this.dir)}/`;
    const points = table
      .split('\n')
      .map((line) => line.split(' ')[4] ?? '')
      .filter((p) => p.startsWith(prefix))
      .sort((a, b) => b.length - a.length);
    for (const p of points) {
      await new Promise<void>((resolve) =>
        execFile('umount', ['-l', p], { timeout: 10_000 }, () => resolve()),
      );
    }
    await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
