/** Stable codes for the failures a caller may want to tell apart. Expected outcomes (not found, conflict) are return values, not errors. */
export type KubeletErrorCode =
  | 'CRI_UNAVAILABLE'
  | 'CRI_DEADLINE_EXCEEDED'
  | 'CRI_ERROR'
  | 'CSI_RPC_FAILED'
  | 'CRI_NOT_FOUND'
  | 'CGROUP_ERROR'
  | 'VOLUME_MOUNT_FAILED'
  | 'WATCH_EXPIRED'
  | 'LOG_LIMIT_REACHED'
  | 'INVALID_MANIFEST'
  | 'INVALID_CONFIG'
  | 'INVALID_QUANTITY'
  | 'INVALID_DURATION'
  | 'DEADLINE_EXCEEDED'
  | 'CREATE_CONTAINER_CONFIG'
  | 'KILL_FAILED'
  /** The runtime's network is not ready: pods off the host network wait for it. */
  | 'NETWORK_NOT_READY'
  | 'API_ERROR'
  /** A certificate or key on disk or from a signer that cannot be used. */
  | 'CERTIFICATE_INVALID'
  /** A CertificateSigningRequest denied, failed, or not issued in time. */
  | 'CERTIFICATE_REQUEST_FAILED'
  /** `tskubelet get|describe|logs|events` called wrongly. */
  | 'CLI_USAGE'
  /** The local kubelet's /node/api refused or could not be reached (the CLI). */
  | 'NODE_API_ERROR'
  /** The CLI found no kubelet to ask, or a place it was told of that root did not make. */
  | 'KUBELET_NOT_FOUND'
  /** A checkpoint file that cannot be trusted (unreadable, or its checksum does not match). */
  | 'CHECKPOINT_CORRUPT'
  /** Devices a container asks for could not be allocated (too few free, the plugin failed). */
  | 'DEVICE_ALLOCATION_FAILED'
  /** A file longer than its reader allows (a manifest over 10 MiB). */
  | 'FILE_TOO_LARGE'
  /** Swap is on and failSwapOn (the default) refuses to run with it. */
  | 'SWAP_ON'
  /** An image pull secret whose docker config does not parse: the pull fails rather than going without it. */
  | 'INVALID_PULL_SECRET'
  /** A CPU list ("0-3,8") that does not parse. */
  | 'INVALID_CPUSET'
  /** The CPU manager could not give a container the CPUs it asks for, or cannot start on its state. */
  | 'CPU_ALLOCATION_FAILED'
  /** The memory manager could not give a container NUMA-aligned memory, or cannot start on its state. */
  | 'MEMORY_ALLOCATION_FAILED'
  /** An httpGet probe's or lifecycle hook's request to a pod failed (worded as Go's url.Error). */
  | 'HTTP_GET_FAILED'
  /** A registry pattern or image name that Go's url.Parse would refuse (credential providers). */
  | 'INVALID_URL'
  /** A glob that Go's filepath.Match calls malformed (ErrBadPattern). */
  | 'BAD_PATTERN'
  /** A program the kubelet ran (mount, umount) that exited non-zero, timed out or could not run. */
  | 'COMMAND_FAILED';

export class KubeletError extends Error {
  readonly code: KubeletErrorCode;

  constructor(code: KubeletErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubeletError';
    this.code = code;
  }
}

export function isKubeletError(err: unknown, code?: KubeletErrorCode): err is KubeletError {
  return err instanceof KubeletError && (code === undefined || err.code === code);
}

/** The message of anything thrown, for logs. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
