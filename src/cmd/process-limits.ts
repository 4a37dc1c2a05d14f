/**
 * The kubelet process's own limits, as upstream sets them at start: oomScoreAdj written to its
 * oom_score_adj (a failure is logged, as upstream's "Failed to ApplyOOMScoreAdj"), and maxOpenFiles
 * as both the soft and hard RLIMIT_NOFILE (a failure is logged, as upstream's "Failed to set rlimit
 * on max file handles"). Neither stops the kubelet: lowering oom_score_adj or raising the hard limit
 * needs CAP_SYS_RESOURCE, which some machines do not give.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';

const log = logger('kubelet');

/** Node has no setrlimit; util-linux's prlimit (in every Debian) sets it for a pid. */
const PRLIMIT = 'prlimit';
const PRLIMIT_TIMEOUT_MS = 5_000;

export interface ProcessLimits {
  oomScoreAdj: number;
  maxOpenFiles: number;
}

/** Writes /proc/<pid>/oom_score_adj, twice at most (upstream retries once). Resolves to the error, if any. */
export async function applyOomScoreAdj(
  pid: number,
  value: number,
  procDir = '/proc',
): Promise<Error | undefined> {
  let last: Error | undefined;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(`${procDir}/${pid}/oom_score_adj`, String(value));
      return undefined;
    } catch (err) {
      last = err as Error;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') break;
    }
  }
  return last;
}

/** The soft and hard "Max open files" of /proc/<pid>/limits, or undefined when unreadable. */
export async function readOpenFilesLimit(
  pid: number,
  procDir = '/proc',
): Promise<{ soft: string; hard: string } | undefined> {
  const text = await readFile(`${procDir}/${pid}/limits`, 'utf8').catch(() => '');
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  return m ? { soft: m[1]!, hard: m[2]! } : undefined;
}

/** Sets RLIMIT_NOFILE of pid to value (soft and hard), unless it already is. Resolves to the error, if any. */
export async function setMaxOpenFiles(pid: number, value: number): Promise<Error | undefined> {
  const now = await readOpenFilesLimit(pid);
  if (now?.soft === String(value) && now.hard === String(value)) return undefined;
  return new Promise((resolve) => {
    execFile(
      PRLIMIT,
      [`--pid=${pid}`, `--nofile=${value}:${value}`],
      { timeout: PRLIMIT_TIMEOUT_MS },
      (err, _stdout, stderr) =>
        resolve(err ? new Error(stderr.trim() || errorMessage(err), { cause: err }) : undefined),
    );
  });
}

/** Applies both to this process; logs what failed, never throws. */
export async function applyProcessLimits(limits: ProcessLimits, pid = process.pid): Promise<void> {
  const oomErr = await applyOomScoreAdj(pid, limits.oomScoreAdj);
  if (oomErr)
    log.info('Failed to ApplyOOMScoreAdj', { err: errorMessage(oomErr), oomScoreAdj: limits.oomScoreAdj });
  const rlimitErr = await setMaxOpenFiles(pid, limits.maxOpenFiles);
  if (rlimitErr)
    log.error('Failed to set rlimit on max file handles', {
      err: errorMessage(rlimitErr),
      maxOpenFiles: limits.maxOpenFiles,
    });
}
