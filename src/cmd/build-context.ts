/** What every builder of the kubelet's object graph reads (src/cmd/build-kubelet.ts lists them). */
import os from 'node:os';
import type { ContainerManager, ContainerManagerOptions } from '../cm/container-manager.js';
import type { ImageService, RuntimeService, VersionResponse } from '../cri/types.js';
import type { ObjectEventRecorder } from '../events/event-recorder.js';
import type { Clock } from '../lib/clock.js';
import type { ComponentStatus } from '../lib/component.js';
import type { ClusterClients } from './cluster-clients.js';
import type { LoadedKubeletConfig } from './load-kubelet-config.js';

export type RunConfig = Extract<LoadedKubeletConfig, { action: 'run' }>;

/** The runtime once it has answered the handshake (RuntimeConnection, or a fake in tests). */
export interface ConnectedRuntime {
  readonly runtime: RuntimeService;
  readonly images: ImageService;
  readonly version: VersionResponse;
  close(): void;
}

export interface BuildOptions {
  clock?: Clock;
  /** Every component's state, for /healthz?verbose (the runner's snapshots). */
  componentStatuses?: () => readonly ComponentStatus[];
  /** Dials the runtime until it answers or signal aborts; connectRuntime by default. */
  connectRuntime?: (signal: AbortSignal) => Promise<ConnectedRuntime>;
  /** createContainerManager by default. */
  createContainerManager?: (opts: ContainerManagerOptions) => Promise<ContainerManager>;
  legacyContainerLogsDir?: string;
  /** False in tests that may not remount --root-dir. */
  makeRootDirShared?: boolean;
  /** Cuts short a TLS bootstrap waiting for its certificate (the first signal). */
  signal?: AbortSignal;
  /**
   * Ends a running kubelet that cannot go on (main's fatal path: logged, components stopped, exit
   * 1, pods left running). Without it nothing ends the process (tests that build in-process).
   */
  fatal?: (err: Error) => void;
}

/** The configuration and the bootstrap's parts, as each builder after the bootstrap reads them. */
export interface BuildContext {
  readonly config: RunConfig['config'];
  readonly flags: RunConfig['flags'];
  readonly nodeName: string;
  readonly clock: Clock;
  /** The API clients; undefined standalone. */
  readonly cluster: ClusterClients | undefined;
  /** Where every part records events (see KubeletBootstrap.recorder). */
  readonly recorder: ObjectEventRecorder;
  /** The node's IPs (nodeIPs below). */
  readonly ips: string[];
  /** The validated credential provider plugins (--image-credential-provider-config), if any. */
  readonly credentialProviders?: RunConfig['credentialProviders'];
  readonly opts: BuildOptions;
}

/** The node's IPs: --node-ip when given, else the first non-loopback IPv4 address (upstream picks the default route's). */
export function nodeIPs(flag: string): string[] {
  if (flag !== '') return flag.split(',').map((s) => s.trim());
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return [a.address];
  }
  return ['127.0.0.1'];
}
