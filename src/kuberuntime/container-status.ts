/**
 * CRI container and sandbox state read back into the kubelet's terms (upstream:
 * toKubeContainerStatus, convertToKubeContainerStatus, getTerminationMessage,
 * readLastStringFromContainerLogs, determinePodSandboxIPs, ConvertPodStatusToRunningPod).
 */
import type { Dirent } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import type { ContainerState, ContainerStatus, Mount, PodSandboxStatus } from '../cri/types.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { getContainerInfoFromAnnotations, getContainerInfoFromLabels } from './labels.js';
import type { KubeContainerState, KubeContainerStatus, KubePodStatus, RunningPod } from './types.js';

const log = logger('kuberuntime');

/** Upstream's bounds on what a termination message may carry. */
export const MAX_TERMINATION_MESSAGE_BYTES = 4096;
export const MAX_TERMINATION_MESSAGE_LOG_BYTES = 2048;
export const MAX_TERMINATION_MESSAGE_LOG_LINES = 80;
// Enough of a CRI log's tail for 80 lines of ordinary output, without reading a large log whole.
const LOG_TAIL_READ_BYTES = 256 * 1024;

const NS_PER_MS = 1_000_000;

export function toKubeContainerState(state: ContainerState): KubeContainerState {
  switch (state) {
    case 'CONTAINER_CREATED':
      return 'created';
    case 'CONTAINER_RUNNING':
      return 'running';
    case 'CONTAINER_EXITED':
      return 'exited';
    default:
      return 'unknown';
  }
}

export function toKubeContainerStatus(status: ContainerStatus, runtimeName: string): KubeContainerStatus {
  const annotated = getContainerInfoFromAnnotations(status.annotations);
  const labeled = getContainerInfoFromLabels(status.labels);
  const exited = status.state === 'CONTAINER_EXITED';
  return {
    containerID: `${runtimeName}://${status.id}`,
    id: status.id,
    name: labeled.containerName || status.metadata.name,
    state: toKubeContainerState(status.state),
    // Not rounded: two attempts within one millisecond must still sort newest first.
    createdAtMs: status.createdAt / NS_PER_MS,
    // A container past CREATED has been started, whether or not it is still running.
    startedAtMs: status.state !== 'CONTAINER_CREATED' ? Math.floor(status.startedAt / NS_PER_MS) : 0,
    finishedAtMs: exited ? Math.floor(status.finishedAt / NS_PER_MS) : 0,
    exitCode: exited ? status.exitCode : 0,
    image: status.image.image,
    imageRef: status.imageRef,
    hash: annotated.hash,
    restartCount: annotated.restartCount,
    reason: exited ? status.reason : '',
    message: exited ? status.message : '',
    podSandboxId: '',
  };
}

/** The status, with what the container wrote to its termination message file (or its log's tail) appended. */
export async function convertToKubeContainerStatus(
  status: ContainerStatus,
  runtimeName: string,
  podSandboxId: string,
): Promise<KubeContainerStatus> {
  const s = toKubeContainerStatus(status, runtimeName);
  s.podSandboxId = podSandboxId;
  if (status.state !== 'CONTAINER_EXITED') return s;
  const annotated = getContainerInfoFromAnnotations(status.annotations);
  // A container that could not even start has no logs to fall back to.
  const fallbackToLogs =
    annotated.terminationMessagePolicy === 'FallbackToLogsOnError' &&
    s.exitCode !== 0 &&
    s.reason !== 'ContainerCannotRun';
  const found = await getTerminationMessage(status.mounts, annotated.terminationMessagePath, fallbackToLogs);
  const message = found.checkLogs ? await readLastStringFromContainerLogs(status.logPath) : found.message;
  if (message !== '') s.message = s.message !== '' ? `${s.message}: ${message}` : message;
  return s;
}

/** The tail of the file mounted at terminationMessagePath; checkLogs when the logs should be read instead. */
export async function getTerminationMessage(
  mounts: Mount[],
  terminationMessagePath: string,
  fallbackToLogs: boolean,
): Promise<{ message: string; checkLogs: boolean }> {
  if (terminationMessagePath === '') return { message: '', checkLogs: fallbackToLogs };
  const mount = mounts.find((m) => m.containerPath === terminationMessagePath);
  if (!mount) return { message: '', checkLogs: fallbackToLogs };
  try {
    const data = await readTail(mount.hostPath, MAX_TERMINATION_MESSAGE_BYTES);
    return { message: data.toString('utf8'), checkLogs: fallbackToLogs && data.length === 0 };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { message: '', checkLogs: fallbackToLogs };
    return {
      message: `Error on reading termination log ${mount.hostPath}: ${errorMessage(err)}`,
      checkLogs: false,
    };
  }
}

