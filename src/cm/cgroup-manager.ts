/**
 * Makes, sets, lists and removes cgroups by name, on cgroup v1 or v2, with either driver's naming
 * (upstream: cgroup_manager_linux.go, with libcontainer's fs/fs2 managers underneath).
 *
 * The systemd driver here only names cgroups as systemd would (nested slices) and writes them
 * through the cgroup file system, as the cgroupfs driver does; it does not ask systemd over D-Bus to
 * make the slice units.
 *
 * A controller that is missing or read-only (some machines lack hugetlb; a container may see a
 * controller read-only) is logged once and left out, rather than failing every pod.
 */
import path from 'node:path';
import { realClock, type Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { CgroupError } from './cgroup-error.js';
import { errnoCode, realCgroupFs, type CgroupFs } from './cgroup-fs.js';
import { cgroupNameToDriverPath, type CgroupDriver, type CgroupName } from './cgroup-name.js';
import type { CgroupSubsystems, CgroupV1Hierarchy } from './cgroup-subsystems.js';
import { cpuSharesToWeight, hugePageUnitSize, type ResourceConfig } from './resource-config.js';

const log = logger('cgroup_manager');

/** v1 controllers the kubelet needs; a machine without one runs pods without its limits. */
const REQUIRED_V1 = ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids'];
/** v1 hierarchies the kubelet uses where present (upstream's Exists checks these too). */
const OPTIONAL_V1 = ['hugetlb', 'name=systemd'];
/** cgroup v2 controllers the kubelet uses (upstream: getSupportedUnifiedControllers). */
const SUPPORTED_V2 = ['cpu', 'cpuset', 'memory', 'hugetlb', 'pids'];
/** libcontainer retries an rmdir that finds the cgroup busy: the kernel frees a cgroup just after its last task exits. */
const RMDIR_ATTEMPTS = 5;
const RMDIR_FIRST_DELAY_MS = 10;

export type ControllerState = 'ok' | 'missing' | 'read-only';

export interface ControllerStatus {
  /** 'cpu', 'cpu,cpuacct', 'name=systemd'; 'unified' for the v2 tree. */
  name: string;
  mountPoint: string;
  state: ControllerState;
  reason?: string;
}

export interface CgroupManagerOptions {
  subsystems: CgroupSubsystems;
  driver: CgroupDriver;
  fs?: CgroupFs;
  clock?: Clock;
  /** The machine's huge page sizes in bytes (hugetlb's files are per size); default none. */
  hugePageSizesBytes?: readonly number[];
}

/** One place cgroups are made in: a v1 hierarchy, or the v2 tree. */
interface Tree {
  key: string;
  mountPoint: string;
  subsystems: readonly string[];
  /** Failures here fail the call; in other v1 hierarchies (blkio, devices, …) they are ignored. */
  managed: boolean;
  state: ControllerState;
  reason?: string;
}

export interface DestroyResult {
  /** True when no directory of the cgroup is left in any hierarchy. */
  removed: boolean;
  /** Directories still there (a task still in them, usually). */
  busy: string[];
}

export class CgroupManager {
  readonly driver: CgroupDriver;
  readonly version: 'v1' | 'v2';
  private readonly fs: CgroupFs;
  private readonly clock: Clock;
  private readonly trees: Tree[];
  private readonly missing: ControllerStatus[] = [];
  private readonly hugePageSizesBytes: readonly number[];
  /** v2: the controllers both the kubelet uses and the root offers. */
  private readonly v2Controllers: readonly string[];
  private readonly loggedOnce = new Set<string>();

  constructor(opts: CgroupManagerOptions) {
    this.driver = opts.driver;
    this.version = opts.subsystems.version;
    this.fs = opts.fs ?? realCgroupFs();
    this.clock = opts.clock ?? realClock;
    this.hugePageSizesBytes = opts.hugePageSizesBytes ?? [];
    const s = opts.subsystems;
    if (s.version === 'v2') {
      this.trees = [
        { key: 'unified', mountPoint: s.root, subsystems: s.controllers, managed: true, state: 'ok' },
      ];
      this.v2Controllers = SUPPORTED_V2.filter((c) => s.controllers.includes(c));
      for (const c of SUPPORTED_V2) {
        if (!s.controllers.includes(c)) this.missing.push(missingController(c, s.root));
      }
    } else {
      this.v2Controllers = [];
      this.trees = s.hierarchies.map((h) => v1Tree(h));
      // Made and removed like blkio or devices, never written to: limits live in the v1 hierarchies.
      if (s.hybridUnified) {
        this.trees.push({
          key: 'unified',
          mountPoint: s.hybridUnified,
          subsystems: [],
          managed: false,
          state: 'ok',
        });
      }
      const mounted = new Set(s.hierarchies.flatMap((h) => h.subsystems));
      for (const c of [...REQUIRED_V1, 'hugetlb']) {
        if (!mounted.has(c)) this.missing.push(missingController(c, s.root));
      }
    }
    for (const m of this.missing) {
      // Only the required ones are worth a warning; hugetlb is often not built in.
      const required = this.version === 'v1' ? REQUIRED_V1.includes(m.name) : m.name !== 'hugetlb';
      if (required)
        log.warn('Cgroup controller is missing: pods run without its limits', { controller: m.name });
      else log.v(2, 'Optional cgroup controller is missing', { controller: m.name });
    }
  }

  /** The driver's literal form of name. */
  name(name: CgroupName): string {
    return cgroupNameToDriverPath(name, this.driver);
  }

  /** Every hierarchy and controller, with what became of it. */
  controllers(): ControllerStatus[] {
    return [
      ...this.trees.map((t) => ({
        name: t.key,
        mountPoint: t.mountPoint,
        state: t.state,
        ...(t.reason ? { reason: t.reason } : {}),
      })),
      ...this.missing,
    ];
  }

  /** True when some managed controller can be used. */
  usable(): boolean {
    return this.trees.some((t) => t.managed && t.state === 'ok');
  }

  /** True when the cgroup is in every controller the kubelet checks (upstream: Exists). */
  async exists(name: CgroupName): Promise<boolean> {
    const literal = this.name(name);
    if (this.version === 'v2') {
      const tree = this.trees[0]!;
      const dir = path.join(tree.mountPoint, literal);
      let enabled: string[];
      try {
        enabled = (await this.fs.readFile(path.join(dir, 'cgroup.controllers'))).trim().split(/\s+/);
      } catch {
        return false;
      }
      // A cgroup whose parent does not hand it the controllers cannot hold the pod's limits.
      return this.v2Controllers.every((c) => enabled.includes(c));
    }
    for (const t of this.trees) {
      if (!t.managed || t.state !== 'ok') continue;
      if (!(await this.fs.exists(path.join(t.mountPoint, literal)))) return false;
    }
    return true;
  }

  /**
   * Whether a cgroup exists() found whole is still in the first hierarchy the kubelet manages: a
   * cgroup removed whole is gone from that one too, though one taken out of other hierarchies only
   * is not noticed (the caller does a full exists() now and then). On v1, one stat where exists()
   * makes one per hierarchy; on v2 exists() reads one file anyway.
   */
  async stillExists(name: CgroupName): Promise<boolean> {
    const tree = this.trees.find((t) => t.managed && t.state === 'ok');
    if (this.version === 'v2' || !tree) return this.exists(name);
    return this.fs.exists(path.join(tree.mountPoint, this.name(name)));
  }

  /** Makes the cgroup (and its parents) in every hierarchy, then sets its resources (upstream: Create). */
  async create(name: CgroupName, resources: ResourceConfig = {}): Promise<string[]> {
    const literal = this.name(name);
    const created: string[] = [];
    for (const t of this.trees) {
      if (t.state !== 'ok') continue;
      try {
        created.push(...(await this.makePath(t, literal)));
      } catch (err) {
        this.fail(t, `mkdir ${path.join(t.mountPoint, literal)}`, err);
      }
    }
    await this.update(name, resources);
    return created;
  }

  /** Writes the resources into the cgroup's files (upstream: Update, libcontainer's Set). */
  async update(name: CgroupName, r: ResourceConfig): Promise<void> {
    const literal = this.name(name);
    if (this.version === 'v2') {
      await this.setV2(this.trees[0]!, path.join(this.trees[0]!.mountPoint, literal), r);
      return;
    }
    for (const t of this.trees) {
      if (t.state !== 'ok' || !t.managed) continue;
      const dir = path.join(t.mountPoint, literal);
      if (t.subsystems.includes('cpu')) await this.setCpuV1(t, dir, r);
      if (t.subsystems.includes('memory') && r.memoryBytes !== undefined && r.memoryBytes !== 0n) {
        await this.write(t, dir, 'memory.limit_in_bytes', r.memoryBytes.toString());
      }
      if (t.subsystems.includes('pids') && r.pidsLimit !== undefined && r.pidsLimit !== 0) {
        await this.write(t, dir, 'pids.max', r.pidsLimit > 0 ? String(r.pidsLimit) : 'max');
      }
      if (t.subsystems.includes('hugetlb')) {
        for (const [unit, limit] of this.hugetlbLimits(r)) {
          await this.write(t, dir, `hugetlb.${unit}.limit_in_bytes`, limit.toString());
        }
      }
    }
  }

  /**
   * Removes the cgroup and any child cgroups left in it, in every hierarchy. A cgroup that still
   * has tasks stays (and is reported busy), to be tried again later.
   */
  async destroy(name: CgroupName): Promise<DestroyResult> {
    const literal = this.name(name);
    const busy: string[] = [];
    for (const t of this.trees) {
      const dir = path.join(t.mountPoint, literal);
      if (dir === t.mountPoint) continue; // never the hierarchy's root
      try {
        await this.removeTree(dir);
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'ENOENT') continue;
        if (code !== 'EBUSY' && code !== 'ENOTEMPTY')
          log.warn('Failed to remove cgroup', { path: dir, err: errorMessage(err) });
        busy.push(dir);
      }
    }
    return { removed: busy.length === 0, busy };
  }

  /** The processes in the cgroup and every cgroup under it, in any hierarchy (upstream: Pids). */
  async pids(name: CgroupName): Promise<number[]> {
    const literal = this.name(name);
    const out = new Set<number>();
    for (const t of this.trees) {
      const dir = path.join(t.mountPoint, literal);
      await this.collectPids(dir, out);
    }
    return [...out].sort((a, b) => a - b);
  }

  /** The names of the cgroup's child cgroups, in the driver's form, over every managed hierarchy. */
  async children(name: CgroupName): Promise<string[]> {
    const literal = this.name(name);
    const out = new Set<string>();
    for (const t of this.trees) {
      if (!t.managed) continue;
      let entries;
      try {
        entries = await this.fs.readdir(path.join(t.mountPoint, literal));
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') continue;
        throw new CgroupError(`cannot list ${path.join(t.mountPoint, literal)}`, { cause: err });
      }
      for (const e of entries) if (e.isDirectoryOrLink) out.add(e.name);
    }
    return [...out].sort();
  }

  /** Whether the cgroup's directory is in any hierarchy at all (a half-removed one counts). */
  async existsAnywhere(name: CgroupName): Promise<boolean> {
    const literal = this.name(name);
    for (const t of this.trees) {
      if (await this.fs.exists(path.join(t.mountPoint, literal))) return true;
    }
    return false;
  }

  // ---- making paths --------------------------------------------------------------------------

  /** mkdir -p, one level at a time so each level gets what it needs; returns the directories it made. */
  private async makePath(t: Tree, literal: string): Promise<string[]> {
    const parts = literal.split('/').filter((p) => p !== '');
    const created: string[] = [];
    // A pod's cgroup is made under parents that nearly always exist (the QoS tiers): on v1, try the
    // cgroup itself first and walk down from the root only when a parent is missing. One mkdir per
    // hierarchy instead of one per level: the walk was the largest share of a pod cgroup's cost. In
    // the cpuset hierarchy a new cgroup takes its parent's CPUs and memory nodes; the walk (which
    // reads both files at every level) is needed only when the parent has none to give.
    if (this.version === 'v1' && parts.length > 1) {
      const dir = path.join(t.mountPoint, ...parts);
      try {
        const made = await this.fs.mkdir(dir);
        if (!t.subsystems.includes('cpuset')) return made ? [dir] : [];
        if (made) {
          created.push(dir);
          if (await this.copyParentCpuset(path.dirname(dir), dir)) return created;
        }
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err;
      }
    }
    let parent = t.mountPoint;
    for (const part of parts) {
      const dir = path.join(parent, part);
      if (this.version === 'v2') await this.enableControllers(parent);
      if (await this.fs.mkdir(dir)) created.push(dir);
      // A new v1 cpuset cgroup has no CPUs or memory nodes, and no task can join it until it has.
      if (this.version === 'v1' && t.subsystems.includes('cpuset')) await this.inheritCpuset(parent, dir);
      parent = dir;
    }
    return created;
  }

  /**
   * Gives a cgroup just made its parent's CPUs and memory nodes; false, with nothing written, when
   * the parent has none yet (a parent made by someone else and never filled in).
   */
  private async copyParentCpuset(parent: string, dir: string): Promise<boolean> {
    const cpus = (await this.fs.readFile(path.join(parent, 'cpuset.cpus'))).trim();
    const mems = (await this.fs.readFile(path.join(parent, 'cpuset.mems'))).trim();
    if (cpus === '' || mems === '') return false;
    await this.fs.writeFile(path.join(dir, 'cpuset.cpus'), cpus);
    await this.fs.writeFile(path.join(dir, 'cpuset.mems'), mems);
    return true;
  }

  private async inheritCpuset(parent: string, dir: string): Promise<void> {
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      const own = (await this.fs.readFile(path.join(dir, file))).trim();
      if (own !== '') continue;
      const inherited = (await this.fs.readFile(path.join(parent, file))).trim();
      await this.fs.writeFile(path.join(dir, file), inherited);
    }
  }

  /** Hands dir's children every controller dir has, as libcontainer's fs2 CreateCgroupPath does. */
  private async enableControllers(dir: string): Promise<void> {
    const available = (await this.fs.readFile(path.join(dir, 'cgroup.controllers'))).trim().split(/\s+/);
    const enabled = (await this.fs.readFile(path.join(dir, 'cgroup.subtree_control'))).trim().split(/\s+/);
    const wanted = available.filter((c) => c !== '' && !enabled.includes(c));
    if (wanted.length === 0) return;
    const file = path.join(dir, 'cgroup.subtree_control');
    try {
      await this.fs.writeFile(file, wanted.map((c) => `+${c}`).join(' '));
    } catch {
      // One refused controller fails the whole write; enable the others one by one.
      for (const c of wanted) {
        await this.fs.writeFile(file, `+${c}`).catch((err: unknown) => {
          this.logOnce(`subtree:${c}`, 'Cannot enable a cgroup controller for child cgroups', {
            controller: c,
            path: dir,
            err: errorMessage(err),
          });
        });
      }
    }
  }

  // ---- writing resources ---------------------------------------------------------------------

  /** runc's order: shares, then period and quota, retrying a refused period after the quota. */
  private async setCpuV1(t: Tree, dir: string, r: ResourceConfig): Promise<void> {
    if (r.cpuShares !== undefined && r.cpuShares !== 0)
      await this.write(t, dir, 'cpu.shares', String(r.cpuShares));
    const quota = r.cpuQuotaUs ?? 0;
    const period = r.cpuPeriodUs ?? 0;
    let periodPending = false;
    if (period !== 0) {
      try {
        await this.write(t, dir, 'cpu.cfs_period_us', String(period), { rethrow: true });
      } catch (err) {
        // A period shorter than the current one is refused while the old quota would exceed the
        // parent's; it is accepted once the new quota is in.
        if (errnoCode(err) !== 'EINVAL' || quota === 0) {
          this.fail(t, `write ${period} to ${dir}/cpu.cfs_period_us`, err);
          return;
        }
        periodPending = true;
      }
    }
    if (quota !== 0) {
      await this.write(t, dir, 'cpu.cfs_quota_us', String(quota));
      if (periodPending) await this.write(t, dir, 'cpu.cfs_period_us', String(period));
    }
  }

  private async setV2(t: Tree, dir: string, r: ResourceConfig): Promise<void> {
    if (t.state !== 'ok') return;
    const has = (c: string) => this.v2Controllers.includes(c);
    if (has('cpu')) {
      if (r.cpuShares !== undefined && r.cpuShares !== 0)
        await this.write(t, dir, 'cpu.weight', String(cpuSharesToWeight(r.cpuShares)));
      const quota = r.cpuQuotaUs ?? 0;
      const period = r.cpuPeriodUs ?? 0;
      if (quota !== 0 || period !== 0) {
        let value = quota > 0 ? String(quota) : 'max';
        if (period !== 0) value += ` ${period}`;
        await this.write(t, dir, 'cpu.max', value);
      }
    }
    if (has('memory') && r.memoryBytes !== undefined && r.memoryBytes !== 0n) {
      await this.write(t, dir, 'memory.max', r.memoryBytes < 0n ? 'max' : r.memoryBytes.toString());
    }
    if (has('pids') && r.pidsLimit !== undefined && r.pidsLimit !== 0) {
      await this.write(t, dir, 'pids.max', r.pidsLimit > 0 ? String(r.pidsLimit) : 'max');
    }
    if (has('hugetlb')) {
      for (const [unit, limit] of this.hugetlbLimits(r))
        await this.write(t, dir, `hugetlb.${unit}.max`, limit.toString());
    }
  }

  /** Each of the machine's page sizes: the config's limit, or 0 for a size it leaves out (upstream: maybeSetHugetlb). */
  private hugetlbLimits(r: ResourceConfig): [string, bigint][] {
    if (r.hugePageLimits === undefined) return [];
    const out = new Map<string, bigint>();
    for (const [size, limit] of r.hugePageLimits) out.set(hugePageUnitSize(size), limit);
    for (const size of this.hugePageSizesBytes) {
      const unit = hugePageUnitSize(size);
      if (!out.has(unit)) out.set(unit, 0n);
    }
    return [...out];
  }

  private async write(
    t: Tree,
    dir: string,
    file: string,
    value: string,
    opts: { rethrow?: boolean } = {},
  ): Promise<void> {
    try {
      await this.fs.writeFile(path.join(dir, file), value);
    } catch (err) {
      if (opts.rethrow) throw err;
      this.fail(t, `write ${value} to ${path.join(dir, file)}`, err);
    }
  }

  /**
   * A read-only or forbidden hierarchy is logged once and left out from then on; a missing
   * interface file (a kernel built without that knob) is logged once and skipped; anything else
   * fails the call when the hierarchy is one the kubelet manages.
   */
  private fail(t: Tree, what: string, err: unknown): void {
    const code = errnoCode(err);
    if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') {
      t.state = 'read-only';
      t.reason = `${what}: ${errorMessage(err)}`;
      this.logOnce(`ro:${t.key}`, 'Cgroup controller is not writable: leaving it out', {
        controller: t.key,
        mountPoint: t.mountPoint,
        err: errorMessage(err),
      });
      return;
    }
    if (code === 'ENOENT' && what.startsWith('write')) {
      this.logOnce(`enoent:${t.key}:${path.basename(what)}`, 'Cgroup file is missing: skipping it', {
        controller: t.key,
        what,
      });
      return;
    }
    if (!t.managed) {
      log.v(4, 'Ignoring a failure in a cgroup hierarchy the kubelet does not manage', {
        controller: t.key,
        what,
        err: errorMessage(err),
      });
      return;
    }
    throw new CgroupError(`failed to ${what}: ${errorMessage(err)}`, { cause: err });
  }

  private logOnce(key: string, msg: string, kv: Record<string, unknown>): void {
    if (this.loggedOnce.has(key)) return;
    this.loggedOnce.add(key);
    log.warn(msg, kv);
  }

  // ---- removing and walking ------------------------------------------------------------------

  /** Children first, as libcontainer's RemovePath: a cgroup with child cgroups cannot be removed. */
  private async removeTree(dir: string): Promise<void> {
    let entries;
    try {
      entries = await this.fs.readdir(dir);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return;
      throw err;
    }
    for (const e of entries) if (e.isDirectoryOrLink) await this.removeTree(path.join(dir, e.name));
    let delayMs = RMDIR_FIRST_DELAY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.fs.rmdir(dir);
        return;
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'ENOENT') return;
        if (code !== 'EBUSY' || attempt >= RMDIR_ATTEMPTS) throw err;
      }
      await this.clock.sleep(delayMs);
      delayMs *= 2;
    }
  }

  private async collectPids(dir: string, out: Set<number>): Promise<void> {
    let text: string;
    try {
      text = await this.fs.readFile(path.join(dir, 'cgroup.procs'));
    } catch {
      return; // gone, or not a cgroup: nothing charged to it
    }
    for (const line of text.split('\n')) {
      const pid = Number.parseInt(line, 10);
      if (Number.isInteger(pid) && pid > 0) out.add(pid);
    }
    let entries;
    try {
      entries = await this.fs.readdir(dir);
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectoryOrLink) await this.collectPids(path.join(dir, e.name), out);
  }
}

function v1Tree(h: CgroupV1Hierarchy): Tree {
  const managed = h.subsystems.some((s) => REQUIRED_V1.includes(s) || OPTIONAL_V1.includes(s));
  return {
    key: h.subsystems.join(','),
    mountPoint: h.mountPoint,
    subsystems: h.subsystems,
    managed,
    state: 'ok',
  };
}

function missingController(name: string, root: string): ControllerStatus {
  return { name, mountPoint: root, state: 'missing', reason: 'not mounted or not offered by the kernel' };
}
