/**
 * A kubelet as a child process for the density bench, with its own manifest folder, root dir, pod
 * log dir, cgroup root and ports under a temporary folder: the built tskubelet of this checkout
 * (bin/tskubelet → dist/), another checkout's bin/tskubelet, or an upstream kubelet binary (Go,
 * v1.28–v1.30) in standalone mode. Unlike the integration tests' helper it keeps the kubelet's own
 * defaults (verbosity, fileCheckFrequency): the bench measures the kubelet a user runs, not one
 * tuned for tests.
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

const unitFiles = [
  path.join(repoRoot, 'packaging/systemd/kubelet.service'),
  path.join(repoRoot, '../packaging/systemd/kubelet.service'),
];

/** The environment the systemd unit gives the kubelet (its `Environment=` lines), as the bench runs it. */
export async function unitEnvironment(): Promise<Record<string, string>> {
  for (const file of unitFiles) {
    const text = await readFile(file, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const env: Record<string, string> = {};
    for (const line of text.split('\n')) {
      if (!line.startsWith('Environment=')) continue;
      for (const pair of line.slice('Environment='.length).trim().split(/\s+/)) {
        const eq = pair.indexOf('=');
        if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
      }
    }
    return env;
  }
  throw new Error(`packaging/systemd/kubelet.service not found near ${repoRoot}`);
}

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

/** Which kubelet a binary is: ours (a Node.js script) or upstream's (a Go binary). */
export type KubeletKind = 'tskubelet' | 'upstream';

export interface KubeletIdentity {
  kind: KubeletKind;
  /** What `--version` printed, e.g. `Kubernetes v1.30.2` (upstream) or `Kubernetes v1.30.0+tskubelet.0.1.0`. */
  version: string;
  /** The Kubernetes minor version it reports (30 for v1.30.2), NaN if it printed none. */
  minor: number;
}

/**
 * Runs `binary --version`. tskubelet prints upstream's form with `+tskubelet.<release>` as build
 * metadata; a plain `Kubernetes v1.x.y` is upstream's. kindOverride (BENCH_PEER_KIND) wins.
 */
export async function identifyKubelet(binary: string, kindOverride?: string): Promise<KubeletIdentity> {
  const version = await new Promise<string>((resolve, reject) =>
    execFile(binary, ['--version'], { timeout: 30_000 }, (err, stdout, stderr) =>
      err
        ? reject(new Error(`${binary} --version failed: ${err.message}`))
        : resolve(`${stdout}${stderr}`.trim()),
    ),
  );
  const minor = Number(/v1\.(\d+)\./.exec(version)?.[1] ?? NaN);
  let kind: KubeletKind = version.includes('tskubelet') ? 'tskubelet' : 'upstream';
  if (kindOverride) {
    if (kindOverride !== 'tskubelet' && kindOverride !== 'upstream')
      throw new Error(`BENCH_PEER_KIND must be tskubelet or upstream, got ${kindOverride}`);
    kind = kindOverride;
  }
  return { kind, version, minor };
}

export interface KubeletLaunchOptions {
  runtimeEndpoint: string;
  nodeName: string;
  /** The kubelet's executable; bin/tskubelet of this checkout when not given. */
  binary?: string;
  /** How to launch binary (what identifyKubelet found); 'tskubelet' when not given. */
  kind?: KubeletKind;
  /** For an upstream kubelet: its minor version, for the fields it accepts (podLogsDir from 1.30). */
  minor?: number;
  /** A cgroup root that exists (BenchCgroupRoot): the kubelet's pods go under it. */
  cgroupRoot?: string;
  /** The runtime's cgroup driver (runtime-stack.sh's containerd: cgroupfs). */
  cgroupDriver?: 'cgroupfs' | 'systemd';
  /** Extra flags after the ones set here. */
  extraArgs?: string[];
  /** Flags for node itself (`--cpu-prof`, `--trace-gc`), for looking into a figure; tskubelet only. */
  nodeArgs?: string[];
  /** Environment variables for this kubelet alone, over the bench's own and the unit's (MALLOC_*). */
  env?: Record<string, string>;
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
    const kind = this.opts.kind ?? 'tskubelet';
    const binary = this.opts.binary ?? (await findKubeletBin());
    let command: string;
    let args: string[];
    if (kind === 'tskubelet') {
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
      command = process.execPath;
      args = [
        ...(this.opts.nodeArgs ?? []),
        binary,
        `--config=${configFile}`,
        `--pod-manifest-path=${this.manifestDir}`,
        `--container-runtime-endpoint=${this.opts.runtimeEndpoint}`,
        `--root-dir=${path.join(this.dir, 'root')}`,
        `--hostname-override=${this.opts.nodeName}`,
        `--healthz-port=${this.healthzPort}`,
        `--read-only-port=${this.readOnlyPort}`,
        ...(this.opts.cgroupRoot ? [`--cgroup-root=${this.opts.cgroupRoot}`] : []),
      ];
    } else {
      await writeFile(configFile, await this.upstreamConfig());
      command = binary;
      // --root-dir and --hostname-override have no config field; the rest is in the file.
      args = [
        `--config=${configFile}`,
        `--root-dir=${path.join(this.dir, 'root')}`,
        `--hostname-override=${this.opts.nodeName}`,
      ];
    }
    args.push(...(this.opts.extraArgs ?? []));
    this.logStream = createWriteStream(this.logFile, { flags: 'a' });
    // tskubelet runs with the malloc settings its systemd unit sets (packaging/systemd/kubelet.service).
    // The bench's own environment wins, so that a figure can be taken without them.
    const env = {
      ...(kind === 'tskubelet' ? await unitEnvironment() : {}),
      ...process.env,
      ...this.opts.env,
    };
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
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

  /**
   * A KubeletConfiguration that an upstream kubelet v1.28–v1.30 accepts in standalone mode (no
   * --kubeconfig: no API server, static pods only). Untested here: no upstream binary on the
   * machine this was written on.
   */
  private async upstreamConfig(): Promise<string> {
    // The authenticated server wants a port of its own: 10250 may be another kubelet's.
    const serverPort = await freePort();
    const minor = this.opts.minor ?? NaN;
    const lines = [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `staticPodPath: ${this.manifestDir}`,
      `containerRuntimeEndpoint: ${this.opts.runtimeEndpoint}`,
      'address: 127.0.0.1',
      `port: ${serverPort}`,
      `readOnlyPort: ${this.readOnlyPort}`,
      'healthzBindAddress: 127.0.0.1',
      `healthzPort: ${this.healthzPort}`,
      `cgroupDriver: ${this.opts.cgroupDriver ?? 'cgroupfs'}`,
      ...(this.opts.cgroupRoot ? [`cgroupRoot: ${this.opts.cgroupRoot}`] : []),
      'failSwapOn: false',
      // Allocatable enforcement would resize the bench's cgroup root's kubepods: not what is measured.
      'enforceNodeAllocatable: ["none"]',
      // Without an API server there is no client for webhook authentication or authorization, and
      // the kubelet refuses to start with them (its defaults); the bench only reads the read-only port.
      'authentication:',
      '  anonymous:',
      '    enabled: true',
      '  webhook:',
      '    enabled: false',
      'authorization:',
      '  mode: AlwaysAllow',
      // Keep the host's iptables as they are.
      'makeIPTablesUtilChains: false',
      // podLogsDir is a field from v1.30 on; older kubelets write pod logs under /var/log/pods.
      ...(minor >= 30 ? [`podLogsDir: ${path.join(this.dir, 'pod-logs')}`] : []),
      '',
    ];
    return lines.join('\n');
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
