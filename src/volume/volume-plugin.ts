/**
 * What a volume plugin is to the volume manager (upstream: pkg/volume/plugins.go, volume.go): it
 * recognises a volume spec, makes a Mounter that sets the volume up where the runtime can bind it,
 * and an Unmounter that tears down what it left on disk, even after a kubelet restart when only
 * the folder's name is known.
 */
import type { Pod } from '../api/core-v1.js';
import type { NodeAllocatable } from '../api/node.js';
import type { Clock } from '../lib/clock.js';
import type { Mounter } from './mounter.js';
import type { TokenManager } from './token-manager.js';
import type { VolumeObjectSource } from './volume-object-source.js';
import type { FSGroupChangePolicy } from './volume-ownership.js';
import type { PersistentVolume, PodVolume } from './volume-types.js';

/** A volume to set up: a pod's own volume, or the PersistentVolume behind one of its claims. */
export interface VolumeSpec {
  /** The name in messages: the pod's volume name, or the PV's name for a claim (upstream: Spec.Name()). */
  name: string;
  volume?: PodVolume;
  persistentVolume?: PersistentVolume;
  /** The claim's readOnly (a pod's own volumes carry theirs in their source). */
  readOnly: boolean;
}

/** upstream: volume.Attributes. */
export interface VolumeAttributes {
  /** Every container gets it read-only, whatever its volumeMount says. */
  readOnly: boolean;
  /** The kubelet owns its content (it may relabel and chown it). */
  managed: boolean;
  selinuxRelabel: boolean;
}

export interface MounterArgs {
  fsGroup?: number;
  fsGroupChangePolicy?: FSGroupChangePolicy;
  fsUser?: number;
  /** A remount of a volume already set up: API objects cached within their TTL will do. */
  remount: boolean;
  signal: AbortSignal;
}

export interface VolumeMounter {
  /** The volume's path on the host: what the runtime bind-mounts into containers. */
  getPath(): string;
  getAttributes(): VolumeAttributes;
  /** Idempotent: a volume already set up keeps its content (emptyDir) or is brought up to date (configMap). */
  setUp(args: MounterArgs): Promise<void>;
}

export interface VolumeUnmounter {
  tearDown(): Promise<void>;
}

export interface VolumePlugin {
  /** `kubernetes.io/empty-dir`: also its folder's name under `volumes/`, escaped. */
  readonly name: string;
  /** SetUp runs again on every sync of the pod, to carry changes into the volume (API data volumes). */
  readonly requiresRemount: boolean;
  canSupport(spec: VolumeSpec): boolean;
  newMounter(spec: VolumeSpec, pod: Pod): VolumeMounter;
  /** Tears down `<pod>/volumes/<plugin>/<volumeName>` as found on disk. */
  newUnmounter(volumeName: string, podUid: string): VolumeUnmounter;
}

/** What plugins may use of the kubelet (upstream: VolumeHost). */
export interface VolumeHost {
  rootDir: string;
  nodeName: string;
  clock: Clock;
  mounter: Mounter;
  objects: VolumeObjectSource;
  tokens: TokenManager;
  nodeAllocatable: NodeAllocatable;
  /** How stale a configMap or secret may be when a volume is refreshed. */
  objectCacheTtlMs: number;
}

/** upstream's utilerrors.NewAggregate wording: one error as itself, several as `[a, b]`. */
export function aggregateErrors(errors: string[]): Error | undefined {
  if (errors.length === 0) return undefined;
  return new Error(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
}

/** A mode from the API (decimal in JSON: 420 is 0644), kept to permission bits. */
export function fileMode(mode: number | undefined, fallback: number): number {
  return (mode ?? fallback) & 0o777;
}

/** upstream: the API's default for defaultMode. */
export const DEFAULT_FILE_MODE = 0o644;