async function readTail(path: string, maxBytes: number): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const length = Math.min(size, maxBytes);
    const buf = Buffer.alloc(length);
    const { bytesRead } = await file.read(buf, 0, length, size - length);
    return buf.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/**
 * The end of a CRI log (`<time> <stream> <P|F> <content>`) for FallbackToLogsOnError, as upstream
 * reads it: the last 80 records of the file (each a line of the file, a partial one counting as
 * one), a full record's content with its newline and a partial one's without, and of that text the
 * last 2048 bytes.
 */
export async function readLastStringFromContainerLogs(logPath: string): Promise<string> {
  let raw: Buffer;
  try {
    raw = await readTail(logPath, LOG_TAIL_READ_BYTES);
  } catch (err) {
    return `Error on reading termination message from logs: ${errorMessage(err)}`;
  }
  const records = raw.toString('utf8').split('\n');
  // The last is empty after the final newline; the first may be cut by the tail read.
  if (records[records.length - 1] === '') records.pop();
  if (raw.length === LOG_TAIL_READ_BYTES) records.shift();
  let text = '';
  for (const record of records.slice(-MAX_TERMINATION_MESSAGE_LOG_LINES)) {
    const m = /^\S+ (?:stdout|stderr) ([PF])(?: (.*))?$/s.exec(record);
    if (!m) continue;
    text += m[1] === 'F' ? `${m[2] ?? ''}\n` : (m[2] ?? '');
  }
  const bytes = Buffer.from(text, 'utf8');
  return bytes.subarray(Math.max(0, bytes.length - MAX_TERMINATION_MESSAGE_LOG_BYTES)).toString('utf8');
}

/** The sandbox's IPs, primary first; none when the runtime reports one that does not parse. */
export function determinePodSandboxIPs(status: PodSandboxStatus): string[] {
  const ips: string[] = [];
  if (!status.network) {
    log.info("Pod Sandbox status doesn't have network information, cannot report IPs", {
      pod: `${status.metadata.namespace}/${status.metadata.name}`,
    });
    return ips;
  }
  // '' when the runtime is not in charge of the IP (host network).
  if (status.network.ip !== '') {
    if (isIP(status.network.ip) === 0) {
      log.info('Pod Sandbox reported an unparseable primary IP', {
        pod: `${status.metadata.namespace}/${status.metadata.name}`,
        IP: status.network.ip,
      });
      return [];
    }
    ips.push(status.network.ip);
  }
  for (const extra of status.network.additionalIps) {
    if (isIP(extra.ip) === 0) {
      log.info('Pod Sandbox reported an unparseable additional IP', {
        pod: `${status.metadata.namespace}/${status.metadata.name}`,
        IP: extra.ip,
      });
      return [];
    }
    ips.push(extra.ip);
  }
  return ips;
}

/** The running containers and all sandboxes of a pod status, as killPod takes them. */
export function convertPodStatusToRunningPod(podStatus: KubePodStatus): RunningPod {
  return {
    uid: podStatus.uid,
    name: podStatus.name,
    namespace: podStatus.namespace,
    sandboxes: podStatus.sandboxStatuses.map((s) => ({
      id: s.id,
      state: s.state === 'SANDBOX_READY' ? 'ready' : 'notready',
      createdAtMs: Math.floor(s.createdAt / NS_PER_MS),
      createdAtNs: s.createdAt,
    })),
    containers: podStatus.containerStatuses
      .filter((c) => c.state === 'running')
      .map((c) => ({
        id: c.id,
        name: c.name,
        image: c.image,
        imageRef: c.imageRef,
        hash: c.hash,
        state: c.state,
        podSandboxId: c.podSandboxId,
      })),
  };
}

/**
 * The restart count to continue from when the runtime has no record of the container (a node
 * reboot may clear the runtime's state): one past the highest `<n>.log` in its log folder, so that
 * a new start does not overwrite an old log.
 */
export async function calcRestartCountByLogDir(dir: string): Promise<number> {
  // Asked on every container's first start, when the folder does not exist yet: the pod's folder,
  // made with its sandbox, is listed first. A readdir of the missing folder would fail with an error
  // and its stack every time, and a synchronous stat would wait on the disk on the event loop.
  let siblings: Dirent[];
  try {
    siblings = await readdir(path.dirname(dir), { withFileTypes: true });
  } catch {
    return 0;
  }
  // By name only: a symlink to a folder counts, as upstream's stat follows it; a file fails below.
  const name = path.basename(dir);
  if (!siblings.some((s) => s.name === name)) return 0;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let restartCount = 0;
  for (const entry of entries) {
    if (entry.isDirectory()) continue;
    const m = /^(\d+)\.log(\..*)?/.exec(entry.name);
    if (!m) continue;
    const count = Number.parseInt(m[1] ?? '', 10) + 1;
    if (Number.isSafeInteger(count) && count > restartCount) restartCount = count;
  }
  return restartCount;
}
