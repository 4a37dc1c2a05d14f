/**
 * The volume manager (upstream: pkg/kubelet/volumemanager): what each pod's volumes should be
 * (desired state), what is set up on disk (actual state), and the reconciler that makes the one
 * the other, one operation per volume at a time with exponential back-off.
 *
 * - syncPod awaits waitForAttachAndMount(pod) before the containers start: it adds the pod to the
 *   desired state (resolving claims to their PersistentVolumes), asks the API data volumes to be
 *   refreshed (configMaps, secrets, tokens: upstream's remount on each sync), and waits, bounded,
 *   until every volume a container mounts is set up.
 * - The runtime manager's volumeMounts option is getMounts(pod, container): the CRI mounts, with
 *   subPaths resolved safely and bind-mounted under the pod's `volume-subpaths`.
 * - syncTerminatedPod calls unmountAndCleanup(uid); housekeeping calls cleanupOrphanedPodDirs.
 * - After a restart, start() reads back from disk what is set up, so cleanup finds it; a pod's
 *   volumes are set up again (idempotently: an emptyDir keeps its content) on its first sync.
 *
 * Failures read as upstream's: a `FailedMount` event `MountVolume.SetUp failed for volume "x" : …`
 * per failed attempt, and from syncPod `unmounted volumes=[…], unattached volumes=[…], failed to
 * process volumes=[…]: …`.
 */
import { mkdir, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Container, Pod, VolumeMount } from '../api/core-v1.js';
import type { Mount } from '../cri/types.js';
import { makeEnvironmentVariables } from '../kuberuntime/container-env.js';
import { discardEvents, type EventRecorder } from '../kuberuntime/event-recorder.js';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { ConfigMapPlugin } from './configmap.js';
import { CsiDriversStore } from './csi/csi-drivers-store.js';
import { ApiCsiObjectSource } from './csi/csi-objects.js';
import { CsiPlugin } from './csi/csi-plugin.js';
import { DownwardAPIPlugin } from './downward-api.js';
import { EmptyDirPlugin } from './empty-dir.js';
import { HostPathPlugin, validatePathNoBacksteps } from './host-path.js';
import { LocalVolumePlugin } from './local-volume.js';
import { makeRShared, removeAllOneFilesystem, SystemMounter, type Mounter } from './mounter.js';
import { checkNodeAffinity } from './node-affinity.js';
import { ProjectedPlugin } from './projected.js';
import { SecretPlugin } from './secret.js';
import { cleanPodSubPaths, prepareSafeSubpath, safeMakeDir } from './subpath.js';
import { TokenManager } from './token-manager.js';
import { ApiVolumeObjectSource, standaloneObjectSource } from './volume-object-source.js';
import { fsUserFrom } from './volume-ownership.js';
import {
  podDir,
  podSubpathsDir,
  podVolumesDir,
  PODS_DIR_NAME,
  subpathBindTarget,
  unescapeQualifiedName,
} from './volume-paths.js';
import { machineAllocatable, type NodeAllocatable } from '../api/node.js';
import type { VolumeAttributes, VolumeHost, VolumePlugin, VolumeSpec } from './volume-plugin.js';
import type { PodVolume } from './volume-types.js';
import { configError, expandSubPathExpr, translateMountPropagation } from './mount-translation.js';

export { expandSubPathExpr } from './mount-translation.js';

const log = logger('volume');

export {
  DEFAULT_MOUNT_TIMEOUT_MS,
  DEFAULT_OBJECT_CACHE_TTL_MS,
  expectedVolumes,
  VolumeEventReason,
  VolumeMountError,
  type VolumeManager,
  type VolumeManagerOptions,
} from './volume-manager-api.js';
import {
  DEFAULT_MOUNT_TIMEOUT_MS,
  DEFAULT_OBJECT_CACHE_TTL_MS,
  expectedVolumes,
  VolumeEventReason,
  VolumeMountError,
  type VolumeManager,
  type VolumeManagerOptions,
} from './volume-manager-api.js';
import { podRef } from '../kuberuntime/format.js';

