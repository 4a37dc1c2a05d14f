/**
 * --kubelet-cgroups: the kubelet moves itself into that cgroup, making it, in every hierarchy
 * (upstream: the container manager's system container for the kubelet, whose ensureStateFunc is
 * ensureProcessInContainerWithOOMScore, run at start and every minute). Upstream uses a cgroupfs
 * manager for it whatever the cgroup driver, so the name is a cgroupfs path under each mount.
 */
import { readlink } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { realCgroupFs, type CgroupFs } from './cgroup-fs.js';
import { CgroupManager } from './cgroup-manager.js';
import { parseCgroupfsToCgroupName } from './cgroup-name.js';
import {
  DEFAULT_CGROUP_MOUNT_ROOT,
  detectCgroupSubsystems,
  type CgroupSubsystems,
} from './cgroup-subsystems.js';

const log = logger('kubelet');

/** Upstream's period for the system containers' ensure-state functions. */
export const KUBELET_CGROUP_ENSURE_PERIOD_MS = 60_000;

export interface KubeletCgroupOptions {
  /** The kubeletCgroups setting, a cgroupfs path ('/kubelet'). */
  name: string;
  pid?: number;
  fs?: CgroupFs;
  cgroupMountRoot?: string;
  /** Where /proc is; tests point it at a folder of their own. */
  procRoot?: string;
}

/** Every mount the process belongs to a cgroup in: each v1 hierarchy (and a hybrid's cgroup2), or the v2 tree. */
function mountPoints(s: CgroupSubsystems): string[] {
  if (s.version === 'v2') return [s.root];
  return [...s.hierarchies.map((h) => h.mountPoint), ...(s.hybridUnified ? [s.hybridUnified] : [])];
}

/** The process's cgroup as upstream's getContainer reads it: v2's unified path, else name=systemd's, else cpu's. */
function containerOf(procCgroup: string, version: 'v1' | 'v2'): string {
  const bySubsystem = new Map<string, string>();
  for (const line of procCgroup.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const s of m[1]!.split(',')) bySubsystem.set(s, m[2]!);
  }
  const found =
    version === 'v2' ? bySubsystem.get('') : (bySubsystem.get('name=systemd') ?? bySubsystem.get('cpu'));
  if (found === undefined)
    throw new Error(`no ${version === 'v2' ? 'unified' : 'cpu'} cgroup in /proc cgroup file`);
  return found;
}

export class KubeletCgroupEnforcer {
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly opts: KubeletCgroupOptions & { pid: number; fs: CgroupFs; procRoot: string },
    private readonly subsystems: CgroupSubsystems,
  ) {}

  static async create(opts: KubeletCgroupOptions): Promise<KubeletCgroupEnforcer> {
    const fs = opts.fs ?? realCgroupFs();
    const subsystems = await detectCgroupSubsystems(fs, opts.cgroupMountRoot ?? DEFAULT_CGROUP_MOUNT_ROOT);
    const full = { ...opts, fs, pid: opts.pid ?? process.pid, procRoot: opts.procRoot ?? '/proc' };
    return new KubeletCgroupEnforcer(full, subsystems);
  }

  /** Makes the cgroup and moves the process into it when it is elsewhere; rejects with what failed. */
  async ensure(): Promise<void> {
    const { pid, fs, procRoot, name } = this.opts;
    // Upstream leaves a kubelet that runs inside a container where it is.
    if (!(await this.inHostPidNamespace())) {
      log.v(2, 'PID is not running in the host namespace', { pid });
      return;
    }
    const errs: string[] = [];
    let current = '';
    try {
      current = containerOf(await fs.readFile(path.join(procRoot, `${pid}/cgroup`)), this.subsystems.version);
    } catch (err) {
      errs.push(`failed to find container of PID ${pid}: ${errorMessage(err)}`);
    }
    const literal = path.posix.join('/', name);
    if (current !== literal) {
      try {
        await this.apply(literal);
      } catch (err) {
        errs.push(
          `failed to move PID ${pid} (in ${JSON.stringify(current)}) to ${JSON.stringify(literal)}: ${errorMessage(err)}`,
        );
      }
    }
    if (errs.length > 0) throw new Error(errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`);
  }

  /**
   * Upstream compares the /proc/<pid>/ns/pid links of init and the process. Reading init's link
   * needs ptrace rights some hosts deny (EACCES even as root), so NSpid in the process's status
   * answers first: a single pid there means the process is in the pid namespace /proc belongs to,
   * which is init's, the same fact. Kernels before 4.1 have no NSpid: the links are read then.
   */
  private async inHostPidNamespace(): Promise<boolean> {
    const { pid, procRoot, fs } = this.opts;
    const status = await fs.readFile(path.join(procRoot, `${pid}/status`)).catch(() => '');
    const nsPid = /^NSpid:\s*(.*)$/m.exec(status);
    if (nsPid) return nsPid[1]!.trim().split(/\s+/).length === 1;
    const [initNs, ownNs] = await Promise.all([
      readlink(path.join(procRoot, '1/ns/pid')).catch(() => undefined),
      readlink(path.join(procRoot, `${pid}/ns/pid`)).catch(() => undefined),
    ]);
    if (initNs === undefined) throw new Error('failed to find pid namespace of init process');
    if (ownNs === undefined) throw new Error(`failed to find pid namespace of process ${pid}`);
    return initNs === ownNs;
  }

  /** ensure() now and every minute until stop(); failures are logged in upstream's words. */
  async start(): Promise<void> {
    await this.ensureLogged();
    this.timer = setInterval(() => void this.ensureLogged(), KUBELET_CGROUP_ENSURE_PERIOD_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async ensureLogged(): Promise<void> {
    try {
      await this.ensure();
    } catch (err) {
      log.info('Failed to ensure state', { containerName: this.opts.name, err: errorMessage(err) });
    }
  }

  private async apply(literal: string): Promise<void> {
    const { fs, pid } = this.opts;
    // The cgroup manager makes every level, and a v1 cpuset cgroup gets its parent's CPUs, or no task could join.
    const manager = new CgroupManager({ subsystems: this.subsystems, driver: 'cgroupfs', fs });
    await manager.create(parseCgroupfsToCgroupName(literal));
    for (const mount of mountPoints(this.subsystems)) {
      await fs.writeFile(path.join(mount, literal, 'cgroup.procs'), String(pid));
    }
  }
}

/** Starts the enforcer when kubeletCgroups is set; stopped when signal aborts. */
export async function startKubeletCgroupEnforcer(
  name: string,
  signal: AbortSignal,
): Promise<KubeletCgroupEnforcer | undefined> {
  if (name === '') return undefined;
  const enforcer = await KubeletCgroupEnforcer.create({ name });
  await enforcer.start();
  // The kubelet may have been told to stop while the first move ran: no timer may outlive it.
  if (signal.aborted) enforcer.stop();
  else signal.addEventListener('abort', () => enforcer.stop(), { once: true });
  return enforcer;
}
