import { KubeletError } from '../lib/errors.js';

/** What the cgroup code throws when it cannot do its job (a cgroup that cannot be made or set). */
export class CgroupError extends KubeletError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CGROUP_ERROR', message, options);
    this.name = 'CgroupError';
  }
}

export function isCgroupError(err: unknown): err is CgroupError {
  return err instanceof CgroupError;
}