/** upstream's operation back-off: 500 ms doubling to 2 min 2 s. */
const INITIAL_RETRY_MS = 500;
const MAX_RETRY_MS = 122_000;

interface DesiredVolume {
  /** The pod's name for it (upstream: OuterVolumeSpecName). */
  outerName: string;
  spec: VolumeSpec;
  plugin: VolumePlugin;
}

interface DesiredPod {
  pod: Pod;
  volumes: Map<string, DesiredVolume>;
  /** Volumes that could not be resolved (a claim not bound, no plugin), by name. */
  errors: Map<string, string>;
  /** Cancels this pod's operations when it goes. */
  abort: AbortController;
}

interface MountedVolume {
  outerName: string;
  pluginName: string;
  path: string;
  attributes: VolumeAttributes;
  /** Set up (or checked) by this run of the kubelet; false for what start() found on disk. */
  setUpThisRun: boolean;
  remountRequired: boolean;
}

interface RetryState {
  delayMs: number;
  retryAtMs: number;
  timer?: TimerHandle;
}

/** Go's %v of a []string: `[a b]`. */
function goList(items: string[]): string {
  return `[${items.join(' ')}]`;
}

export class VolumeManagerImpl implements VolumeManager {
  private readonly rootDir: string;
  private readonly clock: Clock;
  private readonly mounter: Mounter;
  private readonly recorder: EventRecorder;
  private readonly host: VolumeHost;
  private readonly plugins: VolumePlugin[];
  private readonly mountTimeoutMs: number;
  private readonly desired = new Map<string, DesiredPod>();
  private readonly actual = new Map<string, Map<string, MountedVolume>>();
  /** The operation under way per `<uid>/<volume>`. */
  private readonly operations = new Map<string, Promise<void>>();
  private readonly retries = new Map<string, RetryState>();
  /**
   * Per pod UID, the waiters for a change of that pod's mounts: a mount finishing wakes its own pod's
   * waiter only, where one list for all had each of 100 pods starting at once re-check and re-arm its
   * wait on every other pod's mount.
   */
  private readonly listeners = new Map<string, Set<() => void>>();
  private readonly stopController = new AbortController();
  /** Orphans whose cleanup failed once: later failures are logged quietly. */
  private readonly orphanWarned = new Set<string>();
  private selinuxEnabled: boolean | undefined;

  constructor(private readonly opts: VolumeManagerOptions) {
    this.rootDir = opts.rootDir;
    this.clock = opts.clock ?? realClock;
    this.mounter = opts.mounter ?? new SystemMounter();
    this.recorder = opts.recorder ?? discardEvents;
    this.mountTimeoutMs = opts.mountTimeoutMs ?? DEFAULT_MOUNT_TIMEOUT_MS;
    this.selinuxEnabled = opts.selinuxEnabled;
    const objects =
      opts.objects ??
      (opts.client
        ? new ApiVolumeObjectSource({
            client: opts.client,
            clock: this.clock,
            strategy: opts.objectChangeDetection,
            watchIdleMs: 5 * (opts.objectCacheTtlMs ?? DEFAULT_OBJECT_CACHE_TTL_MS),
          })
        : standaloneObjectSource);
    const given = opts.nodeAllocatable;
    const machine = machineAllocatable();
    this.host = {
      rootDir: this.rootDir,
      nodeName: opts.nodeName,
      clock: this.clock,
      mounter: this.mounter,
      objects,
      tokens:
        opts.tokenManager ??
        new TokenManager({
          clock: this.clock,
          getToken: (ns, name, tr, signal) => objects.createToken(ns, name, tr, { signal }),
        }),
      get nodeAllocatable(): NodeAllocatable {
        return (typeof given === 'function' ? given() : given) ?? machine;
      },
      objectCacheTtlMs: opts.objectCacheTtlMs ?? DEFAULT_OBJECT_CACHE_TTL_MS,
    };
    this.plugins = [
      new EmptyDirPlugin(this.host),
      new HostPathPlugin(this.host),
      new ConfigMapPlugin(this.host),
      new SecretPlugin(this.host),
      new DownwardAPIPlugin(this.host),
      new ProjectedPlugin(this.host),
      new LocalVolumePlugin(this.host),
      new CsiPlugin(this.host, {
        drivers: opts.csiDrivers ?? new CsiDriversStore(),
        objects: opts.csiObjects ?? (opts.client ? new ApiCsiObjectSource(opts.client) : undefined),
      }),
    ];
  }

