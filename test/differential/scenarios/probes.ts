/**
 * Probes of every kind (exec, httpGet, tcpSocket, grpc) as liveness, readiness and startup probes,
 * passing and failing. gRPC probes reach a health server the harness runs on the host, through
 * hostNetwork pods (busybox has no gRPC server): SERVING for service "", NOT_SERVING for "down".
 */
import type { Container, Probe } from '../../../src/api/core-v1.js';
import { lit, range, re, type ExpectedEvent } from '../expect.js';
import {
  backOffEvent,
  busybox,
  fieldPathOf,
  podStatus,
  readyConditions,
  running,
  startedEvents,
  terminatedState,
  unreadyConditions,
  type Scenario,
  type ScenarioContext,
} from '../scenario.js';

type Kind = 'exec' | 'http' | 'tcp' | 'grpc';
type ProbeType = 'liveness' | 'readiness' | 'startup';

const PROBER_SOURCES = [
  'pkg/kubelet/prober/prober.go runProbeWithRetries/recordContainerEvent (Unhealthy "<Type> probe failed: <output>")',
  'pkg/kubelet/prober/worker_test.go TestDoProbe, TestFailureThreshold, TestSuccessThreshold',
];

const KIND_SOURCES: Record<Kind, string> = {
  exec: 'test/e2e/common/node/container_probe.go "should be restarted with a exec \\"cat /tmp/health\\" liveness probe" / "should *not* be restarted with a exec \\"cat /tmp/health\\" liveness probe"',
  http: 'test/e2e/common/node/container_probe.go "should be restarted with a /healthz http liveness probe"; pkg/probe/http/http_test.go TestHTTPProbeChecker ("HTTP probe failed with statuscode: %d")',
  tcp: 'test/e2e/common/node/container_probe.go "should *not* be restarted with a tcp:8080 liveness probe"; pkg/probe/tcp/tcp_test.go TestTcpHealthChecker',
  grpc: 'test/e2e/common/node/container_probe.go "should *not* be restarted with a GRPC liveness probe" / "should be restarted with a GRPC liveness probe"; pkg/probe/grpc/grpc_test.go TestGrpcProber ("service unhealthy (responded with %q)")',
};

const TYPE_SOURCES: Record<ProbeType, string> = {
  liveness:
    'pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions ("Container %s failed liveness probe, will be restarted")',
  readiness:
    'test/e2e/common/node/container_probe.go "with readiness probe that fails should never be ready and never restart"',
  startup:
    'test/e2e/common/node/container_probe.go "should be restarted startup probe fails" / "should be ready immediately after startupProbe succeeds"; computePodActions ("failed startup probe, will be restarted")',
};

function handler(kind: Kind, passing: boolean, grpcPort: number): Partial<Probe> {
  switch (kind) {
    case 'exec':
      return { exec: { command: ['cat', '/tmp/health'] } };
    case 'http':
      return { httpGet: { path: passing ? '/healthz' : '/missing', port: 8080 } };
    case 'tcp':
      return { tcpSocket: { port: passing ? 8080 : 8081 } };
    case 'grpc':
      return { grpc: { port: grpcPort, service: passing ? '' : 'down' } };
  }
}

function container(kind: Kind, passing: boolean): Container {
  if (kind === 'exec')
    return busybox('c', passing ? 'touch /tmp/health; exec sleep 3600' : 'exec sleep 3600');
  if (kind === 'grpc') return busybox('c', 'exec sleep 3600');
  return busybox('c', 'mkdir -p /www; echo ok > /www/healthz; exec httpd -f -p 8080 -h /www');
}

/** What upstream's prober puts after "<Type> probe failed: ". */
function failureOutput(kind: Kind): RegExp {
  switch (kind) {
    case 'exec':
      return new RegExp(`^${lit("cat: can't open '/tmp/health': No such file or directory")}\n$`);
    case 'http':
      return /^HTTP probe failed with statuscode: 404$/;
    case 'tcp':
      return /^dial tcp \d+\.\d+\.\d+\.\d+:8081: connect: connection refused$/;
    case 'grpc':
      // The health server runs in the harness's own process: on a loaded machine an answer can come
      // late, and upstream's prober then says so in its own words (grpc.go, "timeout: health rpc did
      // not complete within %v").
      return /^(?:service unhealthy \(responded with "NOT_SERVING"\)|timeout: health rpc did not complete within 1s)$/;
  }
}

