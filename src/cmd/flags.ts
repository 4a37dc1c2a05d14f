/**
 * The kubelet's command line, parsed the way upstream's pflag does: `--flag=value`, `--flag value`,
 * booleans as `--flag` or `--flag=false`, shorthands (`-v 2`, `-v=2`, `-v2`, `-h`), `_` accepted
 * for `-` in names, and `--` ending the flags. Errors use pflag's wording, so each names its flag.
 *
 * Flags come in two kinds, as upstream: those that only exist as flags (`KubeletFlags`: paths and
 * identities that differ per node) and those that set a KubeletConfiguration field. The latter
 * override the --config file; upstream marks them deprecated in favour of the file and so do we.
 */
import { KubeletError } from '../lib/errors.js';
import { DurationError, parseGoDurationMs } from '../lib/go-duration.js';
import { parseReservedMemoryFlag, type MemoryReservation } from '../cm/memorymanager/reserved-memory.js';
import type { NodeTaint, TaintEffect } from './kubelet-configuration.js';

/** Settings that exist only as flags (upstream's KubeletFlags). */
export interface KubeletFlags {
  /** --config: the KubeletConfiguration file; '' for none. */
  kubeletConfigFile: string;
  /** --config-dir: a folder of `*.conf` drop-ins merged over the --config file; '' for none. */
  kubeletDropinConfigDirectory: string;
  /** --kubeconfig: '' runs standalone. */
  kubeConfig: string;
  /** --bootstrap-kubeconfig: where to ask for a client certificate when --kubeconfig has none; '' for none. */
  bootstrapKubeconfig: string;
  /** --cloud-provider: '' or 'external' (the in-tree providers are gone, as in upstream 1.30). */
  cloudProvider: string;
  hostnameOverride: string;
  /** --node-ip, as given: one address or a comma-separated dual-stack pair. */
  nodeIP: string;
  rootDirectory: string;
  certDirectory: string;
  nodeLabels: Record<string, string>;
  podInfraContainerImage: string;
  imageCredentialProviderConfig: string;
  imageCredentialProviderBinDir: string;
  lockFilePath: string;
  exitOnLockContention: boolean;
  /** --max-parallel-pod-starts (tskubelet only): undefined for the default, 4 per CPU; 0 for no bound. */
  maxParallelPodStarts: number | undefined;
  /** --max-connections-per-listener (tskubelet only): undefined for the default; 0 for no bound. */
  maxConnectionsPerListener: number | undefined;
  /** --max-streaming-sessions (tskubelet only): undefined for the default; 0 for no bound. */
  maxStreamingSessions: number | undefined;
  /** --node-page-group (tskubelet only): a group whose members may read the node page besides root; '' for none. */
  nodePageGroup: string;
  /** --node-page-max-subscribers (tskubelet only): live feeds of the node page open at once. */
  nodePageMaxSubscribers: number;
  /** --node-page-max-log-follows (tskubelet only): container logs followed through the node page at once. */
  nodePageMaxLogFollows: number;
  help: boolean;
  /** --version: false, true, or 'raw'. */
  version: boolean | 'raw';
}

export const DEFAULT_ROOT_DIRECTORY = '/var/lib/kubelet';
/** Each live feed may hold up to 4 MiB unread before it is cut off: 16 bound that to 64 MiB. */
export const DEFAULT_NODE_PAGE_MAX_SUBSCRIBERS = 16;
/** Each follow holds a file watcher and asks the runtime about its container every second. */
export const DEFAULT_NODE_PAGE_MAX_LOG_FOLLOWS = 16;
/** The pause image a 1.30 kubelet names by default; containerd's own sandbox_image decides what runs. */
export const DEFAULT_POD_INFRA_CONTAINER_IMAGE = 'registry.k8s.io/pause:3.9';

export function defaultKubeletFlags(): KubeletFlags {
  return {
    kubeletConfigFile: '',
    kubeletDropinConfigDirectory: '',
    kubeConfig: '',
    bootstrapKubeconfig: '',
    cloudProvider: '',
    hostnameOverride: '',
    nodeIP: '',
    rootDirectory: DEFAULT_ROOT_DIRECTORY,
    certDirectory: `${DEFAULT_ROOT_DIRECTORY}/pki`,
    nodeLabels: {},
    podInfraContainerImage: DEFAULT_POD_INFRA_CONTAINER_IMAGE,
    imageCredentialProviderConfig: '',
    imageCredentialProviderBinDir: '',
    lockFilePath: '',
    exitOnLockContention: false,
    maxParallelPodStarts: undefined,
    maxConnectionsPerListener: undefined,
    maxStreamingSessions: undefined,
    nodePageGroup: '',
    nodePageMaxSubscribers: DEFAULT_NODE_PAGE_MAX_SUBSCRIBERS,
    nodePageMaxLogFollows: DEFAULT_NODE_PAGE_MAX_LOG_FOLLOWS,
    help: false,
    version: false,
  };
}

type FlagKind =
  | 'string'
  | 'bool'
  | 'int32'
  | 'int64'
  | 'duration'
  | 'stringSlice'
  | 'mapStringString'
  | 'langleMap'
  | 'mapStringBool'
  | 'headerMultimap'
  | 'labels'
  | 'taints'
  | 'reservedMemory'
  | 'vmodule'
  | 'version';

export type FlagGroup =
  | 'General'
  | 'Static pods'
  | 'Container runtime'
  | 'Node'
  | 'Kubelet server'
  | 'Authentication and authorization'
  | 'Resources, cgroups and eviction'
  | 'Images and logs'
  | 'Logging';

const GROUP_ORDER: readonly FlagGroup[] = [
  'General',
  'Static pods',
  'Container runtime',
  'Node',
  'Kubelet server',
  'Authentication and authorization',
  'Resources, cgroups and eviction',
  'Images and logs',
  'Logging',
];

interface FlagSpecBase {
  name: string;
  shorthand?: string;
  kind: FlagKind;
  group: FlagGroup;
  usage: string;
  /** The default as help shows it. */
  defaultText?: string;
}

/** A flag that sets a KubeletFlags field. */
interface FlagOnlySpec extends FlagSpecBase {
  flagsKey: keyof KubeletFlags;
}

/** A flag that sets a KubeletConfiguration field (dotted path into the file's shape). */
interface ConfigFlagSpec extends FlagSpecBase {
  field: string;
}

export type FlagSpec = FlagOnlySpec | ConfigFlagSpec;