  // ---- start and stop ------------------------------------------------------------------------------

  async start(): Promise<void> {
    if (this.opts.makeRootDirShared !== false) {
      // HostToContainer and Bidirectional need the volumes on a shared mount (upstream: MakeRShared
      // in setupDataDirs). Done before this run mounts anything, as upstream, so the bind does not
      // hide mounts made earlier under it.
      try {
        await mkdir(this.rootDir, { recursive: true, mode: 0o750 });
        await makeRShared(this.mounter, this.rootDir);
      } catch (err) {
        log.error('Failed to make the root directory a shared mount; mount propagation will fail', {
          path: this.rootDir,
          err: errorMessage(err),
        });
      }
    }
    if (this.selinuxEnabled === undefined) {
      this.selinuxEnabled = await stat('/sys/fs/selinux/enforce').then(
        () => true,
        () => false,
      );
    }
    let count = 0;
    for (const uid of await this.podUidsOnDisk()) {
      for (const v of await this.volumesOnDisk(uid)) {
        this.setActual(uid, {
          outerName: v.name,
          pluginName: v.plugin.name,
          path: v.path,
          attributes: { readOnly: false, managed: true, selinuxRelabel: false },
          setUpThisRun: false,
          remountRequired: false,
        });
        count++;
      }
    }
    if (count > 0) log.info('Reconstructed volumes from disk', { volumes: count, pods: this.actual.size });
  }

  async stop(): Promise<void> {
    this.stopController.abort(new Error('volume manager stopping'));
    for (const r of this.retries.values()) if (r.timer) this.clock.clearTimeout(r.timer);
    // Waiters see the stop and give up.
    this.notify();
    await Promise.allSettled([...this.operations.values()]);
    this.host.objects.stop?.();
    await this.mounter.close?.();
  }

  // ---- desired state -------------------------------------------------------------------------------

  /**
   * Adds the pod (or refreshes its object, for the downward API) and resolves what is not resolved
   * yet: claims to their volumes, volumes to their plugins (upstream: processPodVolumes).
   */
  private async processPod(pod: Pod, signal: AbortSignal | undefined): Promise<DesiredPod> {
    const uid = pod.metadata.uid ?? '';
    let dp = this.desired.get(uid);
    if (!dp) {
      dp = { pod, volumes: new Map(), errors: new Map(), abort: new AbortController() };
      this.desired.set(uid, dp);
    } else {
      dp.pod = pod;
    }
    const used = new Set(expectedVolumes(pod));
    for (const v of (pod.spec.volumes ?? []) as PodVolume[]) {
      // A volume no container mounts is not set up at all, as upstream.
      if (!used.has(v.name)) continue;
      if (dp.volumes.has(v.name)) continue;
      try {
        const spec = await this.createVolumeSpec(pod, v, signal);
        const plugin = this.plugins.find((p) => p.canSupport(spec));
        if (!plugin) {
          throw new Error(
            `failed to get Plugin from volumeSpec for volume "${spec.name}" err=no volume plugin matched`,
          );
        }
        dp.volumes.set(v.name, { outerName: v.name, spec, plugin });
        dp.errors.delete(v.name);
      } catch (err) {
        dp.errors.set(v.name, errorMessage(err));
      }
    }
    for (const name of used) {
      if (!(pod.spec.volumes ?? []).some((v) => v.name === name)) {
        dp.errors.set(
          name,
          `volume "${name}" is mounted by a container but not defined in the pod's volumes`,
        );
      }
    }
    return dp;
  }

