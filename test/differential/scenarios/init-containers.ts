/**
 * Init containers in order, their failures under each restart policy, and sidecars (init containers
 * with restartPolicy Always): started before the regular containers, restarted whatever the pod's
 * policy, stopped after the regular containers end.
 */
import { oneOf, range } from '../expect.js';
import {
  backOffEvent,
  busybox,
  crashLooping,
  fieldPathOf,
  initializedFalse,
  killingEvent,
  podStatus,
  polite,
  readyConditions,
  running,
  sleeper,
  startedEvents,
  terminated,
  terminatedState,
  terminalConditions,
  uninitializedConditions,
  waiting,
  type Scenario,
} from '../scenario.js';

const INIT_E2E = 'test/e2e/common/node/init_container.go';
const SIDECAR_E2E = 'test/e2e_node/container_lifecycle_test.go';
const PHASE_INIT =
  'pkg/kubelet/kubelet_pods_test.go TestPodPhaseWithRestartAlwaysInitContainers, TestPodPhaseWithRestartNeverInitContainers';
const PHASE_SIDECAR =
  'pkg/kubelet/kubelet_pods_test.go TestPodPhaseWithRestartAlwaysRestartableInitContainers';
const READY_INIT =
  'pkg/kubelet/prober/prober_manager.go UpdatePodStatus (a completed init container is ready; a sidecar is ready when running without a readiness probe)';

const sidecar = (name: string, extra = {}): ReturnType<typeof polite> => ({
  ...polite(name, extra),
  restartPolicy: 'Always',
});