const CONFIG_FLAG_DEPRECATION =
  "This parameter should be set via the config file specified by the Kubelet's --config flag. " +
  'See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.';

// Config-backed flags upstream keeps without a deprecation notice.
const NOT_DEPRECATED = new Set(['v', 'vmodule', 'log-flush-frequency', 'provider-id']);

const f = (s: FlagOnlySpec): FlagOnlySpec => s;
const c = (s: ConfigFlagSpec): ConfigFlagSpec => s;

/** Every flag this kubelet accepts. docs/flags.md lists the same, with their config fields. */
export const FLAG_SPECS: readonly FlagSpec[] = [
  // General
  f({
    name: 'help',
    shorthand: 'h',
    kind: 'bool',
    group: 'General',
    flagsKey: 'help',
    usage: 'help for tskubelet',
  }),
  f({
    name: 'version',
    kind: 'version',
    group: 'General',
    flagsKey: 'version',
    usage: 'Print version information and quit; --version=raw prints more detail',
  }),
  f({
    name: 'config',
    kind: 'string',
    group: 'General',
    flagsKey: 'kubeletConfigFile',
    usage:
      'The Kubelet will load its initial configuration from this file (a KubeletConfiguration, YAML or JSON). Relative paths start at the current working directory. Command-line flags override configuration from this file.',
  }),
  f({
    name: 'config-dir',
    kind: 'string',
    group: 'General',
    flagsKey: 'kubeletDropinConfigDirectory',
    usage:
      'Path to a directory of drop-in KubeletConfiguration files (*.conf, applied in lexical order) that override the --config file. Maps merge, lists and other values replace.',
  }),
  f({
    name: 'kubeconfig',
    kind: 'string',
    group: 'General',
    flagsKey: 'kubeConfig',
    usage:
      'Path to a kubeconfig file, specifying how to connect to the API server. Providing --kubeconfig enables API server mode, omitting --kubeconfig enables standalone mode.',
  }),
  f({
    name: 'bootstrap-kubeconfig',
    kind: 'string',
    group: 'General',
    flagsKey: 'bootstrapKubeconfig',
    usage:
      'Path to a kubeconfig file used to get a client certificate for the kubelet when the file given by --kubeconfig does not exist.',
  }),
  f({
    name: 'root-dir',
    kind: 'string',
    group: 'General',
    flagsKey: 'rootDirectory',
    defaultText: DEFAULT_ROOT_DIRECTORY,
    usage: 'Directory path for managing kubelet files (volume mounts, etc).',
  }),
  f({
    name: 'cert-dir',
    kind: 'string',
    group: 'General',
    flagsKey: 'certDirectory',
    defaultText: `${DEFAULT_ROOT_DIRECTORY}/pki`,
    usage:
      'The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.',
  }),
  f({
    name: 'lock-file',
    kind: 'string',
    group: 'General',
    flagsKey: 'lockFilePath',
    usage: 'The path to a file for the kubelet to use as a lock file.',
  }),
  f({
    name: 'exit-on-lock-contention',
    kind: 'bool',
    group: 'General',
    flagsKey: 'exitOnLockContention',
    usage: 'Whether the kubelet should exit upon lock-file contention.',
  }),
  c({
    name: 'sync-frequency',
    kind: 'duration',
    group: 'General',
    field: 'syncFrequency',
    defaultText: '1m0s',
    usage: 'Max period between synchronizing running containers and config.',
  }),
  c({
    name: 'runtime-request-timeout',
    kind: 'duration',
    group: 'Container runtime',
    field: 'runtimeRequestTimeout',
    defaultText: '2m0s',
    usage: 'Timeout of all runtime requests except long running requests (pull, logs, exec and attach).',
  }),
  c({
    name: 'feature-gates',
    kind: 'mapStringBool',
    group: 'General',
    field: 'featureGates',
    usage: 'A set of key=value pairs that describe feature gates for alpha/experimental features.',
  }),
  c({
    name: 'runonce',
    kind: 'bool',
    group: 'General',
    field: 'runOnce',
    usage:
      'If true, exit after spawning pods from static pod files or remote urls. Exclusive with --enable-server.',
  }),

  // Static pods
  c({
    name: 'pod-manifest-path',
    kind: 'string',
    group: 'Static pods',
    field: 'staticPodPath',
    usage:
      'Path to the directory containing static pod files to run, or the path to a single static pod file. Files starting with dots will be ignored.',
  }),
  c({
    name: 'file-check-frequency',
    kind: 'duration',
    group: 'Static pods',
    field: 'fileCheckFrequency',
    defaultText: '20s',
    usage: 'Duration between checking config files for new data.',
  }),
  c({
    name: 'manifest-url',
    kind: 'string',
    group: 'Static pods',
    field: 'staticPodURL',
    usage: 'URL for accessing additional Pod specifications to run.',
  }),
  c({
    name: 'manifest-url-header',
    kind: 'headerMultimap',
    group: 'Static pods',
    field: 'staticPodURLHeader',
    usage:
      "Comma-separated list of HTTP headers to use when accessing the url provided to --manifest-url, as 'key:value'. Repeatable; headers with the same name are sent in the order given.",
  }),
  c({
    name: 'http-check-frequency',
    kind: 'duration',
    group: 'Static pods',
    field: 'httpCheckFrequency',
    defaultText: '20s',
    usage: 'Duration between checking http for new data.',
  }),

  // Container runtime
  c({
    name: 'container-runtime-endpoint',
    kind: 'string',
    group: 'Container runtime',
    field: 'containerRuntimeEndpoint',
    defaultText: 'unix:///run/containerd/containerd.sock',
    usage: "The endpoint of the container runtime service, e.g. 'unix:///path/to/runtime.sock'.",
  }),
  c({
    name: 'image-service-endpoint',
    kind: 'string',
    group: 'Container runtime',
    field: 'imageServiceEndpoint',
    usage: 'The endpoint of the container image service. Defaults to --container-runtime-endpoint.',
  }),
  f({
    name: 'pod-infra-container-image',
    kind: 'string',
    group: 'Container runtime',
    flagsKey: 'podInfraContainerImage',
    defaultText: DEFAULT_POD_INFRA_CONTAINER_IMAGE,
    usage:
      'The sandbox image, kept safe from image garbage collection. The runtime (containerd sandbox_image) decides which image sandboxes use.',
  }),
  f({
    name: 'max-parallel-pod-starts',
    kind: 'int32',
    group: 'Container runtime',
    flagsKey: 'maxParallelPodStarts',
    defaultText: '4 per CPU',
    usage:
      "tskubelet only: how many pods the kubelet starts at once, from RunPodSandbox to the start of their containers; the others wait their turn. A pod gives its turn back before it pulls an image, and after 5s at most; the node's critical pods never wait. 0 starts every pod at once, as the upstream kubelet does.",
  }),
  f({
    name: 'image-credential-provider-config',
    kind: 'string',
    group: 'Container runtime',
    flagsKey: 'imageCredentialProviderConfig',
    usage: 'The path to the credential provider plugin config file.',
  }),
  f({
    name: 'image-credential-provider-bin-dir',
    kind: 'string',
    group: 'Container runtime',
    flagsKey: 'imageCredentialProviderBinDir',
    usage: 'The path to the directory where credential provider plugin binaries are located.',
  }),

  // Node
  f({
    name: 'hostname-override',
    kind: 'string',
    group: 'Node',
    flagsKey: 'hostnameOverride',
    usage: 'If non-empty, will use this string as identification instead of the actual hostname.',
  }),
  f({
    name: 'node-ip',
    kind: 'string',
    group: 'Node',
    flagsKey: 'nodeIP',
    usage:
      "IP address (or comma-separated dual-stack IP addresses) of the node. If unset, the kubelet uses the node's default IPv4 address, if any, or its default IPv6 address.",
  }),
  f({
    name: 'node-labels',
    kind: 'labels',
    group: 'Node',
    flagsKey: 'nodeLabels',
    usage:
      "Labels to add when registering the node in the cluster. Labels must be key=value pairs separated by ','. Labels in the 'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) or be in the specifically allowed set.",
  }),
  c({
    name: 'register-node',
    kind: 'bool',
    group: 'Node',
    field: 'registerNode',
    defaultText: 'true',
    usage: 'Register the node with the API server. Irrelevant without --kubeconfig.',
  }),
  c({
    name: 'register-with-taints',
    kind: 'taints',
    group: 'Node',
    field: 'registerWithTaints',
    usage:
      'Register the node with the given list of taints (comma separated "<key>=<value>:<effect>"). No-op if register-node is false.',
  }),
  c({
    name: 'node-status-update-frequency',
    kind: 'duration',
    group: 'Node',
    field: 'nodeStatusUpdateFrequency',
    defaultText: '10s',
    usage: 'How often the kubelet posts node status to the API server.',
  }),
  c({
    name: 'max-pods',
    kind: 'int32',
    group: 'Node',
    field: 'maxPods',
    defaultText: '110',
    usage: 'Number of Pods that can run on this Kubelet.',
  }),
  c({
    name: 'pods-per-core',
    kind: 'int32',
    group: 'Node',
    field: 'podsPerCore',
    usage: 'Number of Pods per core that can run on this Kubelet; 0 disables this limit.',
  }),
  c({
    name: 'pod-cidr',
    kind: 'string',
    group: 'Node',
    field: 'podCIDR',
    usage: 'The CIDR to use for pod IP addresses, only used in standalone mode.',
  }),
  f({
    name: 'cloud-provider',
    kind: 'string',
    group: 'Node',
    flagsKey: 'cloudProvider',
    usage:
      "The provider for cloud services. Set to 'external' when an external cloud controller manager initializes the node (the node registers with the node.cloudprovider.kubernetes.io/uninitialized taint); '' for none. Built-in cloud providers are disabled.",
  }),
  c({
    name: 'provider-id',
    kind: 'string',
    group: 'Node',
    field: 'providerID',
    usage: 'Unique identifier for identifying the node in a machine database, i.e cloudprovider.',
  }),
  c({
    name: 'cluster-dns',
    kind: 'stringSlice',
    group: 'Node',
    field: 'clusterDNS',
    usage:
      'Comma-separated list of DNS server IP addresses, used as the containers\' DNS servers for Pods with "dnsPolicy=ClusterFirst".',
  }),
  c({
    name: 'cluster-domain',
    kind: 'string',
    group: 'Node',
    field: 'clusterDomain',
    usage:
      "Domain for this cluster. If set, the kubelet configures all containers to search this domain in addition to the host's search domains.",
  }),
  c({
    name: 'resolv-conf',
    kind: 'string',
    group: 'Node',
    field: 'resolvConf',
    defaultText: '/etc/resolv.conf',
    usage: 'Resolver configuration file used as the basis for the container DNS resolution configuration.',
  }),
  c({
    name: 'hairpin-mode',
    kind: 'string',
    group: 'Node',
    field: 'hairpinMode',
    defaultText: 'promiscuous-bridge',
    usage: 'How the kubelet should set up hairpin NAT: "promiscuous-bridge", "hairpin-veth" or "none".',
  }),
  c({
    name: 'fail-swap-on',
    kind: 'bool',
    group: 'Node',
    field: 'failSwapOn',
    defaultText: 'true',
    usage: 'Makes the Kubelet fail to start if swap is enabled on the node.',
  }),

  // Kubelet server
  c({
    name: 'enable-server',
    kind: 'bool',
    group: 'Kubelet server',
    field: 'enableServer',
    defaultText: 'true',
    usage: "Enable the Kubelet's server.",
  }),
  c({
    name: 'address',
    kind: 'string',
    group: 'Kubelet server',
    field: 'address',
    defaultText: '0.0.0.0',
    usage:
      "The IP address for the Kubelet to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and IP address families).",
  }),
  c({
    name: 'port',
    kind: 'int32',
    group: 'Kubelet server',
    field: 'port',
    defaultText: '10250',
    usage: 'The port for the Kubelet to serve on.',
  }),
  c({
    name: 'read-only-port',
    kind: 'int32',
    group: 'Kubelet server',
    field: 'readOnlyPort',
    defaultText: '10255 without --config (0 standalone), 0 with it',
    usage:
      'The read-only port for the Kubelet to serve on with no authentication/authorization (set to 0 to disable).',
  }),
  c({
    name: 'healthz-port',
    kind: 'int32',
    group: 'Kubelet server',
    field: 'healthzPort',
    defaultText: '10248',
    usage: 'The port of the localhost healthz endpoint (set to 0 to disable).',
  }),
  c({
    name: 'healthz-bind-address',
    kind: 'string',
    group: 'Kubelet server',
    field: 'healthzBindAddress',
    defaultText: '127.0.0.1',
    usage:
      "The IP address for the healthz server to serve on (set to '0.0.0.0' or '::' for listening on all interfaces).",
  }),
  f({
    name: 'node-page-group',
    kind: 'string',
    group: 'Kubelet server',
    flagsKey: 'nodePageGroup',
    usage:
      "tskubelet only: a group (name or number) whose members may read the node page and use tskubelet get/describe/logs/events, besides root: the socket and the page's address under <root-dir>/node-page/ become theirs to read.",
  }),
  f({
    name: 'node-page-max-subscribers',
    kind: 'int32',
    group: 'Kubelet server',
    flagsKey: 'nodePageMaxSubscribers',
    defaultText: String(DEFAULT_NODE_PAGE_MAX_SUBSCRIBERS),
    usage:
      'tskubelet only: how many live feeds of the node page (/node/api/stream) may be open at once; one more gets 429.',
  }),
  f({
    name: 'node-page-max-log-follows',
    kind: 'int32',
    group: 'Kubelet server',
    flagsKey: 'nodePageMaxLogFollows',
    defaultText: String(DEFAULT_NODE_PAGE_MAX_LOG_FOLLOWS),
    usage:
      'tskubelet only: how many container logs may be followed through the node page (tskubelet logs -f) at once; one more gets 429.',
  }),
  c({
    name: 'tls-cert-file',
    kind: 'string',
    group: 'Kubelet server',
    field: 'tlsCertFile',
    usage:
      'File containing the x509 certificate for serving HTTPS (with intermediate certs, if any, concatenated after the server cert). Without it, a self-signed certificate is generated into --cert-dir.',
  }),
  c({
    name: 'tls-private-key-file',
    kind: 'string',
    group: 'Kubelet server',
    field: 'tlsPrivateKeyFile',
    usage: 'File containing the x509 private key matching --tls-cert-file.',
  }),
  c({
    name: 'tls-min-version',
    kind: 'string',
    group: 'Kubelet server',
    field: 'tlsMinVersion',
    usage: 'Minimum TLS version supported: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13.',
  }),
  c({
    name: 'tls-cipher-suites',
    kind: 'stringSlice',
    group: 'Kubelet server',
    field: 'tlsCipherSuites',
    usage: "Comma-separated list of cipher suites for the server. If omitted, Node's defaults are used.",
  }),
  c({
    name: 'rotate-certificates',
    kind: 'bool',
    group: 'Kubelet server',
    field: 'rotateCertificates',
    usage: 'Auto rotate the kubelet client certificates by requesting new certificates from the API server.',
  }),
  c({
    name: 'rotate-server-certificates',
    kind: 'bool',
    group: 'Kubelet server',
    field: 'serverTLSBootstrap',
    usage: 'Auto-request and rotate the kubelet serving certificates through CertificateSigningRequests.',
  }),
  c({
    name: 'enable-debugging-handlers',
    kind: 'bool',
    group: 'Kubelet server',
    field: 'enableDebuggingHandlers',
    defaultText: 'true',
    usage: 'Enables server endpoints for log collection and local running of containers and commands.',
  }),
  c({
    name: 'streaming-connection-idle-timeout',
    kind: 'duration',
    group: 'Kubelet server',
    field: 'streamingConnectionIdleTimeout',
    defaultText: '4h0m0s',
    usage:
      'Maximum time a streaming connection can be idle before the connection is automatically closed. 0 indicates no timeout.',
  }),
  f({
    name: 'max-connections-per-listener',
    kind: 'int32',
    group: 'Kubelet server',
    flagsKey: 'maxConnectionsPerListener',
    defaultText: '4096',
    usage:
      'tskubelet only: open connections each kubelet API listener (the port and the read-only port) serves at once; one more is answered 503 with the reason, then closed. 0 for no bound, as the upstream kubelet.',
  }),
  f({
    name: 'max-streaming-sessions',
    kind: 'int32',
    group: 'Kubelet server',
    flagsKey: 'maxStreamingSessions',
    defaultText: '1024',
    usage:
      'tskubelet only: concurrent exec, attach and port-forward sessions the kubelet API serves; one more is answered 429 with the reason. 0 for no bound, as the upstream kubelet.',
  }),

  // Authentication and authorization
  c({
    name: 'anonymous-auth',
    kind: 'bool',
    group: 'Authentication and authorization',
    field: 'authentication.anonymous.enabled',
    defaultText: 'true without --config (false standalone), false with it',
    usage:
      'Enables anonymous requests to the Kubelet server (user system:anonymous, group system:unauthenticated).',
  }),
  c({
    name: 'authentication-token-webhook',
    kind: 'bool',
    group: 'Authentication and authorization',
    field: 'authentication.webhook.enabled',
    usage: 'Use the TokenReview API to determine authentication for bearer tokens.',
  }),
  c({
    name: 'authentication-token-webhook-cache-ttl',
    kind: 'duration',
    group: 'Authentication and authorization',
    field: 'authentication.webhook.cacheTTL',
    defaultText: '2m0s',
    usage: 'The duration to cache responses from the webhook token authenticator.',
  }),
  c({
    name: 'client-ca-file',
    kind: 'string',
    group: 'Authentication and authorization',
    field: 'authentication.x509.clientCAFile',
    usage:
      "If set, any request presenting a client certificate signed by one of the authorities in this file is authenticated with the certificate's CommonName.",
  }),
  c({
    name: 'authorization-mode',
    kind: 'string',
    group: 'Authentication and authorization',
    field: 'authorization.mode',
    defaultText: 'AlwaysAllow without --config, Webhook with it',
    usage: 'Authorization mode for the Kubelet server: AlwaysAllow or Webhook (SubjectAccessReview).',
  }),
  c({
    name: 'authorization-webhook-cache-authorized-ttl',
    kind: 'duration',
    group: 'Authentication and authorization',
    field: 'authorization.webhook.cacheAuthorizedTTL',
    defaultText: '5m0s',
    usage: "The duration to cache 'authorized' responses from the webhook authorizer.",
  }),
  c({
    name: 'authorization-webhook-cache-unauthorized-ttl',
    kind: 'duration',
    group: 'Authentication and authorization',
    field: 'authorization.webhook.cacheUnauthorizedTTL',
    defaultText: '30s',
    usage: "The duration to cache 'unauthorized' responses from the webhook authorizer.",
  }),
  c({
    name: 'kube-api-qps',
    kind: 'int32',
    group: 'Authentication and authorization',
    field: 'kubeAPIQPS',
    defaultText: '50',
    usage: 'QPS to use while talking with the API server.',
  }),
  c({
    name: 'kube-api-burst',
    kind: 'int32',
    group: 'Authentication and authorization',
    field: 'kubeAPIBurst',
    defaultText: '100',
    usage: 'Burst to use while talking with the API server.',
  }),
  c({
    name: 'kube-api-content-type',
    kind: 'string',
    group: 'Authentication and authorization',
    field: 'contentType',
    defaultText: 'application/vnd.kubernetes.protobuf',
    usage: 'Content type of requests sent to the API server.',
  }),
  c({
    name: 'event-qps',
    kind: 'int32',
    group: 'Authentication and authorization',
    field: 'eventRecordQPS',
    defaultText: '50',
    usage: 'QPS to limit event creations.',
  }),
  c({
    name: 'event-burst',
    kind: 'int32',
    group: 'Authentication and authorization',
    field: 'eventBurst',
    defaultText: '100',
    usage: 'Maximum size of a burst of event records.',
  }),

  // Resources, cgroups and eviction
  c({
    name: 'cgroup-driver',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'cgroupDriver',
    defaultText: 'cgroupfs',
    usage: "Driver that the kubelet uses to manipulate cgroups on the host: 'cgroupfs' or 'systemd'.",
  }),
  c({
    name: 'cgroup-root',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'cgroupRoot',
    usage: "Optional root cgroup to use for pods. Default: '', the container runtime's default.",
  }),
  c({
    name: 'cgroups-per-qos',
    kind: 'bool',
    group: 'Resources, cgroups and eviction',
    field: 'cgroupsPerQOS',
    defaultText: 'true',
    usage: 'Enable creation of the QoS cgroup hierarchy.',
  }),
  c({
    name: 'kubelet-cgroups',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'kubeletCgroups',
    usage: 'Optional absolute name of cgroups to create and run the Kubelet in.',
  }),
  c({
    name: 'system-cgroups',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'systemCgroups',
    usage:
      "Optional absolute name of cgroups in which to place all non-kernel processes not already inside a cgroup under '/'.",
  }),
  c({
    name: 'pod-max-pids',
    kind: 'int64',
    group: 'Resources, cgroups and eviction',
    field: 'podPidsLimit',
    defaultText: '-1',
    usage:
      'Set the maximum number of processes per pod. If -1, the kubelet defaults to the node allocatable pid capacity.',
  }),
  c({
    name: 'system-reserved',
    kind: 'mapStringString',
    group: 'Resources, cgroups and eviction',
    field: 'systemReserved',
    usage:
      'A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) reserved for non-kubernetes components.',
  }),
  c({
    name: 'kube-reserved',
    kind: 'mapStringString',
    group: 'Resources, cgroups and eviction',
    field: 'kubeReserved',
    usage:
      'A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) reserved for kubernetes system components.',
  }),
  c({
    name: 'system-reserved-cgroup',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'systemReservedCgroup',
    usage: 'Absolute name of the top level cgroup for the resources reserved by --system-reserved.',
  }),
  c({
    name: 'kube-reserved-cgroup',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'kubeReservedCgroup',
    usage: 'Absolute name of the top level cgroup for the resources reserved by --kube-reserved.',
  }),
  c({
    name: 'enforce-node-allocatable',
    kind: 'stringSlice',
    group: 'Resources, cgroups and eviction',
    field: 'enforceNodeAllocatable',
    defaultText: 'pods',
    usage:
      "Comma-separated list of node allocatable enforcement levels: 'none', 'pods', 'system-reserved', 'kube-reserved'.",
  }),
  c({
    name: 'eviction-hard',
    kind: 'langleMap',
    group: 'Resources, cgroups and eviction',
    field: 'evictionHard',
    defaultText: 'imagefs.available<15%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%',
    usage:
      'A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction.',
  }),
  c({
    name: 'eviction-soft',
    kind: 'langleMap',
    group: 'Resources, cgroups and eviction',
    field: 'evictionSoft',
    usage:
      'A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction.',
  }),
  c({
    name: 'eviction-soft-grace-period',
    kind: 'mapStringString',
    group: 'Resources, cgroups and eviction',
    field: 'evictionSoftGracePeriod',
    usage:
      'A set of eviction grace periods (e.g. memory.available=1m30s) for the --eviction-soft thresholds.',
  }),
  c({
    name: 'eviction-pressure-transition-period',
    kind: 'duration',
    group: 'Resources, cgroups and eviction',
    field: 'evictionPressureTransitionPeriod',
    defaultText: '5m0s',
    usage:
      'Duration for which the kubelet has to wait before transitioning out of an eviction pressure condition.',
  }),
  c({
    name: 'eviction-max-pod-grace-period',
    kind: 'int32',
    group: 'Resources, cgroups and eviction',
    field: 'evictionMaxPodGracePeriod',
    usage:
      'Maximum grace period (in seconds) for pods terminated by a soft eviction. If negative, defer to the pod.',
  }),
  c({
    name: 'eviction-minimum-reclaim',
    kind: 'mapStringString',
    group: 'Resources, cgroups and eviction',
    field: 'evictionMinimumReclaim',
    usage: 'A set of minimum reclaims (e.g. imagefs.available=2Gi) for evictions.',
  }),
  c({
    name: 'oom-score-adj',
    kind: 'int32',
    group: 'Resources, cgroups and eviction',
    field: 'oomScoreAdj',
    defaultText: '-999',
    usage: 'The oom-score-adj value for the kubelet process, within [-1000, 1000].',
  }),
  c({
    name: 'cpu-cfs-quota',
    kind: 'bool',
    group: 'Resources, cgroups and eviction',
    field: 'cpuCFSQuota',
    defaultText: 'true',
    usage: 'Enable CPU CFS quota enforcement for containers that specify CPU limits.',
  }),
  c({
    name: 'cpu-cfs-quota-period',
    kind: 'duration',
    group: 'Resources, cgroups and eviction',
    field: 'cpuCFSQuotaPeriod',
    defaultText: '100ms',
    usage: 'Sets the CPU CFS quota period value, cpu.cfs_period_us.',
  }),
  c({
    name: 'cpu-manager-policy',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'cpuManagerPolicy',
    defaultText: 'none',
    usage: "CPU Manager policy to use: 'none' or 'static'.",
  }),
  c({
    name: 'memory-manager-policy',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'memoryManagerPolicy',
    defaultText: 'None',
    usage: "Memory Manager policy to use. Possible values: 'None', 'Static'.",
  }),
  c({
    name: 'reserved-memory',
    kind: 'reservedMemory',
    group: 'Resources, cgroups and eviction',
    field: 'reservedMemory',
    usage:
      'A comma separated list of memory reservations for NUMA nodes. (e.g. --reserved-memory 0:memory=1Gi,hugepages-1M=2Gi --reserved-memory 1:memory=2Gi). The total sum for each memory type should be equal to the sum of kube-reserved, system-reserved and eviction-threshold.',
  }),
  c({
    name: 'topology-manager-policy',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'topologyManagerPolicy',
    defaultText: 'none',
    usage:
      "Topology Manager policy to use. Possible values: 'none', 'best-effort', 'restricted', 'single-numa-node'.",
  }),
  c({
    name: 'topology-manager-scope',
    kind: 'string',
    group: 'Resources, cgroups and eviction',
    field: 'topologyManagerScope',
    defaultText: 'container',
    usage:
      "Scope to which topology hints applied. Topology Manager collects hints from Hint Providers and applies them to defined scope to ensure the pod admission. Possible values: 'container', 'pod'.",
  }),
  c({
    name: 'topology-manager-policy-options',
    kind: 'mapStringString',
    group: 'Resources, cgroups and eviction',
    field: 'topologyManagerPolicyOptions',
    usage:
      'A set of key=value Topology Manager policy options to use, to fine tune their behaviour. If not supplied, keep the default behaviour.',
  }),
  c({
    name: 'allowed-unsafe-sysctls',
    kind: 'stringSlice',
    group: 'Resources, cgroups and eviction',
    field: 'allowedUnsafeSysctls',
    usage: 'Comma-separated allowlist of unsafe sysctls or sysctl patterns (ending in *).',
  }),
  c({
    name: 'protect-kernel-defaults',
    kind: 'bool',
    group: 'Resources, cgroups and eviction',
    field: 'protectKernelDefaults',
    usage: 'If set, the kubelet errors if any kernel tunable differs from the kubelet defaults.',
  }),
  c({
    name: 'local-storage-capacity-isolation',
    kind: 'bool',
    group: 'Resources, cgroups and eviction',
    field: 'localStorageCapacityIsolation',
    defaultText: 'true',
    usage: 'If true, local ephemeral storage isolation is enabled.',
  }),
  c({
    name: 'max-open-files',
    kind: 'int64',
    group: 'Resources, cgroups and eviction',
    field: 'maxOpenFiles',
    defaultText: '1000000',
    usage: 'Number of files that can be opened by the Kubelet process.',
  }),

  // Images and logs
  c({
    name: 'serialize-image-pulls',
    kind: 'bool',
    group: 'Images and logs',
    field: 'serializeImagePulls',
    defaultText: 'true',
    usage: 'Pull images one at a time.',
  }),
  c({
    name: 'registry-qps',
    kind: 'int32',
    group: 'Images and logs',
    field: 'registryPullQPS',
    defaultText: '5',
    usage: 'If > 0, limit registry pull QPS to this value. If 0, unlimited.',
  }),
  c({
    name: 'registry-burst',
    kind: 'int32',
    group: 'Images and logs',
    field: 'registryBurst',
    defaultText: '10',
    usage: 'Maximum size of a burst of pulls; only used if --registry-qps > 0.',
  }),
  c({
    name: 'image-gc-high-threshold',
    kind: 'int32',
    group: 'Images and logs',
    field: 'imageGCHighThresholdPercent',
    defaultText: '85',
    usage:
      'The percent of disk usage after which image garbage collection is always run, within [0, 100]; 100 disables image garbage collection.',
  }),
  c({
    name: 'image-gc-low-threshold',
    kind: 'int32',
    group: 'Images and logs',
    field: 'imageGCLowThresholdPercent',
    defaultText: '80',
    usage:
      'The percent of disk usage before which image garbage collection is never run, within [0, 100] and not above --image-gc-high-threshold.',
  }),
  c({
    name: 'minimum-image-ttl-duration',
    kind: 'duration',
    group: 'Images and logs',
    field: 'imageMinimumGCAge',
    defaultText: '2m0s',
    usage: 'Minimum age for an unused image before it is garbage collected.',
  }),
  c({
    name: 'volume-stats-agg-period',
    kind: 'duration',
    group: 'Images and logs',
    field: 'volumeStatsAggPeriod',
    defaultText: '1m0s',
    usage: 'Interval for the kubelet to calculate and cache the volume disk usage of all pods and volumes.',
  }),
  c({
    name: 'container-log-max-size',
    kind: 'string',
    group: 'Images and logs',
    field: 'containerLogMaxSize',
    defaultText: '10Mi',
    usage: 'The maximum size (e.g. 10Mi) of a container log file before it is rotated.',
  }),
  c({
    name: 'container-log-max-files',
    kind: 'int32',
    group: 'Images and logs',
    field: 'containerLogMaxFiles',
    defaultText: '5',
    usage: 'The maximum number of container log files that can be present for a container; must be >= 2.',
  }),
  c({
    name: 'node-status-max-images',
    kind: 'int32',
    group: 'Images and logs',
    field: 'nodeStatusMaxImages',
    defaultText: '50',
    usage: 'The maximum number of images to report in Node.Status.Images; -1 for no cap.',
  }),

  // Logging
  c({
    name: 'v',
    shorthand: 'v',
    kind: 'int32',
    group: 'Logging',
    field: 'logging.verbosity',
    defaultText: '0',
    usage: 'number for the log level verbosity',
  }),
  c({
    name: 'logging-format',
    kind: 'string',
    group: 'Logging',
    field: 'logging.format',
    defaultText: 'text',
    usage: 'Sets the log format. Permitted formats: "json", "text".',
  }),
  c({
    name: 'vmodule',
    kind: 'vmodule',
    group: 'Logging',
    field: 'logging.vmodule',
    usage:
      'comma-separated list of pattern=N settings for component-filtered logging (only works for text log format); tskubelet matches the pattern against its log components (kubelet, server, k8s, ...), not Go file names',
  }),
  c({
    name: 'log-flush-frequency',
    kind: 'duration',
    group: 'Logging',
    field: 'logging.flushFrequency',
    defaultText: '5s',
    usage: 'Maximum number of seconds between log flushes.',
  }),
];