  /** A pod's volume as a spec; a claim becomes the PersistentVolume bound to it (upstream: createVolumeSpec). */
  private async createVolumeSpec(
    pod: Pod,
    v: PodVolume,
    signal: AbortSignal | undefined,
  ): Promise<VolumeSpec> {
    const claim = v.persistentVolumeClaim;
    if (!claim) return { name: v.name, volume: v, readOnly: false };
    const ns = pod.metadata.namespace ?? '';
    const fail = (msg: string) => new Error(`error processing PVC ${ns}/${claim.claimName}: ${msg}`);
    let pvc;
    try {
      pvc = await this.host.objects.getPersistentVolumeClaim(ns, claim.claimName, { signal });
    } catch (err) {
      throw fail(`failed to fetch PVC from API server: ${errorMessage(err)}`);
    }
    if (!pvc) {
      throw fail(
        `failed to fetch PVC from API server: persistentvolumeclaims "${claim.claimName}" not found`,
      );
    }
    if (pvc.metadata.deletionTimestamp) throw fail('PVC is being deleted');
    if (pvc.status?.phase !== 'Bound') throw fail('PVC is not bound');
    const pvName = pvc.spec.volumeName ?? '';
    if (pvName === '') throw fail('PVC has empty pvc.Spec.VolumeName');
    let pv;
    try {
      pv = await this.host.objects.getPersistentVolume(pvName, { signal });
    } catch (err) {
      throw fail(`failed to fetch PV ${pvName} from API server: ${errorMessage(err)}`);
    }
    if (!pv)
      throw fail(`failed to fetch PV ${pvName} from API server: persistentvolumes "${pvName}" not found`);
    if (!pv.spec.claimRef) {
      throw fail(
        `found PV object ${pvName} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`,
      );
    }
    if (pv.spec.claimRef.uid !== pvc.metadata.uid) {
      throw fail(
        `found PV object ${pvName} but its pv.Spec.ClaimRef.UID ${pv.spec.claimRef.uid ?? ''} does not point to claim.UID ${pvc.metadata.uid ?? ''}`,
      );
    }
    return { name: pv.metadata.name ?? pvName, persistentVolume: pv, readOnly: claim.readOnly === true };
  }

  // ---- waiting for mounts --------------------------------------------------------------------------

  async waitForAttachAndMount(pod: Pod, signal?: AbortSignal): Promise<void> {
    const expected = expectedVolumes(pod);
    if (expected.length === 0) return;
    const uid = pod.metadata.uid ?? '';
    log.v(3, 'Waiting for volumes to attach and mount for pod', { pod: podRef(pod) });
    const dp = await this.processPod(pod, signal);
    // Volumes that carry API data are refreshed on every sync of the pod (upstream: ReprocessPod).
    for (const v of dp.volumes.values()) {
      const m = this.actual.get(uid)?.get(v.outerName);
      if (m?.setUpThisRun && v.plugin.requiresRemount) m.remountRequired = true;
    }
    this.reconcile(uid);

    const deadlineMs = this.clock.now() + this.mountTimeoutMs;
    let reason: string | undefined;
    let interrupted = true;
    for (;;) {
      if (dp.errors.size > 0) {
        reason = [...dp.errors.values()].join('; ');
        interrupted = false;
        break;
      }
      if (this.unmountedVolumes(uid, expected).length === 0) {
        log.v(3, 'All volumes are attached and mounted for pod', { pod: podRef(pod) });
        return;
      }
      if (signal?.aborted || this.stopController.signal.aborted) {
        reason = 'context canceled';
        break;
      }
      if (this.clock.now() >= deadlineMs) {
        reason = 'context deadline exceeded';
        break;
      }
      await this.changed(uid, deadlineMs, signal);
    }
    const unmounted = this.unmountedVolumes(uid, expected);
    if (unmounted.length === 0) return;
    const notProcessed = expected.filter((n) => !dp.volumes.has(n)).sort();
    const err = new VolumeMountError(
      `unmounted volumes=${goList(unmounted)}, unattached volumes=${goList([])}, failed to process volumes=${goList(notProcessed)}: ${reason}`,
      interrupted,
    );
    if (!interrupted) {
      // upstream's syncPod records this one; here the manager does, so syncPod only has to await.
      this.recorder.event(
        pod,
        '',
        'Warning',
        VolumeEventReason.FailedMountVolume,
        `Unable to attach or mount volumes: ${err.message}`,
      );
    }
    // A wait cut short by the pod's deletion or the kubelet stopping is not worth an error line.
    const kv = { pod: podRef(pod), err: err.message };
    if (interrupted) log.v(2, 'Stopped waiting for volumes to attach and mount', kv);
    else log.error('Unable to attach or mount volumes for pod; skipping pod', kv);
    throw err;
  }

