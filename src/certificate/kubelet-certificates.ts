/**
 * The kubelet's two certificate managers as upstream's pkg/kubelet/certificate builds them:
 * - client (rotateCertificates): CN=system:node:<name>, O=system:nodes, signer
 *   kubernetes.io/kube-apiserver-client-kubelet, stored as kubelet-client-*.pem, with upstream's
 *   exit check when no valid certificate is left (client-certificate-exit-check.ts);
 * - serving (serverTLSBootstrap): the same subject with the node's host names and IPs as SANs,
 *   signer kubernetes.io/kubelet-serving, usages digital signature, key encipherment, server auth,
 *   stored as kubelet-server-*.pem.
 */
import { X509Certificate } from 'node:crypto';
import type { Clock } from '../lib/clock.js';
import { logger } from '../lib/log.js';
import { loadKubeconfig, type RestConfig } from '../k8s/kubeconfig.js';
import { errorMessage, KubeletError } from '../lib/errors.js';
import { RestClient } from '../k8s/rest-client.js';
import { CLIENT_USAGES, writeKubeconfigFromBootstrapping } from './bootstrap.js';
import { CertificateManager, type CertificateManagerOptions } from './certificate-manager.js';
import { CertificateStore, type StoredPair } from './certificate-store.js';
import { ClientCertificateExitCheck } from './client-certificate-exit-check.js';
import { KUBE_APISERVER_CLIENT_KUBELET_SIGNER, KUBELET_SERVING_SIGNER, type KeyUsage } from './csr.js';

const log = logger('certificate');

export const SERVING_USAGES: KeyUsage[] = ['digital signature', 'key encipherment', 'server auth'];

export interface ClientCertificateOptions {
  certDirectory: string;
  nodeName: string;
  /** The kubelet's API client: it sends the renewals, and presents each new pair. */
  client: RestClient;
  clock: Clock;
  /** Called with each new pair (after the first load too, when the store holds a newer one). */
  onRotate: (pair: StoredPair) => void;
  /**
   * --bootstrap-kubeconfig and --kubeconfig: once the client certificate has expired, the next one
   * is requested with the bootstrap credentials, and --kubeconfig is written again to name the store.
   */
  bootstrap?: { bootstrapKubeconfigPath: string; kubeconfigPath: string; userAgent?: string };
  /** rotateCertificates; when false (with bootstrap) the certificate is replaced only once expired. */
  rotate?: boolean;
  /** Warning events on the Node (a refused CSR). */
  recordEvent?: CertificateManagerOptions['recordEvent'];
  refusedBackoff?: CertificateManagerOptions['refusedBackoff'];
  /**
   * With rotation on (as upstream passes exitAfter only then): ends the kubelet once it has had no
   * valid client certificate for five minutes while the API server answers (ClientCertificateExitCheck).
   */
  exit?: (err: Error) => void;
}

/** Upstream's clientsetFn fallback: a client with the bootstrap credentials, read afresh each time. */
function bootstrapHooks(
  opts: ClientCertificateOptions,
  store: CertificateStore,
): Pick<CertificateManagerOptions, 'bootstrapClient' | 'onBootstrapped'> {
  const b = opts.bootstrap;
  if (!b) return {};
  return {
    bootstrapClient: async () => {
      let config: RestConfig;
      try {
        config = await loadKubeconfig(b.bootstrapKubeconfigPath);
      } catch (err) {
        // kubeadm removes its bootstrap-kubelet.conf after the join: a new one is read at the next try.
        throw new KubeletError(
          'INVALID_CONFIG',
          `unable to load the bootstrap kubeconfig to replace the expired client certificate: ${errorMessage(err)}`,
          { cause: err },
        );
      }
      return new RestClient({
        config,
        clock: opts.clock,
        ...(b.userAgent ? { userAgent: b.userAgent } : {}),
      });
    },
    // As bootstrap at start does: a restart then finds a kubeconfig that names a valid pair.
    onBootstrapped: async () =>
      writeKubeconfigFromBootstrapping(
        await loadKubeconfig(b.bootstrapKubeconfigPath),
        b.kubeconfigPath,
        store.currentPath(),
      ),
  };
}

/** Starts client certificate rotation (upstream NewKubeletClientCertificateManager). */
export async function startClientCertificateManager(
  opts: ClientCertificateOptions,
): Promise<CertificateManager> {
  const config = opts.client.config;
  const store = new CertificateStore('kubelet-client', opts.certDirectory);
  const manager = new CertificateManager({
    name: 'client',
    store,
    subject: () => ({ commonName: `system:node:${opts.nodeName}`, organization: ['system:nodes'] }),
    signerName: KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    usages: CLIENT_USAGES,
    csrClient: opts.client,
    clock: opts.clock,
    onRotate: opts.onRotate,
    ...bootstrapHooks(opts, store),
    ...(opts.rotate !== undefined ? { rotate: opts.rotate } : {}),
    ...(opts.recordEvent ? { recordEvent: opts.recordEvent } : {}),
    ...(opts.refusedBackoff ? { refusedBackoff: opts.refusedBackoff } : {}),
    ...(config.clientCertPem && config.clientKeyPem
      ? { initial: { certPem: config.clientCertPem, keyPem: config.clientKeyPem } }
      : {}),
  });
  await manager.start();
  const current = manager.current();
  if (!current) log.warn('Client certificate rotation is on but the kubeconfig has no client certificate');
  else if (!config.clientCertPem || !sameLeaf(current.leaf, config.clientCertPem)) opts.onRotate(current);
  if (opts.exit && opts.rotate !== false) {
    const check = new ClientCertificateExitCheck({ source: manager, clock: opts.clock, exit: opts.exit });
    check.start();
    manager.stopSignal.addEventListener('abort', () => check.stop(), { once: true });
  }
  return manager;
}

function sameLeaf(leaf: X509Certificate, pem: string): boolean {
  try {
    return new X509Certificate(pem).fingerprint256 === leaf.fingerprint256;
  } catch {
    return false;
  }
}

export interface ServingCertificateOptions {
  certDirectory: string;
  nodeName: string;
  /** SANs: the node's host names and addresses (read at each renewal). */
  hostnames: () => string[];
  ips: () => string[];
  client: RestClient;
  clock: Clock;
  onRotate: (pair: StoredPair) => void;
  recordEvent?: CertificateManagerOptions['recordEvent'];
}

/** Starts serving certificate requests and rotation (upstream NewKubeletServerCertificateManager). */
export async function startServingCertificateManager(
  opts: ServingCertificateOptions,
): Promise<CertificateManager> {
  const manager = new CertificateManager({
    name: 'server',
    store: new CertificateStore('kubelet-server', opts.certDirectory),
    subject: () => ({
      commonName: `system:node:${opts.nodeName}`,
      organization: ['system:nodes'],
      dnsNames: opts.hostnames(),
      ipAddresses: opts.ips(),
    }),
    signerName: KUBELET_SERVING_SIGNER,
    usages: SERVING_USAGES,
    csrClient: opts.client,
    clock: opts.clock,
    onRotate: opts.onRotate,
    ...(opts.recordEvent ? { recordEvent: opts.recordEvent } : {}),
  });
  await manager.start();
  const current = manager.current();
  if (current) opts.onRotate(current);
  return manager;
}