const BY_NAME = new Map(FLAG_SPECS.map((s) => [s.name, s]));
const BY_SHORTHAND = new Map(FLAG_SPECS.filter((s) => s.shorthand).map((s) => [s.shorthand!, s]));
const FLAG_BY_FIELD = new Map(FLAG_SPECS.filter(isConfigFlag).map((s) => [s.field, s.name]));

function isConfigFlag(s: FlagSpec): s is ConfigFlagSpec {
  return 'field' in s;
}

/** The flag that sets a KubeletConfiguration field, if any (for naming both in errors). */
export function flagForField(fieldPath: string): string | undefined {
  return FLAG_BY_FIELD.get(fieldPath);
}

/** A KubeletConfiguration field set from the command line. */
export interface ConfigOverride {
  flag: string;
  /** Dotted path into the file's shape, e.g. `authentication.anonymous.enabled`. */
  field: string;
  value: unknown;
}

export interface ParsedKubeletFlags {
  flags: KubeletFlags;
  /** In the order given; a flag given twice appears once, with its final value. */
  configOverrides: ConfigOverride[];
  /** Notices to log (deprecated flags), as upstream prints them. */
  warnings: string[];
}

function flagError(message: string): KubeletError {
  return new KubeletError('INVALID_CONFIG', message);
}