  private unmountedVolumes(uid: string, expected: string[]): string[] {
    const mounted = this.actual.get(uid);
    return expected.filter((n) => !mounted?.get(n)?.setUpThisRun).sort();
  }

  /** Resolves on the next change of the pod's actual state, at deadlineMs, or when signal aborts. */
  private changed(uid: string, deadlineMs: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      let waiters = this.listeners.get(uid);
      if (!waiters) this.listeners.set(uid, (waiters = new Set()));
      const own = waiters;
      const done = () => {
        own.delete(done);
        if (own.size === 0 && this.listeners.get(uid) === own) this.listeners.delete(uid);
        this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = this.clock.setTimeout(done, Math.max(0, deadlineMs - this.clock.now()));
      own.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Wakes the waiters of the pod uid, or of every pod. */
  private notify(uid?: string): void {
    const sets = uid === undefined ? [...this.listeners.values()] : [this.listeners.get(uid)];
    for (const waiters of sets) for (const l of [...(waiters ?? [])]) l();
  }

  // ---- the reconciler ------------------------------------------------------------------------------

  /**
   * Starts a mount for every desired volume not set up (or due a refresh) and not backing off: of
   * the pod onlyUid, or of every pod. A pod's wait passes its own: every other pod's volumes have
   * been started by their own waits or are due a retry timer of their own, and walking all pods at
   * each of 100 pods' first syncs cost a key string per pending volume per pod.
   */
  private reconcile(onlyUid?: string): void {
    if (this.stopController.signal.aborted) return;
    const now = this.clock.now();
    if (onlyUid === undefined) {
      for (const [uid, dp] of this.desired) this.reconcilePod(uid, dp, now);
      return;
    }
    const dp = this.desired.get(onlyUid);
    if (dp) this.reconcilePod(onlyUid, dp, now);
  }

  private reconcilePod(uid: string, dp: DesiredPod, now: number): void {
    for (const v of dp.volumes.values()) {
      const m = this.actual.get(uid)?.get(v.outerName);
      if (m?.setUpThisRun && !m.remountRequired) continue;
      const key = `${uid}/${v.outerName}`;
      if (this.operations.has(key)) continue;
      const retry = this.retries.get(key);
      if (retry && now < retry.retryAtMs) continue;
      if (m) m.remountRequired = false;
      const op = this.mountVolume(uid, dp, v, m?.setUpThisRun === true).finally(() => {
        this.operations.delete(key);
        this.notify(uid);
      });
      this.operations.set(key, op);
    }
  }

  private async mountVolume(uid: string, dp: DesiredPod, v: DesiredVolume, remount: boolean): Promise<void> {
    const pod = dp.pod;
    const key = `${uid}/${v.outerName}`;
    const signal = AbortSignal.any([dp.abort.signal, this.stopController.signal]);
    let stage = 'MountVolume.SetUp failed';
    try {
      const mounter = v.plugin.newMounter(v.spec, pod);
      if (v.spec.persistentVolume) {
        stage = 'MountVolume.NodeAffinity check failed';
        checkNodeAffinity(v.spec.persistentVolume, this.opts.nodeLabels?.() ?? {}, this.opts.nodeName);
        stage = 'MountVolume.SetUp failed';
      }
      const sc = pod.spec.securityContext;
      await mounter.setUp({
        fsGroup: sc?.fsGroup,
        fsGroupChangePolicy: sc?.fsGroupChangePolicy,
        fsUser: fsUserFrom(pod),
        remount,
        signal,
      });
      if (signal.aborted) return;
      this.setActual(uid, {
        outerName: v.outerName,
        pluginName: v.plugin.name,
        path: mounter.getPath(),
        attributes: mounter.getAttributes(),
        setUpThisRun: true,
        remountRequired: this.actual.get(uid)?.get(v.outerName)?.remountRequired ?? false,
      });
      const retry = this.retries.get(key);
      if (retry?.timer) this.clock.clearTimeout(retry.timer);
      this.retries.delete(key);
      if (!remount) {
        log.v(2, 'MountVolume.SetUp succeeded for volume', {
          volume: v.spec.name,
          pod: podRef(pod),
          podUID: uid,
        });
      }
    } catch (err) {
      if (signal.aborted) return;
      // upstream's GenerateMsgSimple: `<stage> for volume "<name>" ` then ` : <error>`.
      const message = `${stage} for volume "${v.spec.name}" : ${errorMessage(err)}`;
      log.error('Operation for volume failed', { pod: podRef(pod), podUID: uid, err: message });
      this.recorder.event(pod, '', 'Warning', VolumeEventReason.FailedMountVolume, message);
      this.backOff(key);
    }
  }

  private backOff(key: string): void {
    const prev = this.retries.get(key);
    const delayMs = prev ? Math.min(prev.delayMs * 2, MAX_RETRY_MS) : INITIAL_RETRY_MS;
    if (prev?.timer) this.clock.clearTimeout(prev.timer);
    const state: RetryState = { delayMs, retryAtMs: this.clock.now() + delayMs };
    state.timer = this.clock.setTimeout(() => {
      state.timer = undefined;
      this.reconcile();
    }, delayMs);
    this.retries.set(key, state);
  }

  private setActual(uid: string, m: MountedVolume): void {
    let vols = this.actual.get(uid);
    if (!vols) {
      vols = new Map();
      this.actual.set(uid, vols);
    }
    vols.set(m.outerName, m);
  }

  // ---- mounts for the runtime ----------------------------------------------------------------------

  async getMounts(pod: Pod, container: Container, podIPs: string[] = []): Promise<Mount[]> {
    const uid = pod.metadata.uid ?? '';
    const mounts: Mount[] = [];
    let envs: Map<string, string> | undefined;
    const volumeMounts = container.volumeMounts ?? [];
    for (let i = 0; i < volumeMounts.length; i++) {
      const vm = volumeMounts[i]!;
      const vol = this.actual.get(uid)?.get(vm.name);
      if (!vol?.setUpThisRun) {
        throw configError(`cannot find volume "${vm.name}" to mount into container "${container.name}"`);
      }
      let hostPath = vol.path;
      let subPath = vm.subPath ?? '';
      if (vm.subPathExpr) {
        envs ??= await this.containerEnv(pod, container, podIPs);
        subPath = expandSubPathExpr(vm.subPathExpr, envs);
      }
      if (subPath !== '') {
        hostPath = await this.prepareSubPath(uid, container, vm, i, vol.path, subPath);
      }
      const propagation = translateMountPropagation(vm.mountPropagation);
      if (propagation === 'PROPAGATION_BIDIRECTIONAL' && container.securityContext?.privileged !== true) {
        throw configError('Bidirectional mount propagation is available only to privileged containers');
      }
      mounts.push({
        containerPath: vm.mountPath,
        hostPath,
        readonly: vm.readOnly === true || vol.attributes.readOnly,
        selinuxRelabel:
          this.selinuxEnabled === true && vol.attributes.managed && vol.attributes.selinuxRelabel,
        propagation,
      });
    }
    return mounts;
  }

  /** The container's environment, for subPathExpr (upstream expands it against the same env). */
  private async containerEnv(pod: Pod, container: Container, podIPs: string[]): Promise<Map<string, string>> {
    const envs = await makeEnvironmentVariables(pod, container, {
      podIP: podIPs[0] ?? '',
      podIPs,
      hostIPs: this.opts.hostIPs ?? [],
      nodeName: this.opts.nodeName,
      nodeAllocatable: this.host.nodeAllocatable,
      sources: this.opts.envSources ?? {},
    });
    return new Map(envs.map((e) => [e.name, e.value]));
  }

  /** upstream makeMounts' subPath half: validate, create if missing, bind safely. */
  private async prepareSubPath(
    uid: string,
    container: Container,
    vm: VolumeMount,
    index: number,
    volumePath: string,
    subPath: string,
  ): Promise<string> {
    if (path.posix.isAbsolute(subPath)) {
      throw configError(`error SubPath \`${subPath}\` must not be an absolute path`);
    }
    try {
      validatePathNoBacksteps(subPath);
    } catch (err) {
      throw configError(`unable to provision SubPath \`${subPath}\`: ${errorMessage(err)}`);
    }
    const full = path.join(volumePath, subPath);
    const exists = await stat(full).then(
      () => true,
      () => false,
    );
    if (!exists) {
      try {
        // The volume's own mode, so a folder made for a subPath is as usable as the volume.
        const mode = (await stat(volumePath)).mode & 0o777;
        await safeMakeDir(subPath, await realpath(volumePath), mode);
      } catch (err) {
        // The detail stays in the log: it could tell a container about the host's filesystem.
        log.error('Failed to create subPath directory for volumeMount of the container', {
          containerName: container.name,
          volumeMountName: vm.name,
          err: errorMessage(err),
        });
        throw configError(
          `failed to create subPath directory for volumeMount "${vm.name}" of container "${container.name}"`,
        );
      }
    }
    try {
      return await prepareSafeSubpath(
        this.mounter,
        {
          volumeMountIndex: index,
          path: full,
          volumeName: vm.name,
          volumePath,
          podDir: podDir(this.rootDir, uid),
          containerName: container.name,
        },
        subpathBindTarget(this.rootDir, uid, vm.name, container.name, index),
      );
    } catch (err) {
      log.error('Failed to prepare subPath for volumeMount of the container', {
        containerName: container.name,
        volumeMountName: vm.name,
        err: errorMessage(err),
      });
      throw configError(
        `failed to prepare subPath for volumeMount "${vm.name}" of container "${container.name}"`,
      );
    }
  }

  // ---- teardown ------------------------------------------------------------------------------------

  async unmountAndCleanup(podUid: string, signal?: AbortSignal): Promise<void> {
    const dp = this.desired.get(podUid);
    this.desired.delete(podUid);
    dp?.abort.abort(new Error('pod terminated'));
    await this.awaitOperations(podUid);
    signal?.throwIfAborted();
    const errors = await this.tearDownPodVolumes(podUid);
    if (errors.length > 0) {
      if (dp) {
        for (const e of errors)
          this.recorder.event(dp.pod, '', 'Warning', VolumeEventReason.FailedUnmountVolume, e);
      }
      throw new Error(`mounted volumes remain for pod ${podUid}: ${errors.join('; ')}`);
    }
    log.v(3, 'Pod termination unmounted volumes', { podUID: podUid });
  }

  private async awaitOperations(podUid: string): Promise<void> {
    const prefix = `${podUid}/`;
    const ops = [...this.operations].filter(([k]) => k.startsWith(prefix)).map(([, p]) => p);
    await Promise.allSettled(ops);
    for (const [k, r] of this.retries) {
      if (!k.startsWith(prefix)) continue;
      if (r.timer) this.clock.clearTimeout(r.timer);
      this.retries.delete(k);
    }
  }

  /** Tears down every volume of the pod found in memory or on disk, and its subPath mounts; returns the failures. */
  private async tearDownPodVolumes(podUid: string): Promise<string[]> {
    const errors: string[] = [];
    const subpaths = podSubpathsDir(this.rootDir, podUid);
    // subPath mounts first: they hold the volumes (and hostPath volumes have nothing else).
    errors.push(...(await cleanPodSubPaths(this.mounter, subpaths, podUid)));
    const volumes = new Map<string, { name: string; plugin: VolumePlugin }>();
    for (const m of this.actual.get(podUid)?.values() ?? []) {
      const plugin = this.plugins.find((p) => p.name === m.pluginName);
      if (plugin) volumes.set(`${plugin.name}/${m.outerName}`, { name: m.outerName, plugin });
    }
    for (const v of await this.volumesOnDisk(podUid)) volumes.set(`${v.plugin.name}/${v.name}`, v);
    for (const v of volumes.values()) {
      try {
        await v.plugin.newUnmounter(v.name, podUid).tearDown();
        this.actual.get(podUid)?.delete(v.name);
        log.v(2, 'UnmountVolume.TearDown succeeded for volume', {
          volume: v.name,
          podUID: podUid,
          plugin: v.plugin.name,
        });
      } catch (err) {
        errors.push(`UnmountVolume.TearDown failed for volume "${v.name}" : ${errorMessage(err)}`);
      }
    }
    this.host.tokens.deleteServiceAccountToken(podUid);
    if (errors.length === 0) {
      this.actual.delete(podUid);
      await removeAllOneFilesystem(this.mounter, subpaths).catch((err: unknown) =>
        log.error('Failed to remove the subPath folder', {
          podUID: podUid,
          path: subpaths,
          err: errorMessage(err),
        }),
      );
    }
    this.notify(podUid);
    return errors;
  }

  async cleanupOrphanedPodDirs(keep: ReadonlySet<string> | ((podUid: string) => boolean)): Promise<void> {
    const wanted = typeof keep === 'function' ? keep : (uid: string) => keep.has(uid);
    for (const uid of await this.podUidsOnDisk()) {
      if (wanted(uid)) continue;
      // The kubelet says the pod is gone and cannot run: whatever it still wanted mounted is moot.
      const dp = this.desired.get(uid);
      if (dp) {
        this.desired.delete(uid);
        dp.abort.abort(new Error('pod is gone'));
      }
      if ([...this.operations.keys()].some((k) => k.startsWith(`${uid}/`))) continue;
      const errors = await this.tearDownPodVolumes(uid);
      try {
        if (errors.length > 0) throw new Error(errors.join('; '));
        await removeAllOneFilesystem(this.mounter, podDir(this.rootDir, uid));
        this.orphanWarned.delete(uid);
        log.v(2, 'Removed orphaned pod directory', { podUID: uid });
      } catch (err) {
        const kv = { podUID: uid, err: errorMessage(err) };
        if (this.orphanWarned.has(uid)) log.v(4, 'Orphaned pod found, but volumes are not cleaned up', kv);
        else log.warn('Orphaned pod found, but volumes are not cleaned up', kv);
        this.orphanWarned.add(uid);
      }
    }
  }

  podHasMountedVolumes(podUid: string): boolean {
    return (this.actual.get(podUid)?.size ?? 0) > 0;
  }

  // ---- what is on disk -----------------------------------------------------------------------------

  private async podUidsOnDisk(): Promise<string[]> {
    return readdir(path.join(this.rootDir, PODS_DIR_NAME)).catch(() => [] as string[]);
  }

  /** `<pod>/volumes/<plugin>/<name>` for the plugins known here; others are left alone, and logged. */
  private async volumesOnDisk(
    podUid: string,
  ): Promise<{ name: string; plugin: VolumePlugin; path: string }[]> {
    const base = podVolumesDir(this.rootDir, podUid);
    const out: { name: string; plugin: VolumePlugin; path: string }[] = [];
    for (const pluginDir of await readdir(base).catch(() => [] as string[])) {
      const plugin = this.plugins.find((p) => p.name === unescapeQualifiedName(pluginDir));
      const names = await readdir(path.join(base, pluginDir)).catch(() => [] as string[]);
      if (!plugin) {
        if (names.length > 0)
          log.warn('Volumes of an unknown plugin found on disk', { podUID: podUid, plugin: pluginDir });
        continue;
      }
      for (const name of names) out.push({ name, plugin, path: path.join(base, pluginDir, name) });
    }
    return out;
  }
}
