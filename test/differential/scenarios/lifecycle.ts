/**
 * Restart policies with exits 0 and non-zero, several containers, termination messages, OOM kills,
 * activeDeadlineSeconds and QoS classes.
 */
import { range } from '../expect.js';
import {
  backOffEvent,
  busybox,
  crashLooping,
  killingEvent,
  podStatus,
  readyConditions,
  running,
  sleeper,
  startedEvents,
  terminated,
  terminatedState,
  terminalConditions,
  unreadyConditions,
  type Scenario,
} from '../scenario.js';

const PHASE_SOURCES = [
  'pkg/kubelet/kubelet_pods_test.go TestPodPhaseWithRestartAlways, TestPodPhaseWithRestartNever, TestPodPhaseWithRestartOnFailure',
  'test/e2e/common/node/runtime.go "should run with the expected status" (terminate-cmd-rpa/rpof/rpn)',
  'pkg/kubelet/status/generate_test.go TestGenerateContainersReadyCondition, TestGeneratePodReadyCondition, TestGeneratePodInitializedCondition',
];

function restartScenario(policy: 'Always' | 'OnFailure' | 'Never', exitCode: 0 | 1): Scenario {
  const restarts = policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
  const terminal = exitCode === 0 ? 'Succeeded' : 'Failed';
  return {
    name: `restart-${policy.toLowerCase()}-exit-${exitCode}`,
    area: 'restart policy',
    sources: PHASE_SOURCES,
    spec: { restartPolicy: policy, containers: [busybox('c', `exit ${exitCode}`)] },
    timeoutMs: 90_000,
    short: policy !== 'OnFailure',
    status: (ctx) =>
      restarts
        ? podStatus({
            phase: 'Running',
            conditions: unreadyConditions(['c']),
            containerStatuses: [
              crashLooping(ctx, 'c', terminatedState(exitCode), { restartCount: range(1, 3) }),
            ],
          })
        : podStatus({
            phase: terminal,
            conditions: terminalConditions(terminal),
            containerStatuses: [terminated('c', exitCode)],
          }),
    events: (ctx) => [...startedEvents('c'), ...(restarts ? [backOffEvent(ctx, 'c')] : [])],
  };
}

