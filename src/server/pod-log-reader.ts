/**
 * A container's log as /containerLogs reads it (the same container choice, options and file
 * reader), for callers that are not the kubelet API: the node page's log tail and `tskubelet logs`.
 */
import type { Pod } from '../api/core-v1.js';
import type { RuntimeService } from '../cri/types.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import { readLogs } from './container-logs.js';
import {
  containerIdForLogs,
  decodePodLogOptions,
  toLogOptions,
  validatePodLogOptions,
} from './container-logs-handler.js';

/** Why a log cannot be read, with the HTTP status /containerLogs answers for it. */
export interface LogRefusal {
  status: 400 | 404 | 422;
  message: string;
}

export interface PodLogReader {
  /**
   * Checks the request as /containerLogs does; on success calls start() and writes the log to
   * write, following while asked, and resolves when done. A failure after start() rejects.
   */
  read(
    namespace: string,
    podName: string,
    containerName: string,
    query: URLSearchParams,
    start: () => void,
    write: (chunk: Buffer) => Promise<void>,
    signal: AbortSignal,
  ): Promise<LogRefusal | undefined>;
  /** Whether the query asks to follow the log (as /containerLogs reads `follow`). */
  follows(query: URLSearchParams): boolean;
}

export interface PodLogReaderOptions {
  runtime: Pick<RuntimeService, 'containerStatus'>;
  getPod(namespace: string, name: string): Pod | undefined;
  clock: Clock;
  runtimeRequestTimeoutMs: number;
}

function inSpec(pod: Pod, name: string): boolean {
  return [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].some((c) => c.name === name);
}

export function podLogReader(opts: PodLogReaderOptions): PodLogReader {
  return {
    follows: (query) => decodePodLogOptions(query)?.follow === true,
    async read(namespace, podName, containerName, query, start, write, signal) {
      const options = decodePodLogOptions(query);
      if (!options) return { status: 400, message: 'Unable to decode query.' };
      if (validatePodLogOptions(options).length > 0) return { status: 422, message: 'Invalid request.' };
      const pod = opts.getPod(namespace, podName);
      if (!pod) return { status: 404, message: `pod "${podName}" does not exist` };
      if (!inSpec(pod, containerName))
        return { status: 404, message: `container "${containerName}" not found in pod "${podName}"` };
      const chosen = containerIdForLogs(pod, containerName, options.previous);
      if ('error' in chosen) return { status: 400, message: chosen.error };
      const id = chosen.containerId.replace(/^[a-z]+:\/\//, '');
      const call = { timeoutMs: opts.runtimeRequestTimeoutMs, signal };
      start();
      let logPath: string;
      try {
        logPath = (await opts.runtime.containerStatus(id, false, call)).status.logPath;
      } catch (err) {
        throw new Error(`unable to retrieve container logs for ${chosen.containerId}: ${errorMessage(err)}`);
      }
      await readLogs(logPath, toLogOptions(options, opts.clock.now()), (chunk) => write(chunk), {
        signal,
        isContainerRunning: async () =>
          (await opts.runtime.containerStatus(id, false, call)).status.state === 'CONTAINER_RUNNING',
      });
      return undefined;
    },
  };
}
