/**
 * The containerd events client against the project's private containerd: a container started and
 * exiting through CRI shows up as TaskStart and TaskExit events for its ID. The pod it makes
 * carries a fresh UID and is removed in after(), whatever happened.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connectRuntime, type RuntimeConnection } from '../../src/cri/connect-runtime.js';
import {
  K8S_NAMESPACE,
  subscribeTaskEvents,
  type TaskEvent,
} from '../../src/cri/containerd-events/subscribe-task-events.js';
import type { PodSandboxConfig } from '../../src/cri/types.js';
import { waitFor } from '../helpers/wait.js';

const endpoint = process.env.CONTAINER_RUNTIME_ENDPOINT ?? 'unix:///run/tskubelet/containerd.sock';
const BUSYBOX = 'docker.io/library/busybox:latest';
const CALL_TIMEOUT_MS = 60_000;

let connection: RuntimeConnection;
let logDir: string;
const sandboxIds: string[] = [];
const containerIds: string[] = [];

before(async () => {
  logDir = mkdtempSync(join(tmpdir(), 'events-it-logs-'));
  connection = await connectRuntime(endpoint, { signal: AbortSignal.timeout(30_000), retryMaxDelayMs: 2000 });
});

after(async () => {
  for (const id of containerIds)
    await connection.runtime.removeContainer(id, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
  for (const id of sandboxIds) {
    await connection.runtime.stopPodSandbox(id, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
    await connection.runtime.removePodSandbox(id, { timeoutMs: CALL_TIMEOUT_MS }).catch(() => undefined);
  }
  connection?.close();
  rmSync(logDir, { recursive: true, force: true });
});

test('a container started through CRI shows as TaskStart then TaskExit (with its exit status)', async () => {
  const events: TaskEvent[] = [];
  let subscriptions = 0;
  const stop = new AbortController();
  const done = subscribeTaskEvents(endpoint, K8S_NAMESPACE, [], (e) => events.push(e), stop.signal, {
    onSubscribe: () => subscriptions++,
  });
  try {
    const uid = randomUUID();
    const name = `events-it-${uid.slice(0, 8)}`;
    const namespace = 'tskubelet-test';
    const sandboxConfig: PodSandboxConfig = {
      metadata: { name, uid, namespace, attempt: 0 },
      hostname: name,
      logDirectory: join(logDir, `${namespace}_${name}_${uid}`),
      portMappings: [],
      labels: { 'io.kubernetes.pod.uid': uid },
      annotations: {},
      linux: { cgroupParent: '', sysctls: {} },
    };
    const sandboxId = await connection.runtime.runPodSandbox(sandboxConfig, '', {
      timeoutMs: 4 * CALL_TIMEOUT_MS,
    });
    sandboxIds.push(sandboxId);
    const containerId = await connection.runtime.createContainer(
      sandboxId,
      {
        metadata: { name: 'exits', attempt: 0 },
        image: { image: BUSYBOX },
        command: ['sh', '-c', 'sleep 0.5; exit 3'],
        args: [],
        workingDir: '',
        envs: [],
        mounts: [],
        labels: {},
        annotations: {},
        logPath: 'exits/0.log',
        stdin: false,
        stdinOnce: false,
        tty: false,
      },
      sandboxConfig,
      { timeoutMs: CALL_TIMEOUT_MS },
    );
    containerIds.push(containerId);
    await connection.runtime.startContainer(containerId, { timeoutMs: CALL_TIMEOUT_MS });

    const mine = () => events.filter((e) => e.containerId === containerId);
    await waitFor(`TaskExit for ${containerId}`, () => mine().some((e) => e.type === 'TaskExit'), 30_000);
    const start = mine().find((e) => e.type === 'TaskStart');
    const exit = mine().find((e) => e.type === 'TaskExit');
    assert.ok(start && start.type === 'TaskStart', `no TaskStart for ${containerId}`);
    assert.ok(start.pid > 0);
    assert.equal(start.namespace, K8S_NAMESPACE);
    assert.ok(exit && exit.type === 'TaskExit');
    assert.equal(exit.exitStatus, 3);
    assert.equal(exit.execId, '');
    assert.equal(exit.pid, start.pid);
    assert.ok(exit.exitedAt instanceof Date && exit.exitedAt.getTime() > Date.now() - 5 * 60_000);
    assert.ok(mine().indexOf(start) < mine().indexOf(exit), 'TaskStart comes before TaskExit');
    // The sandbox's own task started too: only task events of the k8s.io namespace arrive.
    assert.ok(events.some((e) => e.type === 'TaskStart' && e.containerId === sandboxId));
    assert.ok(events.every((e) => e.namespace === K8S_NAMESPACE));
    assert.equal(subscriptions, 1, 'the stream stayed up');
  } finally {
    stop.abort();
    await done;
  }
});
