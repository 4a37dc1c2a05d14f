/**
 * A kubelet joined to the cluster-mode bench's API server as its node: this checkout's tskubelet or
 * the peer (an upstream kubelet, or a tskubelet for an A/B of our own), a fresh process each time, with the settings bench/cluster-density.sh wrote
 * for its side (scripts/conformance/node.sh's, shared with the conformance run), a root dir of its
 * own, in the mount namespace where the private containerd runs. Only one runs at a time.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { unitEnvironment, type KubeletKind } from './kubelet-launcher.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// From dist/bench/ the repository is two levels up.
const kubeletBins = [path.join(repoRoot, 'bin/tskubelet'), path.join(repoRoot, '../bin/tskubelet')];
const STOP_TIMEOUT_MS = 20_000;
const EXEC_TIMEOUT_MS = 30_000;

/** tskubelet: this checkout's; peer: BENCH_PEER_KUBELET, of kind peerKind. */
export type Side = 'tskubelet' | 'peer';

export interface ClusterKubeletOptions {
  side: Side;
  /** The peer's binary (side peer). */
  binary?: string;
  /** How to launch the peer: an upstream kubelet directly, a tskubelet under this node. */
  peerKind?: KubeletKind;
  configFile: string;
  kubeconfig: string;
  nodeName: string;
  runtimeEndpoint: string;
  /** This run's own folder: its root dir and log go there. */
  dir: string;
  /** The mount namespace to run in (a file nsenter takes), if any. */
  mountNs?: string;
  /** Where the pid goes, for the driver's clean-up should the bench itself be killed. */
  pidFile: string;
  extraArgs: string[];
  /** Flags for node itself (a tskubelet only), e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
  nodeArgs: string[];
  /** The node binary that runs a tskubelet (BENCH_PEER_NODE for the peer); the bench's own when unset. */
  node?: string;
  /** Environment variables for this side alone, over everything else (e.g. `UV_USE_IO_URING=1`). */
  env: Record<string, string>;
}

async function exists(file: string): Promise<boolean> {
  return readFile(file).then(
    () => true,
    () => false,
  );
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { timeout: EXEC_TIMEOUT_MS, maxBuffer: 64 << 20 }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    ),
  );
}

export class ClusterKubelet {
  readonly logFile: string;
  private readonly rootDir: string;
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private log: WriteStream | undefined;

  constructor(private readonly opts: ClusterKubeletOptions) {
    this.logFile = path.join(opts.dir, `kubelet-${opts.side}.log`);
    this.rootDir = path.join(opts.dir, 'root');
  }

  get pid(): number {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error('the kubelet is not running');
    return pid;
  }

  isRunning(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    await mkdir(this.rootDir, { recursive: true });
    const o = this.opts;
    const flags = [
      `--config=${o.configFile}`,
      `--kubeconfig=${o.kubeconfig}`,
      `--root-dir=${this.rootDir}`,
      `--hostname-override=${o.nodeName}`,
      `--container-runtime-endpoint=${o.runtimeEndpoint}`,
      ...o.extraArgs,
    ];
    let argv: string[];
    let env: NodeJS.ProcessEnv = process.env;
    if (o.side === 'tskubelet' || o.peerKind === 'tskubelet') {
      let bin = o.side === 'peer' ? o.binary : undefined;
      for (const candidate of kubeletBins) if (!bin && (await exists(candidate))) bin = candidate;
      if (!bin) throw new Error(`bin/tskubelet not found near ${repoRoot}`);
      argv = [o.node ?? process.execPath, ...o.nodeArgs, bin, ...flags];
      // The malloc settings of its systemd unit, as the standalone bench runs it; the bench's own environment wins.
      env = { ...(await unitEnvironment()), ...process.env, ...o.env };
    } else {
      if (!o.binary) throw new Error('the peer side needs BENCH_PEER_KUBELET');
      argv = [o.binary, ...flags];
      env = { ...process.env, ...o.env };
    }
    // nsenter enters the namespace and execs the kubelet: the pid spawned is the kubelet's.
    if (o.mountNs) argv = ['nsenter', `--mount=${o.mountNs}`, '--', ...argv];
    this.log = createWriteStream(this.logFile, { flags: 'a' });
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
    child.stdout?.pipe(this.log, { end: false });
    child.stderr?.pipe(this.log, { end: false });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    if (child.pid !== undefined) await writeFile(o.pidFile, String(child.pid));
  }

  /** SIGTERM, then SIGKILL after a while. Its pods stay: the bench removed them through the API. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child && this.isRunning()) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await this.exited;
      clearTimeout(timer);
    }
    this.child = undefined;
    this.log?.end();
    await rm(this.opts.pidFile, { force: true });
  }

  /** Kills it at once: the bench is going away. */
  kill(): void {
    if (this.isRunning()) this.child?.kill('SIGKILL');
  }

  async tail(lines = 30): Promise<string> {
    const text = await readFile(this.logFile, 'utf8').catch(() => '');
    return text.split('\n').slice(-lines).join('\n');
  }

  /**
   * After stop: unmounts what the kubelet mounted under its root dir (the pods' volumes; in the
   * namespace it ran in, deepest first) and removes the root dir. The log stays, for a failure.
   */
  async removeRootDir(): Promise<void> {
    const ns = this.opts.mountNs ? ['nsenter', `--mount=${this.opts.mountNs}`, '--'] : [];
    const table = await (ns.length
      ? run(ns[0]!, [...ns.slice(1), 'cat', '/proc/self/mountinfo'])
      : readFile('/proc/self/mountinfo', 'utf8'));
    const prefix = `${this.rootDir}/`;
    const points = table
      .split('\n')
      .map((line) => (line.split(' ')[4] ?? '').replace(/\\040/g, ' '))
      .filter((p) => p === this.rootDir || p.startsWith(prefix))
      .sort((a, b) => b.length - a.length);
    for (const p of points) {
      await (ns.length ? run(ns[0]!, [...ns.slice(1), 'umount', '-l', p]) : run('umount', ['-l', p])).catch(
        () => undefined,
      );
    }
    await rm(this.rootDir, { recursive: true, force: true });
  }
}
