/**
 * Image errors (never-pull, invalid names, an image missing from a loopback registry), volume and
 * configuration errors (missing configMaps and secrets, as volumes and as environment), and pods the
 * kubelet rejects at admission.
 */
import { lit, re, type ExpectedEvent } from '../expect.js';
import {
  busybox,
  fieldPathOf,
  podStatus,
  readyConditions,
  running,
  sleeper,
  startedEvents,
  unreadyConditions,
  waiting,
  type Scenario,
} from '../scenario.js';

const IMAGE_MANAGER =
  'pkg/kubelet/images/image_manager.go EnsureImageExists; pkg/kubelet/images/image_manager_test.go TestParallelPuller/TestSerializedPuller';
const START_ERR =
  'pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer (Warning Failed "Error: <reason>")';
const RUNTIME_E2E = 'test/e2e/common/node/runtime.go';

const failedEvent = (message: string | ReturnType<typeof re>): ExpectedEvent => ({
  type: 'Warning',
  reason: 'Failed',
  fieldPath: fieldPathOf('c'),
  message,
});

function imageErrorScenario(
  name: string,
  image: string,
  reason: string,
  eventReason: string,
  message: string,
  sources: string[],
  short = false,
): Scenario {
  return {
    name,
    area: 'images',
    sources,
    spec: { containers: [{ ...sleeper('c'), image, imagePullPolicy: 'Never' }] },
    timeoutMs: 90_000,
    short,
    status: () =>
      podStatus({
        phase: 'Pending',
        conditions: unreadyConditions(['c']),
        containerStatuses: [waiting('c', reason, message, { image })],
      }),
    events: () => [
      { type: 'Warning', reason: eventReason, fieldPath: fieldPathOf('c'), message },
      failedEvent(`Error: ${reason}`),
    ],
  };
}

/** The configMap and secret the volume and env scenarios read. */
export function configObjects(namespace: string): Array<{ resource: string; obj: Record<string, unknown> }> {
  return [
    { resource: 'configmaps', obj: { metadata: { name: 'present', namespace }, data: { key: 'value' } } },
    {
      resource: 'secrets',
      obj: {
        metadata: { name: 'present', namespace },
        data: { key: Buffer.from('value').toString('base64') },
      },
    },
  ];
}

export function imageScenarios(registryHost: string): Scenario[] {
  const missing = `${registryHost}/tsk/missing:v1`;
  return [
    imageErrorScenario(
      'image-never-pull-absent',
      'tsk/absent:v1',
      'ErrImageNeverPull',
      'ErrImageNeverPull',
      'Container image "tsk/absent:v1" is not present with pull policy of Never',
      [IMAGE_MANAGER, START_ERR, `${RUNTIME_E2E} "should not be able to pull image from invalid registry"`],
      true,
    ),
    imageErrorScenario(
      'image-invalid-uppercase',
      'Invalid_Image',
      'InvalidImageName',
      'InspectFailed',
      'Failed to apply default image tag "Invalid_Image": couldn\'t parse image name "Invalid_Image": invalid reference format: repository name (library/Invalid_Image) must be lowercase',
      [IMAGE_MANAGER, START_ERR, 'pkg/kubelet/images/image_manager.go applyDefaultImageTag'],
    ),
    imageErrorScenario(
      'image-invalid-format',
      'bad::image',
      'InvalidImageName',
      'InspectFailed',
      'Failed to apply default image tag "bad::image": couldn\'t parse image name "bad::image": invalid reference format',
      [IMAGE_MANAGER, START_ERR, 'pkg/kubelet/images/image_manager.go applyDefaultImageTag'],
    ),
    {
      name: 'image-never-pull-present',
      area: 'images',
      sources: [IMAGE_MANAGER, `${RUNTIME_E2E} (image present: "already present on machine")`],
      spec: { containers: [{ ...sleeper('c'), imagePullPolicy: 'Never' }] },
      timeoutMs: 90_000,
      status: () =>
        podStatus({ phase: 'Running', conditions: readyConditions(), containerStatuses: [running('c')] }),
      events: () => startedEvents('c'),
    },
    {
      name: 'image-missing-from-registry',
      area: 'images',
      sources: [
        IMAGE_MANAGER,
        START_ERR,
        `${RUNTIME_E2E} "should not be able to pull image from invalid registry" / "should not be able to pull from private registry without secret"`,
        'pkg/kubelet/images/image_manager.go evalCRIPullErr, "Back-off pulling image %q"',
      ],
      spec: { containers: [{ ...sleeper('c'), image: missing, imagePullPolicy: 'Always' }] },
      timeoutMs: 90_000,
      short: true,
      status: () =>
        podStatus({
          phase: 'Pending',
          conditions: unreadyConditions(['c']),
          containerStatuses: [
            waiting('c', 'ImagePullBackOff', `Back-off pulling image "${missing}"`, { image: missing }),
          ],
        }),
      events: () => [
        {
          type: 'Normal',
          reason: 'Pulling',
          fieldPath: fieldPathOf('c'),
          message: `Pulling image "${missing}"`,
        },
        failedEvent(
          re(
            new RegExp(
              `^Failed to pull image "${lit(missing)}": rpc error: code = NotFound desc = failed to pull and unpack image "${lit(missing)}": failed to resolve reference "${lit(missing)}": ${lit(missing)}: not found$`,
            ),
          ),
        ),
        failedEvent('Error: ErrImagePull'),
        failedEvent('Error: ImagePullBackOff'),
        {
          type: 'Normal',
          reason: 'BackOff',
          fieldPath: fieldPathOf('c'),
          message: `Back-off pulling image "${missing}"`,
        },
      ],
    },
  ];
}

