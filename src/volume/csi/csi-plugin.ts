/**
 * The CSI volume plugin (upstream: pkg/volume/csi, `kubernetes.io/csi`): volumes served by a CSI
 * driver registered through the plugin watcher. Two kinds:
 *
 * - inline ephemeral volumes (`volumes[].csi` in the pod): volume ID `csi-<sha256(podUID+name)>`,
 *   allowed only when the driver's CSIDriver lists the `Ephemeral` lifecycle mode;
 * - PersistentVolumes with a `csi` source (through a claim): staged once per node with
 *   NodeStageVolume at `<root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount` when
 *   the driver has STAGE_UNSTAGE_VOLUME (upstream's csiAttacher.MountDevice), after the
 *   VolumeAttachment says attached when the CSIDriver requires attaching.
 *
 * Either way SetUp is NodePublishVolume at `<root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount`
 * with `vol_data.json` beside it, so TearDown (NodeUnpublishVolume) knows the driver and volume ID
 * after a restart. As upstream, it needs the API server (CSIDriver objects): in standalone mode a
 * CSI volume fails with upstream's "failed to get a kubernetes client".
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../../api/core-v1.js';
import { errorMessage } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import { isMountPoint } from '../mounter.js';
import type {
  MounterArgs,
  VolumeAttributes,
  VolumeHost,
  VolumeMounter,
  VolumePlugin,
  VolumeSpec,
  VolumeUnmounter,
} from '../volume-plugin.js';
import { podVolumeDir, PODS_DIR_NAME, VOLUMES_DIR_NAME, escapeQualifiedName } from '../volume-paths.js';
import { setVolumeOwnership } from '../volume-ownership.js';
import type { CSIPersistentVolumeSource, CSIVolumeSource } from '../volume-types.js';
import { CsiAccessMode, CsiDriverClient, isFinalError } from './csi-client.js';
import type { CsiDriversStore } from './csi-drivers-store.js';
import type { CSIDriverObject, CsiObjectSource, FSGroupPolicy, VolumeLifecycleMode } from './csi-objects.js';
import { CSI_TIMEOUT_MS, csiMsg } from './csi-registration-handler.js';
import { NodeServiceCapability_RPC_Type } from './generated/csi/v1/csi.js';

const log = logger('csi');

export const CSI_PLUGIN_NAME = 'kubernetes.io/csi';
const VOL_DATA_FILE_NAME = 'vol_data.json';
const GLOBAL_MOUNT_DIR_NAME = 'globalmount';
const MOUNT_DIR_NAME = 'mount';

/** upstream: volDataKey. */
const VolDataKey = {
  specVolID: 'specVolumeID',
  volHandle: 'volumeHandle',
  driverName: 'driverName',
  nodeName: 'nodeName',
  attachmentID: 'attachmentID',
  volumeLifecycleMode: 'volumeLifecycleMode',
} as const;

/** upstream: the pod info keys a driver with podInfoOnMount gets in its volume context. */
export const PodInfoKey = {
  podName: 'csi.storage.k8s.io/pod.name',
  podNamespace: 'csi.storage.k8s.io/pod.namespace',
  podUID: 'csi.storage.k8s.io/pod.uid',
  serviceAccountName: 'csi.storage.k8s.io/serviceAccount.name',
  ephemeral: 'csi.storage.k8s.io/ephemeral',
} as const;