/** Parses argv (without the node and script paths). Throws INVALID_CONFIG naming the flag at fault. */
export function parseKubeletFlags(argv: readonly string[]): ParsedKubeletFlags {
  const flags = defaultKubeletFlags();
  const configValues = new Map<string, { spec: ConfigFlagSpec; value: unknown }>();
  const positional: string[] = [];
  const seen = new Set<string>();

  const set = (spec: FlagSpec, raw: string, shown: string) => {
    const previous = isConfigFlag(spec)
      ? configValues.get(spec.name)?.value
      : (flags[spec.flagsKey] as unknown);
    const value = parseFlagValue(spec, raw, shown, seen.has(spec.name) ? previous : undefined);
    seen.add(spec.name);
    if (isConfigFlag(spec)) {
      configValues.delete(spec.name); // re-insert so the order is that of the last occurrence
      configValues.set(spec.name, { spec, value });
    } else {
      (flags as unknown as Record<string, unknown>)[spec.flagsKey] = value;
    }
  };

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const body = arg.slice(2);
      const eq = body.indexOf('=');
      const name = (eq === -1 ? body : body.slice(0, eq)).replaceAll('_', '-');
      if (name === '' || name.startsWith('-')) throw flagError(`bad flag syntax: ${arg}`);
      const spec = BY_NAME.get(name);
      if (!spec) throw flagError(`unknown flag: --${name}`);
      let value: string;
      if (eq !== -1) value = body.slice(eq + 1);
      else if (spec.kind === 'bool' || spec.kind === 'version') value = 'true';
      else if (i + 1 < argv.length) value = argv[++i]!;
      else throw flagError(`flag needs an argument: --${name}`);
      set(spec, value, `--${name}`);
      continue;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      // Shorthands: booleans may be grouped (-hv2 is -h -v 2); a value ends the group.
      let rest = arg.slice(1);
      while (rest.length > 0) {
        const ch = rest[0]!;
        rest = rest.slice(1);
        const spec = BY_SHORTHAND.get(ch);
        if (!spec) throw flagError(`unknown shorthand flag: '${ch}' in ${arg}`);
        let value: string;
        if (rest.startsWith('=')) {
          value = rest.slice(1);
          rest = '';
        } else if (spec.kind === 'bool') {
          value = 'true';
        } else if (rest.length > 0) {
          value = rest;
          rest = '';
        } else if (i + 1 < argv.length) {
          value = argv[++i]!;
        } else {
          throw flagError(`flag needs an argument: '${ch}' in -${ch}`);
        }
        set(spec, value, `-${ch}`);
      }
      continue;
    }
    positional.push(arg);
  }

  if (positional.length > 0) throw flagError(`unknown command ${JSON.stringify(positional[0])}`);

  const configOverrides: ConfigOverride[] = [];
  const warnings: string[] = [];
  for (const { spec, value } of configValues.values()) {
    configOverrides.push({ flag: spec.name, field: spec.field, value });
    if (!NOT_DEPRECATED.has(spec.name))
      warnings.push(`Flag --${spec.name} has been deprecated, ${CONFIG_FLAG_DEPRECATION}`);
  }
  return { flags, configOverrides, warnings };
}