const VOLUME_SOURCES = [
  'pkg/kubelet/volumemanager/reconciler (MountVolume.SetUp failed for volume %q : %v)',
  'pkg/kubelet/configmap/configmap_manager.go, pkg/kubelet/secret/secret_manager.go (NotFound for resource "configmap"/"secret")',
  'test/e2e/common/storage/configmap_volume.go "Should fail non-optional pod creation due to configMap object does not exist"',
];
const ENV_SOURCES = [
  'pkg/kubelet/kubelet_pods.go makeEnvironmentVariables ("couldn\'t find key %v in ConfigMap %v/%v")',
  'pkg/kubelet/kubelet_pods_test.go TestMakeEnvironmentVariables',
  'test/e2e/common/node/configmap.go "should fail to create ConfigMap with empty key"; kuberuntime_container.go startContainer (CreateContainerConfigError)',
];

function mountFailure(name: string, volume: Record<string, unknown>, message: string): Scenario {
  return {
    name,
    area: 'volumes',
    sources: VOLUME_SOURCES,
    spec: {
      volumes: [{ name: 'vol', ...volume }] as never,
      containers: [sleeper('c', { volumeMounts: [{ name: 'vol', mountPath: '/vol' }] })],
    },
    timeoutMs: 60_000,
    short: name.includes('configmap'),
    status: () =>
      podStatus({
        phase: 'Pending',
        podIP: false,
        conditions: unreadyConditions(['c'], 'False'),
        containerStatuses: [waiting('c', 'ContainerCreating')],
      }),
    events: () => [
      {
        type: 'Warning',
        reason: 'FailedMount',
        fieldPath: '',
        message: `MountVolume.SetUp failed for volume "vol" : ${message}`,
      },
    ],
  };
}

function configError(name: string, env: Record<string, unknown>, message: string, short = false): Scenario {
  return {
    name,
    area: 'volumes',
    sources: ENV_SOURCES,
    spec: { containers: [sleeper('c', env)] },
    timeoutMs: 60_000,
    short,
    status: () =>
      podStatus({
        phase: 'Pending',
        conditions: unreadyConditions(['c']),
        containerStatuses: [waiting('c', 'CreateContainerConfigError', message)],
      }),
    events: () => [startedEvents('c')[0]!, failedEvent(`Error: ${message}`)],
  };
}

export function volumeScenarios(namespace: string): Scenario[] {
  return [
    mountFailure(
      'volume-configmap-missing',
      { configMap: { name: 'missing' } },
      'configmap "missing" not found',
    ),
    mountFailure(
      'volume-secret-missing',
      { secret: { secretName: 'missing' } },
      'secret "missing" not found',
    ),
    {
      name: 'volume-configmap-optional-missing',
      area: 'volumes',
      sources: [
        'test/e2e/common/storage/configmap_volume.go "optional updates should be reflected in volume"',
      ],
      spec: {
        volumes: [{ name: 'vol', configMap: { name: 'missing', optional: true } }] as never,
        containers: [sleeper('c', { volumeMounts: [{ name: 'vol', mountPath: '/vol' }] })],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({ phase: 'Running', conditions: readyConditions(), containerStatuses: [running('c')] }),
      events: () => startedEvents('c'),
    },
    configError(
      'env-configmap-missing',
      { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing', key: 'key' } } }] },
      'configmap "missing" not found',
      true,
    ),
    configError(
      'env-secret-missing',
      { env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'missing', key: 'key' } } }] },
      'secret "missing" not found',
    ),
    configError(
      'env-configmap-key-missing',
      { env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'present', key: 'nokey' } } }] },
      `couldn't find key nokey in ConfigMap ${namespace}/present`,
    ),
    configError(
      'env-secret-key-missing',
      { env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'present', key: 'nokey' } } }] },
      `couldn't find key nokey in Secret ${namespace}/present`,
    ),
    configError(
      'envfrom-configmap-missing',
      { envFrom: [{ configMapRef: { name: 'missing' } }] },
      'configmap "missing" not found',
    ),
    {
      name: 'env-configmap-present',
      area: 'volumes',
      sources: ['test/e2e/common/node/configmap.go "should be consumable via environment variable"'],
      spec: {
        containers: [
          busybox('c', 'test "$X" = value && exec sleep 3600', {
            env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'present', key: 'key' } } }],
          }),
        ],
      },
      timeoutMs: 90_000,
      status: () =>
        podStatus({ phase: 'Running', conditions: readyConditions(), containerStatuses: [running('c')] }),
      events: () => startedEvents('c'),
    },
  ];
}