function sha256Hex(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** upstream: makeVolumeHandle: an inline volume's ID. */
export function makeVolumeHandle(podUid: string, volumeName: string): string {
  return `csi-${sha256Hex(`${podUid}${volumeName}`)}`;
}

/** upstream: getAttachmentName: the VolumeAttachment of a PV on a node. */
export function attachmentName(volumeHandle: string, driverName: string, nodeName: string): string {
  return `csi-${sha256Hex(`${volumeHandle}${driverName}${nodeName}`)}`;
}

/** upstream: makeDeviceMountPath: where a PersistentVolume is staged, shared by the node's pods. */
export function deviceMountPath(rootDir: string, driverName: string, volumeHandle: string): string {
  return path.join(
    rootDir,
    'plugins',
    CSI_PLUGIN_NAME,
    driverName,
    sha256Hex(volumeHandle),
    GLOBAL_MOUNT_DIR_NAME,
  );
}

/** The parts of the kubelet the CSI plugin needs besides the VolumeHost. */
export interface CsiPluginDeps {
  drivers: CsiDriversStore;
  /** undefined in standalone mode. */
  objects: CsiObjectSource | undefined;
  callTimeoutMs?: number;
}

interface ResolvedSource {
  driverName: string;
  volumeHandle: string;
  readOnly: boolean;
  mode: VolumeLifecycleMode;
  inline?: CSIVolumeSource;
  persistent?: CSIPersistentVolumeSource;
}

function resolveSource(spec: VolumeSpec, pod: Pod): ResolvedSource {
  const inline = spec.volume?.csi;
  if (inline) {
    return {
      driverName: inline.driver,
      volumeHandle: makeVolumeHandle(pod.metadata.uid ?? '', spec.name),
      readOnly: inline.readOnly === true,
      mode: 'Ephemeral',
      inline,
    };
  }
  const pv = spec.persistentVolume?.spec.csi;
  if (pv) {
    return {
      driverName: pv.driver,
      volumeHandle: pv.volumeHandle,
      readOnly: spec.readOnly || pv.readOnly === true,
      mode: 'Persistent',
      persistent: pv,
    };
  }
  throw new Error(csiMsg('volume source not found in volume.Spec'));
}

/** upstream: asCSIAccessModeV1. */
function csiAccessMode(mode: string, singleNodeMultiWriter: boolean): CsiAccessMode {
  switch (mode) {
    case 'ReadWriteOnce':
      return singleNodeMultiWriter
        ? CsiAccessMode.SINGLE_NODE_MULTI_WRITER
        : CsiAccessMode.SINGLE_NODE_WRITER;
    case 'ReadOnlyMany':
      return CsiAccessMode.MULTI_NODE_READER_ONLY;
    case 'ReadWriteMany':
      return CsiAccessMode.MULTI_NODE_MULTI_WRITER;
    case 'ReadWriteOncePod':
      return singleNodeMultiWriter
        ? CsiAccessMode.SINGLE_NODE_SINGLE_WRITER
        : CsiAccessMode.SINGLE_NODE_WRITER;
    default:
      return CsiAccessMode.UNKNOWN;
  }
}

export class CsiPlugin implements VolumePlugin {
  readonly name = CSI_PLUGIN_NAME;
  readonly requiresRemount = false;
  readonly callTimeoutMs: number;

  constructor(
    readonly host: VolumeHost,
    readonly deps: CsiPluginDeps,
  ) {
    this.callTimeoutMs = deps.callTimeoutMs ?? CSI_TIMEOUT_MS;
  }

  canSupport(spec: VolumeSpec): boolean {
    return spec.volume?.csi !== undefined || spec.persistentVolume?.spec.csi !== undefined;
  }

  newMounter(spec: VolumeSpec, pod: Pod): VolumeMounter {
    return new CsiMountMgr(this, spec, pod);
  }

  newUnmounter(volumeName: string, podUid: string): VolumeUnmounter {
    return { tearDown: () => this.tearDown(volumeName, podUid) };
  }

  /** The client of a registered driver (upstream: newCsiDriverClient). */
  driverClient(driverName: string): CsiDriverClient {
    const driver = this.deps.drivers.get(driverName);
    if (!driver) throw new Error(`driver name ${driverName} not found in the list of registered CSI drivers`);
    return new CsiDriverClient(driverName, driver.endpoint);
  }

  /** upstream: supportsVolumeLifecycleMode: without a CSIDriver object only persistent volumes are taken. */
  checkLifecycleMode(
    driverName: string,
    mode: VolumeLifecycleMode,
    csiDriver: CSIDriverObject | undefined,
  ): void {
    if (!csiDriver) {
      if (mode === 'Persistent') return;
      throw new Error(`volume mode "${mode}" not supported by driver ${driverName} (no CSIDriver object)`);
    }
    // The API server defaults volumeLifecycleModes to [Persistent].
    const modes = csiDriver.spec.volumeLifecycleModes ?? ['Persistent'];
    if (!modes.includes(mode)) {
      throw new Error(
        `volume mode "${mode}" not supported by driver ${driverName} (only supports ${JSON.stringify(modes)})`,
      );
    }
  }

  private async tearDown(volumeName: string, podUid: string): Promise<void> {
    const volDir = podVolumeDir(this.host.rootDir, podUid, CSI_PLUGIN_NAME, volumeName);
    const dir = path.join(volDir, MOUNT_DIR_NAME);
    const data = await loadVolumeData(volDir);
    if (!data) {
      // Nothing says which driver made it: only an empty folder may go; a mount stays and is reported.
      if (await isMountPoint(this.host.mounter, dir)) {
        throw new Error(
          csiMsg(`unmounter failed to load volume data file [${path.join(volDir, VOL_DATA_FILE_NAME)}]`),
        );
      }
      await removeMountDir(this.host, dir);
      return;
    }
    const driverName = data[VolDataKey.driverName] ?? '';
    const volumeHandle = data[VolDataKey.volHandle] ?? '';
    const client = this.driverClient(driverName);
    await client.nodeUnpublishVolume(volumeHandle, dir, this.callTimeoutMs);
    log.v(4, csiMsg('mounter.TearDownAt successfully unmounted dir'), { dir });
    await removeMountDir(this.host, dir);
    if (data[VolDataKey.volumeLifecycleMode] === 'Persistent') {
      await this.unstageIfUnused(client, driverName, volumeHandle);
    }
  }

  /**
   * upstream: UnmountDevice once no pod on the node uses the volume any more. The pods' own
   * vol_data.json files say which still do.
   */
  private async unstageIfUnused(
    client: CsiDriverClient,
    driverName: string,
    volumeHandle: string,
  ): Promise<void> {
    const staging = deviceMountPath(this.host.rootDir, driverName, volumeHandle);
    const stagingData = await loadVolumeData(path.dirname(staging));
    if (!stagingData) return;
    if (await this.volumeInUse(driverName, volumeHandle)) return;
    if (stagingData.staged === 'true') {
      await client.nodeUnstageVolume(volumeHandle, staging, this.callTimeoutMs);
      log.v(4, csiMsg('attacher.UnmountDevice successfully requested NodeUnStageVolume'), { path: staging });
    }
    await removeMountDir(this.host, staging);
  }

  private async volumeInUse(driverName: string, volumeHandle: string): Promise<boolean> {
    const pods = path.join(this.host.rootDir, PODS_DIR_NAME);
    for (const uid of await readdir(pods).catch(() => [] as string[])) {
      const base = path.join(pods, uid, VOLUMES_DIR_NAME, escapeQualifiedName(CSI_PLUGIN_NAME));
      for (const name of await readdir(base).catch(() => [] as string[])) {
        const d = await loadVolumeData(path.join(base, name));
        if (d?.[VolDataKey.driverName] === driverName && d[VolDataKey.volHandle] === volumeHandle)
          return true;
      }
    }
    return false;
  }
}

class CsiMountMgr implements VolumeMounter {
  private readonly volDir: string;
  private readOnly = false;

  constructor(
    private readonly plugin: CsiPlugin,
    private readonly spec: VolumeSpec,
    private readonly pod: Pod,
  ) {
    this.volDir = podVolumeDir(plugin.host.rootDir, pod.metadata.uid ?? '', CSI_PLUGIN_NAME, spec.name);
  }

  getPath(): string {
    return path.join(this.volDir, MOUNT_DIR_NAME);
  }

  getAttributes(): VolumeAttributes {
    return { readOnly: this.readOnly, managed: !this.readOnly, selinuxRelabel: true };
  }

  async setUp(args: MounterArgs): Promise<void> {
    const { host, deps } = this.plugin;
    const src = resolveSource(this.spec, this.pod);
    this.readOnly = src.readOnly;
    if (!deps.objects) throw new Error(csiMsg('failed to get a kubernetes client'));
    const dir = this.getPath();
    if (await isMountPoint(host.mounter, dir)) {
      log.v(4, csiMsg('mounter.SetUpAt skipping mount, dir already mounted'), { dir });
      return;
    }
    const csiDriver = await deps.objects.getCSIDriver(src.driverName, args.signal);
    this.plugin.checkLifecycleMode(src.driverName, src.mode, csiDriver);
    const client = this.plugin.driverClient(src.driverName);
    const timeoutMs = this.plugin.callTimeoutMs;

    await mkdir(this.volDir, { recursive: true, mode: 0o750 });
    const nodeName = host.nodeName;
    await saveVolumeData(this.volDir, {
      [VolDataKey.specVolID]: this.spec.name,
      [VolDataKey.volHandle]: src.volumeHandle,
      [VolDataKey.driverName]: src.driverName,
      [VolDataKey.nodeName]: nodeName,
      [VolDataKey.attachmentID]: attachmentName(src.volumeHandle, src.driverName, nodeName),
      [VolDataKey.volumeLifecycleMode]: src.mode,
    });

    const caps = await client.nodeGetCapabilities(timeoutMs, args.signal);
    const multiWriter = caps.has(NodeServiceCapability_RPC_Type.SINGLE_NODE_MULTI_WRITER);
    const pvSpec = this.spec.persistentVolume?.spec;
    const accessMode = csiAccessMode(pvSpec?.accessModes?.[0] ?? 'ReadWriteOnce', multiWriter);
    const fsType = (src.inline ? src.inline.fsType : src.persistent?.fsType) ?? '';
    const mountOptions = pvSpec?.mountOptions ?? [];
    const namespace = this.pod.metadata.namespace ?? '';

    let stagingPath = '';
    let publishContext: Record<string, string> = {};
    if (src.persistent) {
      publishContext = await this.waitForAttach(src, csiDriver, args.signal);
      if (caps.has(NodeServiceCapability_RPC_Type.STAGE_UNSTAGE_VOLUME)) {
        stagingPath = deviceMountPath(host.rootDir, src.driverName, src.volumeHandle);
        await this.mountDevice(
          client,
          src.persistent,
          stagingPath,
          publishContext,
          accessMode,
          fsType,
          mountOptions,
          args,
        );
      }
    }

    const volumeContext: Record<string, string> = {
      ...(src.inline?.volumeAttributes ?? src.persistent?.volumeAttributes ?? {}),
      ...this.podAttributes(src.mode, csiDriver),
    };
    const secretRef = src.inline?.nodePublishSecretRef ?? src.persistent?.nodePublishSecretRef;
    const secrets = secretRef?.name
      ? await this.secretData(
          src.persistent ? ((secretRef as { namespace?: string }).namespace ?? '') : namespace,
          secretRef.name,
          'NodePublishSecretRef',
          args.signal,
        )
      : {};

    const fsGroupPolicy: FSGroupPolicy = csiDriver?.spec.fsGroupPolicy ?? 'ReadWriteOnceWithFSType';
    const mountGroup = caps.has(NodeServiceCapability_RPC_Type.VOLUME_MOUNT_GROUP);
    const applyFsGroup = this.supportsFSGroup(fsType, args.fsGroup, fsGroupPolicy, src.readOnly);
    let volumeMountGroup: string | undefined;
    if (applyFsGroup && mountGroup && args.fsGroup !== undefined) volumeMountGroup = String(args.fsGroup);

    // The driver makes the target itself; its parent is the kubelet's to make.
    await mkdir(path.dirname(dir), { recursive: true, mode: 0o750 });
    try {
      await client.nodePublishVolume(
        {
          volumeId: src.volumeHandle,
          publishContext,
          stagingTargetPath: stagingPath,
          targetPath: dir,
          accessMode,
          readOnly: src.readOnly,
          secrets,
          volumeContext,
          fsType,
          mountOptions,
          ...(volumeMountGroup !== undefined ? { volumeMountGroup } : {}),
        },
        timeoutMs,
        args.signal,
      );
    } catch (err) {
      // A final error means the driver made nothing: what is left is the kubelet's to remove.
      if (isFinalError(err)) {
        await removeMountDir(host, dir).catch((rmErr: unknown) =>
          log.error(
            csiMsg(`mounter.SetUpAt failed to remove mount dir after error [${dir}]: ${errorMessage(rmErr)}`),
          ),
        );
      }
      throw err;
    }
    if (applyFsGroup && volumeMountGroup === undefined) {
      await setVolumeOwnership(dir, args.fsGroup, {
        readOnly: src.readOnly,
        policy: args.fsGroupChangePolicy,
        clock: host.clock,
      });
    }
    log.v(4, csiMsg('mounter.SetUp successfully requested NodePublish'), { dir });
  }

  /** upstream: supportsFSGroup. Inline volumes are always published ReadWriteOnce. */
  private supportsFSGroup(
    fsType: string,
    fsGroup: number | undefined,
    policy: FSGroupPolicy,
    readOnly: boolean,
  ): boolean {
    if (fsGroup === undefined || policy === 'None' || readOnly) return false;
    if (policy === 'File') return true;
    if (fsType === '') return false;
    const pv = this.spec.persistentVolume;
    if (pv) return (pv.spec.accessModes ?? []).includes('ReadWriteOnce');
    return this.spec.volume?.csi !== undefined;
  }

  /** upstream: podAttributes: only for drivers whose CSIDriver sets podInfoOnMount. */
  private podAttributes(
    mode: VolumeLifecycleMode,
    csiDriver: CSIDriverObject | undefined,
  ): Record<string, string> {
    if (csiDriver?.spec.podInfoOnMount !== true) return {};
    return {
      [PodInfoKey.podName]: this.pod.metadata.name ?? '',
      [PodInfoKey.podNamespace]: this.pod.metadata.namespace ?? '',
      [PodInfoKey.podUID]: this.pod.metadata.uid ?? '',
      [PodInfoKey.serviceAccountName]: (this.pod.spec.serviceAccountName as string | undefined) ?? '',
      [PodInfoKey.ephemeral]: String(mode === 'Ephemeral'),
    };
  }

  private async secretData(
    namespace: string,
    name: string,
    field: string,
    signal: AbortSignal,
  ): Promise<Record<string, string>> {
    let secret;
    try {
      secret = await this.plugin.host.objects.getSecret(namespace, name, { signal });
    } catch (err) {
      throw new Error(`fetching ${field} ${namespace}/${name} failed: ${errorMessage(err)}`);
    }
    if (!secret)
      throw new Error(`fetching ${field} ${namespace}/${name} failed: secrets "${name}" not found`);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(secret.data ?? {}))
      out[k] = Buffer.from(v, 'base64').toString('utf8');
    return out;
  }

  /**
   * upstream: csiAttacher.WaitForAttach, the kubelet's half: a driver that needs attaching (its
   * CSIDriver says so, or it has none) waits for the controller's VolumeAttachment to say attached.
   * Not attached yet is an error, retried with the volume manager's back-off.
   */
  private async waitForAttach(
    src: ResolvedSource,
    csiDriver: CSIDriverObject | undefined,
    signal: AbortSignal,
  ): Promise<Record<string, string>> {
    if (csiDriver && csiDriver.spec.attachRequired === false) return {};
    const name = attachmentName(src.volumeHandle, src.driverName, this.plugin.host.nodeName);
    const va = await this.plugin.deps.objects!.getVolumeAttachment(name, signal);
    if (!va) throw new Error(csiMsg(`volume attachment ${name} not found`));
    if (va.status?.attachError?.message) {
      throw new Error(csiMsg(`attachment for ${src.volumeHandle} failed: ${va.status.attachError.message}`));
    }
    if (va.status?.attached !== true)
      throw new Error(csiMsg(`volume ${src.volumeHandle} has not been attached yet`));
    return va.status.attachmentMetadata ?? {};
  }

  /** upstream: csiAttacher.MountDevice: NodeStageVolume at the volume's global mount (idempotent). */
  private async mountDevice(
    client: CsiDriverClient,
    pv: CSIPersistentVolumeSource,
    stagingPath: string,
    publishContext: Record<string, string>,
    accessMode: CsiAccessMode,
    fsType: string,
    mountOptions: string[],
    args: MounterArgs,
  ): Promise<void> {
    const { host } = this.plugin;
    await mkdir(stagingPath, { recursive: true, mode: 0o750 });
    const dataDir = path.dirname(stagingPath);
    await saveVolumeData(dataDir, {
      [VolDataKey.volHandle]: pv.volumeHandle,
      [VolDataKey.driverName]: pv.driver,
      staged: 'true',
    });
    if (await isMountPoint(host.mounter, stagingPath)) return;
    const secrets = pv.nodeStageSecretRef?.name
      ? await this.secretData(
          pv.nodeStageSecretRef.namespace ?? '',
          pv.nodeStageSecretRef.name,
          'NodeStageSecretRef',
          args.signal,
        )
      : {};
    await client.nodeStageVolume(
      {
        volumeId: pv.volumeHandle,
        publishContext,
        stagingTargetPath: stagingPath,
        accessMode,
        secrets,
        volumeContext: pv.volumeAttributes ?? {},
        fsType,
        mountOptions,
      },
      this.plugin.callTimeoutMs,
      args.signal,
    );
    log.v(4, csiMsg('attacher.MountDevice successfully requested NodeStageVolume'), { path: stagingPath });
  }
}

