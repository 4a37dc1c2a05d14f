/**
 * Runs the built kubelet (bin/tskubelet → dist/) as a child process for integration tests,
 * each with its own manifest folder, root dir, log dir and ports under a temporary folder.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, type WriteStream } from 'node:fs';
import { mkdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pod, PodList } from '../../src/api/core-v1.js';
import { freePort } from './ports.js';
import { waitFor } from './wait.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A developer's second stack (scripts/runtime-stack.sh overrides) rather than the default one CI uses. */
const privateStack = (process.env.TSKUBELET_STACK_BRIDGE ?? 'tskube0') !== 'tskube0';

export const runtimeEndpoint =
  process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock';

export interface KubeletOptions {
  /** Extra flags, after the ones this helper sets. */
  extraArgs?: string[];
  /** Extra lines of the KubeletConfiguration file (YAML), for fields without a flag. */
  extraConfig?: string[];
  nodeName?: string;
  /** Extra environment (DBUS_SYSTEM_BUS_ADDRESS for a test's own bus). */
  env?: Record<string, string>;
  /**
   * Run without a --config file, to meet the defaults a user without one gets: the test's settings
   * go to a --config-dir drop-in instead, and no read-only port is set (KubeletProcess.pods needs one).
   */
  noConfigFile?: boolean;
}

export class KubeletProcess {
  readonly dir: string;
  readonly manifestDir: string;
  readonly rootDir: string;
  readonly podLogsDir: string;
  readonly logFile: string;
  readonly nodeName: string;
  private child: ChildProcess | undefined;
  private logStream: WriteStream | undefined;
  private exited: Promise<number | null> | undefined;
  healthzPort = 0;
  readOnlyPort = 0;

  constructor(private opts: KubeletOptions = {}) {
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'tskubelet-it-'));
    this.manifestDir = path.join(this.dir, 'manifests');
    this.rootDir = path.join(this.dir, 'root');
    this.podLogsDir = path.join(this.dir, 'pods-logs');
    this.logFile = path.join(this.dir, 'kubelet.log');
    this.nodeName = opts.nodeName ?? `it-node-${process.pid}`;
  }

  /** Starts the kubelet and waits (bounded) until /healthz answers. */
  async start(): Promise<void> {
    await mkdir(this.manifestDir, { recursive: true });
    if (!this.healthzPort) this.healthzPort = await freePort();
    const noConfigFile = this.opts.noConfigFile === true;
    if (!this.readOnlyPort && !noConfigFile) this.readOnlyPort = await freePort();
    // The config file carries what has no flag upstream (podLogsDir); flags carry the rest.
    const configFile = noConfigFile
      ? path.join(this.dir, 'kubelet.conf.d', '50-test.conf')
      : path.join(this.dir, 'kubelet-config.yaml');
    await mkdir(path.dirname(configFile), { recursive: true });
    await writeFile(
      configFile,
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        `staticPodPath: ${this.manifestDir}`,
        `podLogsDir: ${this.podLogsDir}`,
        `healthzPort: ${this.healthzPort}`,
        ...(noConfigFile ? [] : [`readOnlyPort: ${this.readOnlyPort}`]),
        'fileCheckFrequency: 2s',
        // Kubelets on a second stack share this machine's cgroup tree with the first: each would
        // clean up the others' pod cgroups as orphans (killing their processes), so only the
        // default stack's kubelet manages QoS and pod cgroups.
        ...(privateStack ? ['cgroupsPerQOS: false', 'enforceNodeAllocatable: []'] : []),
        ...(this.opts.extraConfig ?? []),
        '',
      ].join('\n'),
    );
    const args = [
      path.join(repoRoot, 'bin/tskubelet'),
      noConfigFile ? `--config-dir=${path.dirname(configFile)}` : `--config=${configFile}`,
      `--container-runtime-endpoint=${runtimeEndpoint}`,
      `--root-dir=${this.rootDir}`,
      `--hostname-override=${this.nodeName}`,
      '--v=2',
      ...(this.opts.extraArgs ?? []),
    ];
    this.logStream = createWriteStream(this.logFile, { flags: 'a' });
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...this.opts.env },
    });
    child.stdout?.pipe(this.logStream, { end: false });
    child.stderr?.pipe(this.logStream, { end: false });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor(
      'the kubelet to answer /healthz',
      async () => {
        if (child.exitCode !== null)
          throw new Error(`kubelet exited with ${child.exitCode}: ${await this.logs()}`);
        const res = await fetch(`http://127.0.0.1:${this.healthzPort}/healthz`, {
          signal: AbortSignal.timeout(1000),
        });
        return res.status === 200;
      },
      20_000,
    );
  }

  /** Stops the kubelet: SIGTERM (or SIGKILL to simulate a crash), bounded. Pods keep running, as upstream. Resolves to the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const code = await this.exited;
    clearTimeout(timer);
    this.child = undefined;
    return code ?? null;
  }

  /** Replaces the extra config lines the next start() writes (a restart with other settings). */
  setExtraConfig(lines: string[]): void {
    this.opts = { ...this.opts, extraConfig: lines };
  }

  /** Sends a signal and returns at once (see stop to wait for the exit). */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** The kubelet process's id, while it runs. */
  get pid(): number | undefined {
    return this.isRunning() ? this.child?.pid : undefined;
  }

  isRunning(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async writeManifest(fileName: string, pod: Pod | string): Promise<void> {
    const text = typeof pod === 'string' ? pod : JSON.stringify(pod, null, 2);
    // Write then rename, so the file source never reads half a file.
    const tmp = path.join(this.manifestDir, `.${fileName}.tmp`);
    await writeFile(tmp, text);
    await import('node:fs/promises').then((fs) => fs.rename(tmp, path.join(this.manifestDir, fileName)));
  }

  async removeManifest(fileName: string): Promise<void> {
    await rm(path.join(this.manifestDir, fileName), { force: true });
  }

  async pods(): Promise<Pod[]> {
    const res = await fetch(`http://127.0.0.1:${this.readOnlyPort}/pods`, {
      signal: AbortSignal.timeout(2000),
    });
    if (res.status !== 200) throw new Error(`/pods answered ${res.status}`);
    return ((await res.json()) as PodList).items;
  }

  /** The pod named `<name>-<node>` as /pods shows it, or undefined. */
  async pod(name: string): Promise<Pod | undefined> {
    return (await this.pods()).find((p) => p.metadata.name === `${name}-${this.nodeName}`);
  }

  async logs(): Promise<string> {
    return readFile(this.logFile, 'utf8').catch(() => '');
  }

  /** Stops the kubelet and removes its temporary folder (not the pods: see cleanupPods in cri-inspect). */
  async dispose(): Promise<void> {
    await this.stop('SIGKILL');
    this.logStream?.end();
    await unmountUnder(this.dir);
    await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * A kubelet leaves mounts behind under its folder (its root dir, bind-mounted on itself; when killed,
 * the tmpfs of secrets and tokens and subPath binds): unmount everything under dir, deepest first,
 * lazily so a mount still busy does not stay.
 */
export async function unmountUnder(dir: string): Promise<void> {
  const table = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const prefix = `${await realpath(dir).catch(() => dir)}/`;
  const points = table
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((p) => p.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
  for (const p of points) {
    await new Promise<void>((resolve) => execFile('umount', ['-l', p], { timeout: 10_000 }, () => resolve()));
  }
}