const REJECT =
  'pkg/kubelet/kubelet.go rejectPod (Warning <reason> <message>; status Failed, "Pod was rejected: <message>")';
const PREDICATE = 'pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler.Admit';

function rejected(
  name: string,
  spec: Partial<Scenario['spec']>,
  reason: string,
  message: string | RegExp,
  sources: string[],
  short = false,
): Scenario {
  const msg = typeof message === 'string' ? message : undefined;
  return {
    name,
    area: 'admission',
    sources: [REJECT, ...sources],
    spec: { containers: [sleeper('c')], ...spec },
    timeoutMs: 45_000,
    short,
    status: () => ({
      phase: 'Failed',
      reason,
      message:
        msg !== undefined
          ? `Pod was rejected: ${msg}`
          : re(new RegExp(`^Pod was rejected: ${(message as RegExp).source}$`)),
      startTime: '<time>',
      // The kubelet's patch clears it (v1.28's bare status); the v1.32 test API server backfills it.
      qosClass: spec.containers?.[0]?.resources ? 'Burstable' : 'BestEffort',
    }),
    events: () => [
      {
        type: 'Warning',
        reason,
        fieldPath: '',
        message: msg !== undefined ? msg : re(new RegExp(`^${(message as RegExp).source}$`)),
      },
    ],
  };
}

export function admissionScenarios(): Scenario[] {
  return [
    rejected(
      'admit-node-selector',
      { nodeSelector: { 'tsk.example/disk': 'ssd' } },
      'NodeAffinity',
      // v1.30's Error() is "Predicate %s failed"; the description was added in v1.31 (kubernetes#125498).
      'Predicate NodeAffinity failed',
      [
        PREDICATE,
        'pkg/kubelet/lifecycle/predicate.go PredicateFailureError.Error ("Predicate %s failed", v1.30)',
        'pkg/kubelet/kubelet_test.go TestHandleNodeSelector',
      ],
      true,
    ),
    rejected(
      'admit-out-of-cpu',
      { containers: [sleeper('c', { resources: { requests: { cpu: '1000' } } })] },
      'OutOfcpu',
      /Node didn't have enough resource: cpu, requested: 1000000, used: \d+, capacity: \d+/,
      [PREDICATE, 'pkg/kubelet/kubelet_test.go TestHandleMemExceeded (OutOfmemory; the same for cpu)'],
    ),
    rejected(
      'admit-os-field',
      { os: { name: 'windows' } },
      'PodOSNotSupported',
      "Failed to admit pod as the OS field doesn't match node OS",
      [PREDICATE, 'pkg/kubelet/lifecycle/predicate_test.go TestRejectPodAdmissionBasedOnOSField'],
    ),
    {
      // The OS check reads the pod's own kubernetes.io/os label (rejectPodAdmissionBasedOnOSSelector).
      ...rejected(
        'admit-os-label',
        {},
        'PodOSSelectorNodeLabelDoesNotMatch',
        "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
        [PREDICATE, 'pkg/kubelet/lifecycle/predicate_test.go TestRejectPodAdmissionBasedOnOSSelector'],
      ),
      metadata: { labels: { 'kubernetes.io/os': 'windows' } },
    },
    rejected(
      'admit-os-node-selector',
      { nodeSelector: { 'kubernetes.io/os': 'windows' } },
      'NodeAffinity',
      'Predicate NodeAffinity failed',
      [
        PREDICATE,
        'pkg/kubelet/lifecycle/predicate.go generalFilter (a nodeSelector on the OS label is node affinity)',
      ],
    ),
    rejected(
      'admit-unsafe-sysctl',
      { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '65536' }] } },
      'SysctlForbidden',
      'forbidden sysctl: "kernel.msgmax" not allowlisted',
      [
        'pkg/kubelet/sysctl/allowlist.go patternAllowlist.Admit',
        'pkg/kubelet/sysctl/allowlist_test.go TestAllowlist',
      ],
    ),
  ];
}
