/**
 * What the cgroup code throws when it cannot do its job (a cgroup that cannot be made or set).
 * Its own class, not KubeletError, until lib's KubeletErrorCode has a code for it ('CGROUP_ERROR').
 */
export class CgroupError extends Error {
  readonly code = 'CGROUP_ERROR';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CgroupError';
  }
}

export function isCgroupError(err: unknown): err is CgroupError {
  return err instanceof CgroupError;
}
