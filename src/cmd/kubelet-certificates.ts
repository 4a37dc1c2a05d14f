/**
 * Wiring of the kubelet's certificates (upstream cmd/kubelet/app/server.go: buildKubeletClientConfig,
 * bootstrap.LoadClientCert, the client and serving certificate managers): TLS bootstrap before the API
 * clients exist, client rotation feeding the clients, serving certificates feeding the kubelet server.
 * With --bootstrap-kubeconfig the client certificate manager runs even without rotateCertificates:
 * an expired certificate is then replaced in place through the bootstrap credentials. With
 * rotateCertificates, as upstream, five minutes without a valid client certificate while the API
 * server answers end the kubelet (fatal) for its restart to bootstrap again.
 */
import type { CertificateManager } from '../certificate/certificate-manager.js';
import type { StoredPair } from '../certificate/certificate-store.js';
import { loadClientCert } from '../certificate/bootstrap.js';
import {
  startClientCertificateManager,
  startServingCertificateManager,
} from '../certificate/kubelet-certificates.js';
import type { Clock } from '../lib/clock.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import type { KubeletServer } from '../server/kubelet-server.js';
import type { ClusterClients } from './cluster-clients.js';
import type { KubeletFlags } from './flags.js';
import type { ResolvedKubeletConfig } from './kubelet-configuration.js';
import { defaultUserAgent } from '../k8s/rest-client.js';
import { KUBERNETES_VERSION } from './version.js';

const log = logger('kubelet');

/** Runs TLS bootstrap when --bootstrap-kubeconfig is set and --kubeconfig has no valid certificate. */
export async function bootstrapClientCertificate(
  flags: KubeletFlags,
  nodeName: string,
  clock: Clock,
  signal: AbortSignal,
): Promise<void> {
  if (flags.bootstrapKubeconfig === '') return;
  if (flags.kubeConfig === '')
    throw new KubeletError(
      'INVALID_CONFIG',
      '--bootstrap-kubeconfig needs --kubeconfig: the file bootstrap writes and the kubelet then uses',
    );
  await loadClientCert({
    kubeconfigPath: flags.kubeConfig,
    bootstrapKubeconfigPath: flags.bootstrapKubeconfig,
    certDirectory: flags.certDirectory,
    nodeName,
    clock,
    signal,
    userAgent: defaultUserAgent(KUBERNETES_VERSION),
  });
}

export interface KubeletCertificates {
  clientCertificates?: CertificateManager;
  servingCertificates?: CertificateManager;
  /** With serverTLSBootstrap: start the kubelet server with the first issued pair, then swap each new one in. */
  serveWith(start: (pair: { certPem: string; keyPem: string }) => Promise<KubeletServer | undefined>): void;
  stop(): Promise<void>;
}

/** Whether any certificate manager runs (cluster mode only). */
export function needsCertificateManagers(config: ResolvedKubeletConfig, flags: KubeletFlags): boolean {
  return config.rotateCertificates || config.serverTLSBootstrap || flags.bootstrapKubeconfig !== '';
}

export async function startKubeletCertificates(p: {
  config: ResolvedKubeletConfig;
  flags: KubeletFlags;
  nodeName: string;
  clock: Clock;
  cluster: ClusterClients;
  nodeIPs: string[];
  /** Warning events on the Node (a refused CSR). */
  recordNodeEvent?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** Ends the kubelet (main's fatal path) when its client certificate has run out. */
  fatal?: (err: Error) => void;
}): Promise<KubeletCertificates> {
  let clientCertificates: CertificateManager | undefined;
  let servingCertificates: CertificateManager | undefined;
  const recordEvent = p.recordNodeEvent ? { recordEvent: p.recordNodeEvent } : {};
  if (p.config.rotateCertificates || p.flags.bootstrapKubeconfig !== '') {
    clientCertificates = await startClientCertificateManager({
      certDirectory: p.flags.certDirectory,
      nodeName: p.nodeName,
      client: p.cluster.kubeClient,
      clock: p.clock,
      onRotate: (pair) => p.cluster.setClientCertificate(pair.certPem, pair.keyPem),
      rotate: p.config.rotateCertificates,
      ...(p.flags.bootstrapKubeconfig !== ''
        ? {
            bootstrap: {
              bootstrapKubeconfigPath: p.flags.bootstrapKubeconfig,
              kubeconfigPath: p.flags.kubeConfig,
              userAgent: defaultUserAgent(KUBERNETES_VERSION),
            },
          }
        : {}),
      ...recordEvent,
      ...(p.config.rotateCertificates && p.fatal ? { exit: p.fatal } : {}),
    });
  }

  let server: KubeletServer | undefined;
  let start: ((pair: StoredPair) => Promise<KubeletServer | undefined>) | undefined;
  let latest: StoredPair | undefined;
  let starting = false;
  const apply = async (pair: StoredPair) => {
    latest = pair;
    if (server) {
      server.setServingCertificate?.(pair.certPem, pair.keyPem);
      return;
    }
    if (!start || starting) return;
    starting = true;
    try {
      server = await start(pair);
      if (server && latest !== pair) server.setServingCertificate?.(latest.certPem, latest.keyPem);
    } catch (err) {
      log.error('Unable to serve the kubelet API with the issued certificate', { err: errorMessage(err) });
    } finally {
      starting = false;
    }
  };
  if (p.config.serverTLSBootstrap) {
    servingCertificates = await startServingCertificateManager({
      certDirectory: p.flags.certDirectory,
      nodeName: p.nodeName,
      hostnames: () => [p.nodeName],
      ips: () => p.nodeIPs,
      client: p.cluster.kubeClient,
      clock: p.clock,
      onRotate: (pair) => void apply(pair),
      ...recordEvent,
    });
  }
  return {
    ...(clientCertificates ? { clientCertificates } : {}),
    ...(servingCertificates ? { servingCertificates } : {}),
    serveWith(fn) {
      start = fn;
      if (latest) void apply(latest);
      else log.info('Waiting for the serving certificate to be issued before serving the kubelet API');
    },
    async stop() {
      await clientCertificates?.stop();
      await servingCertificates?.stop();
    },
  };
}