export function lifecycleScenarios(): Scenario[] {
  const out: Scenario[] = [];
  for (const policy of ['Always', 'OnFailure', 'Never'] as const)
    for (const exitCode of [0, 1] as const) out.push(restartScenario(policy, exitCode));

  out.push(
    {
      name: 'restart-never-one-of-two-fails',
      area: 'restart policy',
      sources: [
        'pkg/kubelet/kubelet_pods_test.go TestPodPhaseWithRestartNever ("mixed state #1 with restart never": one running, one failed → Running)',
      ],
      spec: { restartPolicy: 'Never', containers: [sleeper('a'), busybox('b', 'exit 3')] },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Running',
          conditions: unreadyConditions(['b']),
          containerStatuses: [running('a'), terminated('b', 3)],
        }),
      events: () => [...startedEvents('a'), ...startedEvents('b')],
    },
    {
      name: 'restart-onfailure-both-succeed',
      area: 'restart policy',
      sources: [
        'pkg/kubelet/kubelet_pods_test.go TestPodPhaseWithRestartOnFailure ("all succeeded" → Succeeded)',
      ],
      spec: { restartPolicy: 'OnFailure', containers: [busybox('a', 'exit 0'), busybox('b', 'sleep 1')] },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Succeeded',
          conditions: terminalConditions('Succeeded'),
          containerStatuses: [terminated('a', 0), terminated('b', 0)],
        }),
      events: () => [...startedEvents('a'), ...startedEvents('b')],
    },
    {
      name: 'restart-never-exit-42',
      area: 'restart policy',
      sources: [
        'pkg/kubelet/kubelet_pods_test.go TestPodPhaseWithRestartNever ("all failed")',
        'test/e2e/common/node/runtime.go "should run with the expected status"',
      ],
      spec: { restartPolicy: 'Never', containers: [busybox('c', 'exit 42')] },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Failed',
          conditions: terminalConditions('Failed'),
          containerStatuses: [terminated('c', 42)],
        }),
      events: () => startedEvents('c'),
    },
  );

  // Termination messages (test/e2e/common/node/runtime.go, "on terminated container" cases).
  const termSource = (t: string): string => `test/e2e/common/node/runtime.go ${t}`;
  out.push(
    {
      name: 'termmsg-file',
      area: 'termination message',
      sources: [termSource('"should report termination message if TerminationMessagePath is set"')],
      spec: {
        restartPolicy: 'Never',
        containers: [
          busybox('c', 'printf DONE > /dev/termination-custom-log', {
            terminationMessagePath: '/dev/termination-custom-log',
          }),
        ],
      },
      timeoutMs: 90_000,
      short: true,
      status: () =>
        podStatus({
          phase: 'Succeeded',
          conditions: terminalConditions('Succeeded'),
          containerStatuses: [terminated('c', 0, 'Completed', { message: 'DONE' })],
        }),
      events: () => startedEvents('c'),
    },
    {
      name: 'termmsg-fallback-logs-on-error',
      area: 'termination message',
      sources: [
        termSource(
          '"should report termination message from log output if TerminationMessagePolicy FallbackToLogsOnError is set"',
        ),
      ],
      spec: {
        restartPolicy: 'Never',
        containers: [
          busybox('c', 'printf DONE; exit 1', { terminationMessagePolicy: 'FallbackToLogsOnError' }),
        ],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Failed',
          conditions: terminalConditions('Failed'),
          containerStatuses: [terminated('c', 1, 'Error', { message: 'DONE' })],
        }),
      events: () => startedEvents('c'),
    },
    {
      name: 'termmsg-fallback-success-empty',
      area: 'termination message',
      sources: [
        termSource(
          '"should report termination message as empty when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError is set"',
        ),
      ],
      spec: {
        restartPolicy: 'Never',
        containers: [busybox('c', 'printf OK', { terminationMessagePolicy: 'FallbackToLogsOnError' })],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Succeeded',
          conditions: terminalConditions('Succeeded'),
          containerStatuses: [terminated('c', 0)],
        }),
      events: () => startedEvents('c'),
    },
    {
      name: 'termmsg-fallback-file-wins',
      area: 'termination message',
      sources: [
        termSource(
          '"should report termination message from file when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError is set"',
        ),
      ],
      spec: {
        restartPolicy: 'Never',
        containers: [
          busybox('c', 'printf OK > /dev/termination-log; echo logs', {
            terminationMessagePolicy: 'FallbackToLogsOnError',
          }),
        ],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Succeeded',
          conditions: terminalConditions('Succeeded'),
          containerStatuses: [terminated('c', 0, 'Completed', { message: 'OK' })],
        }),
      events: () => startedEvents('c'),
    },
  );

  // OOM: the memory limit's cgroup kills `tail /dev/zero` (it buffers a line that never ends). It
  // waits first, as upstream's own test does ("sleep 5 && dd …"): containerd 1.6 can miss the OOM of
  // a process killed right after its start and report Error (containerd/containerd#8180).
  out.push({
    name: 'oom-killed',
    area: 'oom',
    sources: [
      'test/e2e_node/oomkiller_linux_test.go "The containers terminated by OOM killer should have the reason set to OOMKilled" (exit code 137)',
    ],
    spec: {
      restartPolicy: 'Never',
      containers: [
        busybox('c', 'sleep 5 && exec tail /dev/zero', { resources: { limits: { memory: '20Mi' } } }),
      ],
    },
    timeoutMs: 90_000,
    short: true,
    status: () =>
      podStatus({
        phase: 'Failed',
        conditions: terminalConditions('Failed'),
        qosClass: 'Burstable',
        containerStatuses: [terminated('c', 137, 'OOMKilled')],
      }),
    events: () => startedEvents('c'),
  });

  // activeDeadlineSeconds (pkg/kubelet/active_deadline.go; test/e2e/common/node/pods.go).
  const deadlineSources = [
    'pkg/kubelet/active_deadline.go (reason DeadlineExceeded, "Pod was active on the node longer than the specified deadline")',
    'test/e2e/common/node/pods.go "should allow activeDeadlineSeconds to be updated"',
    'pkg/kubelet/active_deadline_test.go TestActiveDeadlineHandler',
  ];
  const deadlineMessage = 'Pod was active on the node longer than the specified deadline';
  out.push(
    {
      name: 'deadline-exceeded',
      area: 'deadline',
      sources: deadlineSources,
      spec: { restartPolicy: 'Always', activeDeadlineSeconds: 4, containers: [sleeper('c')] },
      timeoutMs: 90_000,
      short: true,
      status: () =>
        podStatus({
          phase: 'Failed',
          reason: 'DeadlineExceeded',
          message: deadlineMessage,
          conditions: terminalConditions('Failed'),
          containerStatuses: [terminated('c', 137, 'Error')],
        }),
      events: () => [
        ...startedEvents('c'),
        { type: 'Normal', reason: 'DeadlineExceeded', fieldPath: '', message: deadlineMessage },
        killingEvent('c'),
      ],
    },
    {
      name: 'deadline-not-reached',
      area: 'deadline',
      sources: deadlineSources,
      spec: { restartPolicy: 'Never', activeDeadlineSeconds: 600, containers: [busybox('c', 'sleep 1')] },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Succeeded',
          conditions: terminalConditions('Succeeded'),
          containerStatuses: [terminated('c', 0)],
        }),
      events: () => startedEvents('c'),
    },
  );

  // QoS classes (pkg/apis/core/v1/helper/qos GetPodQOS; pkg/kubelet/kubelet_pods.go sets status.qosClass).
  const qosSources = [
    'pkg/apis/core/helper/qos/qos_test.go TestGetPodQOS',
    'pkg/kubelet/kubelet_pods.go generateAPIPodStatus',
  ];
  out.push(
    {
      name: 'qos-guaranteed',
      area: 'qos',
      sources: qosSources,
      short: true,
      spec: {
        containers: [sleeper('c', { resources: { limits: { cpu: '100m', memory: '64Mi' } } })],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Running',
          qosClass: 'Guaranteed',
          conditions: readyConditions(),
          containerStatuses: [running('c')],
        }),
      events: () => startedEvents('c'),
    },
    {
      name: 'qos-burstable-two-containers',
      area: 'qos',
      sources: qosSources,
      spec: {
        containers: [sleeper('a', { resources: { requests: { cpu: '50m' } } }), sleeper('b')],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({
          phase: 'Running',
          qosClass: 'Burstable',
          conditions: readyConditions(),
          containerStatuses: [running('a'), running('b')],
        }),
      events: () => [...startedEvents('a'), ...startedEvents('b')],
    },
  );
  return out;
}