const GO_BOOL: Readonly<Record<string, boolean>> = {
  '1': true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  '0': false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

function parseFlagValue(spec: FlagSpec, raw: string, shown: string, previous: unknown): unknown {
  const invalid = (reason: string) =>
    flagError(`invalid argument ${JSON.stringify(raw)} for "${shown}" flag: ${reason}`);
  switch (spec.kind) {
    case 'string':
      return raw;
    case 'bool': {
      const b = GO_BOOL[raw];
      if (b === undefined) throw invalid(`strconv.ParseBool: parsing ${JSON.stringify(raw)}: invalid syntax`);
      return b;
    }
    case 'version': {
      if (raw === 'raw') return 'raw';
      const b = GO_BOOL[raw];
      if (b === undefined) throw invalid(`strconv.ParseBool: parsing ${JSON.stringify(raw)}: invalid syntax`);
      return b;
    }
    case 'int32':
    case 'int64':
      return parseGoInt(raw, spec.kind === 'int32' ? 32 : 64, invalid);
    case 'duration':
      try {
        parseGoDurationMs(raw);
      } catch (err) {
        throw invalid(err instanceof DurationError ? err.message : String(err));
      }
      return raw;
    case 'stringSlice': {
      const items = raw === '' ? [] : raw.split(',');
      // pflag: the first occurrence replaces the default, later ones append.
      return Array.isArray(previous) ? [...(previous as string[]), ...items] : items;
    }
    case 'mapStringString':
    case 'langleMap':
    case 'mapStringBool':
    case 'labels': {
      const separator = spec.kind === 'langleMap' ? '<' : '=';
      // The maps of config fields are replaced by the first occurrence and merged after it;
      // node labels always merge (upstream's ConfigurationMap).
      const out: Record<string, unknown> =
        previous && typeof previous === 'object' ? { ...(previous as object) } : {};
      for (const item of raw.split(',')) {
        const pair = item.trim();
        if (pair === '') continue;
        const at = pair.indexOf(separator);
        if (at === -1) {
          if (spec.kind === 'labels') {
            out[pair] = '';
            continue;
          }
          throw invalid(`malformed pair, expect string${separator}string`);
        }
        const key = pair.slice(0, at).trim();
        const value = pair.slice(at + 1).trim();
        if (spec.kind === 'mapStringBool') {
          const b = GO_BOOL[value];
          if (b === undefined)
            throw invalid(
              `invalid value of ${key}: ${value}, err: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
            );
          out[key] = b;
        } else {
          out[key] = value;
        }
      }
      return out;
    }
    case 'headerMultimap': {
      const out: Record<string, string[]> =
        previous && typeof previous === 'object' ? structuredClone(previous as Record<string, string[]>) : {};
      for (const item of raw.split(',')) {
        if (item.trim() === '') continue;
        const at = item.indexOf(':');
        if (at === -1) throw invalid('malformed pair, expect string:string');
        const key = item.slice(0, at).trim();
        (out[key] ??= []).push(item.slice(at + 1));
      }
      return out;
    }
    case 'vmodule': {
      const out: { filePattern: string; verbosity: number }[] = [];
      for (const item of raw.split(',')) {
        if (item === '') continue;
        const eq = item.indexOf('=');
        if (eq === -1) throw invalid(`${JSON.stringify(item)} does not have the pattern=N format`);
        const level = item.slice(eq + 1);
        if (!/^\d+$/.test(level))
          throw invalid(
            `parsing verbosity in ${JSON.stringify(item)}: strconv.ParseUint: parsing ${JSON.stringify(level)}: invalid syntax`,
          );
        out.push({ filePattern: item.slice(0, eq), verbosity: Number(level) });
      }
      return out;
    }
    case 'reservedMemory': {
      // pflag's ReservedMemoryVar: the first occurrence replaces the file's list, later ones append.
      const out = Array.isArray(previous) ? [...(previous as MemoryReservation[])] : [];
      try {
        return [...out, ...parseReservedMemoryFlag(raw)];
      } catch (err) {
        throw invalid((err as Error).message);
      }
    }
    case 'taints': {
      const out: NodeTaint[] = Array.isArray(previous) ? [...(previous as NodeTaint[])] : [];
      for (const item of raw.split(',')) {
        if (item.trim() === '') continue;
        out.push(parseTaint(item.trim(), invalid));
      }
      return out;
    }
  }
}

function parseGoInt(raw: string, bits: 32 | 64, invalid: (reason: string) => KubeletError): number {
  const m = /^([+-]?)(?:0[xX]([0-9a-fA-F]+)|0[oO]?([0-7]+)|0[bB]([01]+)|([1-9]\d*|0))$/.exec(raw);
  if (!m) throw invalid(`strconv.ParseInt: parsing ${JSON.stringify(raw)}: invalid syntax`);
  const digits = m[2] ?? m[3] ?? m[4] ?? m[5] ?? '0';
  const radix = m[2] !== undefined ? 16 : m[3] !== undefined ? 8 : m[4] !== undefined ? 2 : 10;
  const big =
    BigInt(m[1] === '-' ? -1 : 1) *
    BigInt(radix === 10 ? digits : `0${radix === 16 ? 'x' : radix === 8 ? 'o' : 'b'}${digits}`);
  const limit = 2n ** BigInt(bits - 1);
  if (big < -limit || big >= limit)
    throw invalid(`strconv.ParseInt: parsing ${JSON.stringify(raw)}: value out of range`);
  return Number(big);
}

const EFFECTS: readonly TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** `key=value:effect` or `key:effect` (upstream's taint spec). */
function parseTaint(spec: string, invalid: (reason: string) => KubeletError): NodeTaint {
  const colon = spec.lastIndexOf(':');
  if (colon === -1) throw invalid(`invalid taint spec: ${spec}`);
  const effect = spec.slice(colon + 1);
  if (!(EFFECTS as readonly string[]).includes(effect)) {
    throw invalid(`invalid taint effect: ${effect}, unsupported taint effect`);
  }
  const keyValue = spec.slice(0, colon);
  const eq = keyValue.indexOf('=');
  const key = eq === -1 ? keyValue : keyValue.slice(0, eq);
  if (key === '') throw invalid(`invalid taint spec: ${spec}`);
  const taint: NodeTaint = { key, effect: effect as TaintEffect };
  if (eq !== -1) taint.value = keyValue.slice(eq + 1);
  return taint;
}

// ---------------------------------------------------------------------------------------------
// Help.

const TYPE_NAMES: Readonly<Record<FlagKind, string>> = {
  string: 'string',
  bool: '',
  int32: 'int32',
  int64: 'int',
  duration: 'duration',
  stringSlice: 'strings',
  mapStringString: 'mapStringString',
  langleMap: 'mapStringString',
  mapStringBool: 'mapStringBool',
  headerMultimap: 'colonSeparatedMultimapStringString',
  labels: 'mapStringString',
  taints: 'taints',
  reservedMemory: 'reserved-memory',
  vmodule: 'pattern=N,...',
  version: 'version[=true]',
};

/** The text --help prints: flags grouped by concern, each with its type and default. */
export function kubeletUsage(): string {
  const lines: string[] = [
    'tskubelet: a Kubernetes node agent. It runs the pods meant for its node through a CRI runtime',
    '(containerd), from a manifest folder or URL (standalone) or from the API server (--kubeconfig).',
    '',
    'Usage:',
    '  tskubelet [flags]',
  ];
  for (const group of GROUP_ORDER) {
    const specs = FLAG_SPECS.filter((s) => s.group === group);
    if (specs.length === 0) continue;
    lines.push('', `${group} flags:`, '');
    const heads = specs.map((s) => {
      const short = s.shorthand ? `-${s.shorthand}, ` : '    ';
      const type = s.name === 'v' ? 'Level' : TYPE_NAMES[s.kind];
      return `  ${short}--${s.name}${type ? ` ${type}` : ''}`;
    });
    const width = Math.max(...heads.map((h) => h.length)) + 3;
    specs.forEach((s, i) => {
      let text = s.usage;
      if (s.defaultText !== undefined) text += ` (default ${s.defaultText})`;
      if (isConfigFlag(s) && !NOT_DEPRECATED.has(s.name)) text += ` [config: ${s.field}]`;
      lines.push(heads[i]!.padEnd(width) + text);
    });
  }
  lines.push(
    '',
    'Flags marked [config: field] set a KubeletConfiguration field; they override the --config file,',
    'and upstream deprecates them in favour of it. See docs/flags.md.',
  );
  return lines.join('\n') + '\n';
}
