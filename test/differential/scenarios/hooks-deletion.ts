/**
 * postStart and preStop hooks, passing and failing, and the timing of graceful deletion: the pod
 * leaves the API once its containers stopped, after its grace period when they ignore SIGTERM.
 */
import {
  busybox,
  fieldPathOf,
  killingEvent,
  podStatus,
  polite,
  readyConditions,
  running,
  sleeper,
  startedEvents,
  terminated,
  terminalConditions,
  type Scenario,
} from '../scenario.js';
import type { ExpectedEvent } from '../expect.js';

const HOOK_E2E = 'test/e2e/common/node/lifecycle_hook.go';
const START_CONTAINER =
  'pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer (FailedPostStartHook "PostStartHook failed", then killContainer with message "FailedPostStartHook")';
const PRESTOP =
  "pkg/kubelet/kuberuntime/kuberuntime_container.go executePreStopHook (FailedPreStopHook with the handler's message)";
const HANDLER_MSG =
  'pkg/kubelet/lifecycle/handlers.go HandlerRunner.Run ("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q")';
const DELETION =
  'test/e2e/common/node/pods.go "should be submitted and removed"; pkg/kubelet/status/status_manager.go canBeDeleted/syncPod (the kubelet deletes with grace 0 once containers stopped)';

const isRunning = (p: { status?: { phase?: string } }): boolean => p.status?.phase === 'Running';

function postStartFailed(): ExpectedEvent[] {
  return [
    {
      type: 'Warning',
      reason: 'FailedPostStartHook',
      fieldPath: fieldPathOf('c'),
      message: 'PostStartHook failed',
    },
    killingEvent('c', { message: 'FailedPostStartHook' }),
  ];
}

export function hookAndDeletionScenarios(): Scenario[] {
  return [
    {
      name: 'hook-poststart-exec-ok',
      area: 'hooks',
      sources: [`${HOOK_E2E} "should execute poststart exec hook properly"`],
      spec: {
        containers: [
          sleeper('c', {
            lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo hi > /tmp/hook'] } } },
          }),
        ],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({ phase: 'Running', conditions: readyConditions(), containerStatuses: [running('c')] }),
      events: () => startedEvents('c'),
    },
    {
      name: 'hook-poststart-exec-fails',
      area: 'hooks',
      sources: [START_CONTAINER, HANDLER_MSG],
      spec: {
        restartPolicy: 'Never',
        containers: [
          sleeper('c', { lifecycle: { postStart: { exec: { command: ['sh', '-c', 'exit 1'] } } } }),
        ],
      },
      timeoutMs: 90_000,
      short: true,
      status: () =>
        podStatus({
          phase: 'Failed',
          conditions: terminalConditions('Failed'),
          containerStatuses: [terminated('c', 137)],
        }),
      events: () => [...startedEvents('c'), ...postStartFailed()],
    },
    {
      name: 'hook-poststart-http-fails',
      area: 'hooks',
      sources: [
        START_CONTAINER,
        `${HOOK_E2E} "should execute poststart http hook properly" (here to a closed port)`,
      ],
      spec: {
        restartPolicy: 'Never',
        containers: [sleeper('c', { lifecycle: { postStart: { httpGet: { path: '/start', port: 9999 } } } })],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Failed',
          conditions: terminalConditions('Failed'),
          containerStatuses: [terminated('c', 137)],
        }),
      events: () => [...startedEvents('c'), ...postStartFailed()],
    },
    {
      name: 'hook-prestop-exec-fails',
      area: 'hooks',
      sources: [PRESTOP, HANDLER_MSG, DELETION],
      spec: {
        terminationGracePeriodSeconds: 2,
        containers: [sleeper('c', { lifecycle: { preStop: { exec: { command: ['sh', '-c', 'exit 1'] } } } })],
      },
      deletion: { when: isRunning, goneAfterMs: { min: 1_500, max: 25_000 } },
      timeoutMs: 90_000,
      short: true,
      events: () => [
        ...startedEvents('c'),
        killingEvent('c'),
        // The handler's message stays in the log: "do not record the message in the event so that
        // secrets won't leak from the server" (executePreStopHook).
        {
          type: 'Warning',
          reason: 'FailedPreStopHook',
          fieldPath: fieldPathOf('c'),
          message: 'PreStopHook failed',
        },
      ],
    },
    {
      name: 'hook-prestop-sleeps-3s',
      area: 'hooks',
      sources: [`${HOOK_E2E} "should execute prestop exec hook properly"`, PRESTOP, DELETION],
      spec: {
        terminationGracePeriodSeconds: 15,
        containers: [polite('c', { lifecycle: { preStop: { exec: { command: ['sleep', '3'] } } } })],
      },
      deletion: { when: isRunning, goneAfterMs: { min: 3_000, max: 25_000 } },
      timeoutMs: 90_000,
      events: () => [...startedEvents('c'), killingEvent('c')],
    },
    {
      name: 'delete-sigterm-ignored',
      area: 'deletion',
      sources: [
        DELETION,
        'pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer (SIGKILL when the grace period ends)',
      ],
      spec: { terminationGracePeriodSeconds: 3, containers: [sleeper('c')] },
      short: true,
      deletion: { when: isRunning, goneAfterMs: { min: 2_500, max: 25_000 } },
      timeoutMs: 90_000,
      events: () => [...startedEvents('c'), killingEvent('c')],
    },
    {
      name: 'delete-sigterm-honoured',
      area: 'deletion',
      sources: [DELETION],
      // Gone before its 30 s grace period ends: the container stopped at SIGTERM (the bound allows
      // for a loaded machine).
      spec: { terminationGracePeriodSeconds: 30, containers: [polite('c')] },
      deletion: { when: isRunning, goneAfterMs: { min: 0, max: 26_000 } },
      timeoutMs: 90_000,
      events: () => [...startedEvents('c'), killingEvent('c')],
    },
    {
      name: 'delete-grace-override',
      area: 'deletion',
      sources: [
        DELETION,
        "pkg/kubelet/pod_workers.go (a shorter grace period from the deletion overrides the pod's)",
      ],
      spec: { terminationGracePeriodSeconds: 60, containers: [sleeper('c')] },
      deletion: { when: isRunning, gracePeriodSeconds: 1, goneAfterMs: { min: 500, max: 25_000 } },
      timeoutMs: 90_000,
      events: () => [...startedEvents('c'), killingEvent('c')],
    },
    {
      name: 'delete-succeeded-pod',
      area: 'deletion',
      sources: [DELETION, 'pkg/kubelet/status/status_manager.go canBeDeleted (nothing left running)'],
      spec: { restartPolicy: 'Never', containers: [busybox('c', 'true')] },
      deletion: {
        when: (p) => p.status?.phase === 'Succeeded',
        goneAfterMs: { min: 0, max: 20_000 },
      },
      timeoutMs: 90_000,
      events: () => startedEvents('c'),
    },
    {
      name: 'delete-two-containers',
      area: 'deletion',
      sources: [DELETION, 'pkg/kubelet/kuberuntime/kuberuntime_manager.go killContainersWithSyncResult'],
      spec: { terminationGracePeriodSeconds: 2, containers: [sleeper('a'), polite('b')] },
      deletion: { when: isRunning, goneAfterMs: { min: 1_500, max: 25_000 } },
      timeoutMs: 90_000,
      events: () => [...startedEvents('a'), ...startedEvents('b'), killingEvent('a'), killingEvent('b')],
    },
  ];
}