export function initContainerScenarios(): Scenario[] {
  return [
    {
      name: 'init-two-then-main-running',
      area: 'init containers',
      sources: [`${INIT_E2E} "should invoke init containers on a RestartAlways pod"`, PHASE_INIT, READY_INIT],
      spec: {
        restartPolicy: 'Always',
        initContainers: [busybox('init1', 'true'), busybox('init2', 'true')],
        containers: [sleeper('c')],
      },
      timeoutMs: 90_000,
      short: true,
      status: () =>
        podStatus({
          phase: 'Running',
          conditions: readyConditions(),
          initContainerStatuses: [
            terminated('init1', 0, 'Completed', { ready: true }),
            terminated('init2', 0, 'Completed', { ready: true }),
          ],
          containerStatuses: [running('c')],
        }),
      events: () => [
        ...startedEvents('init1', { init: true }),
        ...startedEvents('init2', { init: true }),
        ...startedEvents('c'),
      ],
    },
    {
      name: 'init-then-main-succeeds-never',
      area: 'init containers',
      sources: [`${INIT_E2E} "should invoke init containers on a RestartNever pod"`, PHASE_INIT, READY_INIT],
      spec: {
        restartPolicy: 'Never',
        initContainers: [busybox('init1', 'true')],
        containers: [busybox('c', 'true')],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Succeeded',
          conditions: terminalConditions('Succeeded'),
          initContainerStatuses: [terminated('init1', 0, 'Completed', { ready: true })],
          containerStatuses: [terminated('c', 0)],
        }),
      events: () => [...startedEvents('init1', { init: true }), ...startedEvents('c')],
    },
    {
      name: 'init-fails-never',
      area: 'init containers',
      sources: [
        `${INIT_E2E} "should not start app containers and fail the pod if init containers fail on a RestartNever pod"`,
        PHASE_INIT,
      ],
      spec: {
        restartPolicy: 'Never',
        initContainers: [busybox('init1', 'exit 1'), busybox('init2', 'true')],
        containers: [sleeper('c')],
      },
      timeoutMs: 90_000,
      short: true,
      status: () =>
        podStatus({
          phase: 'Failed',
          conditions: terminalConditions('Failed', initializedFalse(['init1', 'init2'])),
          initContainerStatuses: [terminated('init1', 1), waiting('init2', 'PodInitializing')],
          containerStatuses: [waiting('c', 'PodInitializing')],
        }),
      events: () => startedEvents('init1', { init: true }),
    },
    {
      name: 'init-second-fails-never',
      area: 'init containers',
      sources: [
        `${INIT_E2E} "should not start app containers and fail the pod if init containers fail on a RestartNever pod"`,
        PHASE_INIT,
        READY_INIT,
      ],
      spec: {
        restartPolicy: 'Never',
        initContainers: [busybox('init1', 'true'), busybox('init2', 'exit 2')],
        containers: [sleeper('c')],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Failed',
          conditions: terminalConditions('Failed', initializedFalse(['init2'])),
          initContainerStatuses: [
            terminated('init1', 0, 'Completed', { ready: true }),
            terminated('init2', 2),
          ],
          containerStatuses: [waiting('c', 'PodInitializing')],
        }),
      events: () => [...startedEvents('init1', { init: true }), ...startedEvents('init2', { init: true })],
    },
    {
      name: 'init-fails-always',
      area: 'init containers',
      sources: [
        `${INIT_E2E} "should not start app containers if init containers fail on a RestartAlways pod"`,
        PHASE_INIT,
      ],
      spec: {
        restartPolicy: 'Always',
        initContainers: [busybox('init1', 'exit 1')],
        containers: [sleeper('c')],
      },
      timeoutMs: 90_000,
      status: (ctx) =>
        podStatus({
          phase: 'Pending',
          conditions: uninitializedConditions(['init1'], ['c']),
          initContainerStatuses: [
            crashLooping(ctx, 'init1', terminatedState(1), { restartCount: range(1, 3) }),
          ],
          containerStatuses: [waiting('c', 'PodInitializing')],
        }),
      events: (ctx) => [
        ...startedEvents('init1', { init: true }),
        backOffEvent(ctx, 'init1', { init: true }),
      ],
    },
    {
      name: 'sidecar-and-main-running',
      area: 'sidecars',
      sources: [
        `${SIDECAR_E2E} "should launch restartable init containers before the regular containers"`,
        PHASE_SIDECAR,
        READY_INIT,
      ],
      spec: { restartPolicy: 'Always', initContainers: [sidecar('sidecar')], containers: [sleeper('c')] },
      timeoutMs: 90_000,
      short: true,
      status: () =>
        podStatus({
          phase: 'Running',
          conditions: readyConditions(),
          initContainerStatuses: [running('sidecar')],
          containerStatuses: [running('c')],
        }),
      events: () => [...startedEvents('sidecar', { init: true }), ...startedEvents('c')],
    },
    {
      name: 'sidecar-init-main-order',
      area: 'sidecars',
      sources: [
        `${SIDECAR_E2E} "should run both restartable init containers and third init container together"`,
        PHASE_SIDECAR,
        READY_INIT,
      ],
      spec: {
        restartPolicy: 'Always',
        initContainers: [sidecar('sidecar'), busybox('init2', 'true')],
        containers: [sleeper('c')],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Running',
          conditions: readyConditions(),
          initContainerStatuses: [running('sidecar'), terminated('init2', 0, 'Completed', { ready: true })],
          containerStatuses: [running('c')],
        }),
      events: () => [
        ...startedEvents('sidecar', { init: true }),
        ...startedEvents('init2', { init: true }),
        ...startedEvents('c'),
      ],
    },
    {
      name: 'sidecar-stopped-after-main-succeeds',
      area: 'sidecars',
      sources: [
        `${SIDECAR_E2E} "should terminate sidecars in reverse order after all main containers have exited"`,
        'pkg/kubelet/kubelet_pods_test.go TestPodPhaseWithRestartNeverRestartableInitContainers ("restartable init container running, regular container succeeded" → Succeeded)',
      ],
      spec: {
        restartPolicy: 'Never',
        initContainers: [sidecar('sidecar')],
        containers: [busybox('c', 'sleep 1')],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Succeeded',
          conditions: terminalConditions('Succeeded'),
          initContainerStatuses: [terminated('sidecar', 0)],
          containerStatuses: [terminated('c', 0)],
        }),
      events: () => [
        ...startedEvents('sidecar', { init: true }),
        ...startedEvents('c'),
        killingEvent('sidecar', { init: true }),
      ],
    },
    {
      name: 'sidecar-restarted-in-never-pod',
      area: 'sidecars',
      sources: [
        `${SIDECAR_E2E} "should restart a restartable init container that exits" (restartPolicy Never pod)`,
        PHASE_SIDECAR,
        'pkg/kubelet/container/helpers.go ShouldContainerBeRestarted (not sidecar-aware: the exited sidecar of a Never pod shows terminated, not waiting)',
        'pkg/kubelet/kuberuntime/kuberuntime_gc.go (maxPerPodContainer 1: the run before the last may be collected)',
      ],
      spec: {
        restartPolicy: 'Never',
        initContainers: [{ ...busybox('sidecar', 'sleep 4; exit 1'), restartPolicy: 'Always' }],
        containers: [sleeper('c')],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Running',
          conditions: readyConditions(),
          initContainerStatuses: [
            running('sidecar', {
              restartCount: range(1, 4),
              lastState: oneOf(terminatedState(1), {}),
            }),
          ],
          containerStatuses: [running('c')],
        }),
      events: (ctx) => [
        ...startedEvents('sidecar', { init: true }),
        ...startedEvents('c'),
        backOffEvent(ctx, 'sidecar', { init: true, optional: true }),
      ],
    },
    {
      name: 'sidecar-startup-probe-blocks-main',
      area: 'sidecars',
      sources: [
        `${SIDECAR_E2E} "should not launch regular containers until the restartable init container's startup probe succeeds"`,
        'pkg/kubelet/status/generate.go GeneratePodInitializedCondition (a sidecar counts once started)',
      ],
      spec: {
        restartPolicy: 'Always',
        initContainers: [
          sidecar('sidecar', {
            startupProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 60 },
          }),
        ],
        containers: [sleeper('c')],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Pending',
          conditions: uninitializedConditions(['sidecar'], ['sidecar', 'c']),
          initContainerStatuses: [running('sidecar', { started: false, ready: false })],
          containerStatuses: [waiting('c', 'PodInitializing')],
        }),
      events: () => [
        ...startedEvents('sidecar', { init: true }),
        {
          type: 'Warning',
          reason: 'Unhealthy',
          fieldPath: fieldPathOf('sidecar', true),
          message: 'Startup probe failed: ',
        },
      ],
    },
  ];
}