const TITLE: Record<ProbeType, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

function unhealthy(kind: Kind, type: ProbeType): ExpectedEvent {
  const out = failureOutput(kind).source.replace(/^\^/, '');
  return {
    type: 'Warning',
    reason: 'Unhealthy',
    fieldPath: fieldPathOf('c'),
    message: re(new RegExp(`^${TITLE[type]} probe failed: ${out}`)),
  };
}

/**
 * httpd may not listen yet when the first probe comes (at once for readiness, on a loaded machine
 * for the others): upstream's prober then reports the refused connection, once or twice.
 */
function notListeningYet(kind: Kind, type: ProbeType): ExpectedEvent[] {
  if (kind !== 'http' && kind !== 'tcp') return [];
  const target = kind === 'http' ? 'Get "http://[\\d.]+:8080/[a-z]+": ' : '';
  return [
    {
      type: 'Warning',
      reason: 'Unhealthy',
      fieldPath: fieldPathOf('c'),
      message: re(
        new RegExp(
          `^${TITLE[type]} probe failed: ${target}dial tcp [\\d.]+:8080: connect: connection refused$`,
        ),
      ),
      optional: true,
    },
  ];
}

function probeScenario(kind: Kind, type: ProbeType, passing: boolean, grpcPort: number): Scenario {
  const probe: Probe = {
    ...handler(kind, passing, grpcPort),
    periodSeconds: 1,
    timeoutSeconds: 1,
    failureThreshold: type === 'startup' ? 2 : 1,
    initialDelaySeconds: type === 'readiness' ? 0 : 1,
  } as Probe;
  const c = container(kind, passing);
  const key = `${type}Probe` as const;
  c[key] = probe;
  const name = `probe-${kind}-${type}-${passing ? 'pass' : 'fail'}`;
  const restarts = !passing && type !== 'readiness';
  const killMessage = `Container c failed ${type} probe, will be restarted`;
  return {
    name,
    area: 'probes',
    sources: [KIND_SOURCES[kind], TYPE_SOURCES[type], ...PROBER_SOURCES],
    spec: { restartPolicy: 'Always', hostNetwork: kind === 'grpc' ? true : undefined, containers: [c] },
    timeoutMs: 90_000,
    short:
      ((kind === 'exec' || kind === 'http') && !passing) ||
      (kind === 'exec' && type === 'liveness') ||
      (kind === 'tcp' && type === 'liveness' && !passing) ||
      (kind === 'grpc' && type === 'readiness' && passing),
    status: (ctx: ScenarioContext) => {
      if (passing)
        return podStatus({
          phase: 'Running',
          conditions: readyConditions(),
          containerStatuses: [running('c')],
        });
      if (type === 'readiness')
        return podStatus({
          phase: 'Running',
          conditions: unreadyConditions(['c']),
          containerStatuses: [running('c', { ready: false, started: true })],
        });
      // Killed (SIGTERM ignored by PID 1, SIGKILL after the 2 s grace period) and running again.
      void ctx;
      return podStatus({
        phase: 'Running',
        conditions: type === 'startup' ? unreadyConditions(['c']) : readyConditions(),
        containerStatuses: [
          running('c', {
            restartCount: range(1, 4),
            ready: type !== 'startup',
            started: type !== 'startup',
            lastState: terminatedState(137, 'Error'),
          }),
        ],
      });
    },
    events: (ctx: ScenarioContext) => [
      ...startedEvents('c'),
      ...(passing ? [] : [unhealthy(kind, type)]),
      ...notListeningYet(kind, type),
      ...(restarts
        ? [
            {
              type: 'Normal' as const,
              reason: 'Killing',
              fieldPath: fieldPathOf('c'),
              message: killMessage,
            },
            backOffEvent(ctx, 'c', { optional: true }),
          ]
        : []),
    ],
  };
}

export function probeScenarios(grpcPort: number): Scenario[] {
  const out: Scenario[] = [];
  for (const kind of ['exec', 'http', 'tcp', 'grpc'] as const)
    for (const type of ['liveness', 'readiness', 'startup'] as const)
      for (const passing of [true, false]) out.push(probeScenario(kind, type, passing, grpcPort));
  return out;
}