async function saveVolumeData(dir: string, data: Record<string, string>): Promise<void> {
  await writeFile(path.join(dir, VOL_DATA_FILE_NAME), JSON.stringify(data), { mode: 0o640 });
}

async function loadVolumeData(dir: string): Promise<Record<string, string> | undefined> {
  let text;
  try {
    text = await readFile(path.join(dir, VOL_DATA_FILE_NAME), 'utf8');
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text) as Record<string, string>;
  } catch (err) {
    throw new Error(
      csiMsg(
        `failed to parse volume data file [${path.join(dir, VOL_DATA_FILE_NAME)}]: ${errorMessage(err)}`,
      ),
    );
  }
}

/**
 * upstream: removeMountDir: the mount folder (only when nothing is mounted on it, and only when
 * empty), the volume data file and the volume's folder.
 */
async function removeMountDir(host: VolumeHost, mountPath: string): Promise<void> {
  if (await isMountPoint(host.mounter, mountPath)) {
    throw new Error(csiMsg(`dir still mounted, skipping dir removal [${mountPath}]`));
  }
  const ignoreMissing = (err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw new Error(csiMsg(`failed to remove dir [${mountPath}]: ${err.message}`));
  };
  await rmdir(mountPath).catch(ignoreMissing);
  const volPath = path.dirname(mountPath);
  await rm(path.join(volPath, VOL_DATA_FILE_NAME), { force: true });
  await rmdir(volPath).catch(ignoreMissing);
}
