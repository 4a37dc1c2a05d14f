/** The kubelet's listeners as components: each listens when started and closes when stopped. */
import { asComponent, type Component } from '../lib/component.js';
import type { KubeletServer } from '../server/kubelet-server.js';
import type { LocalServer } from '../server/local-server.js';
import type { KubeletCertificates } from './kubelet-certificates.js';

export function serverComponent(
  name: string,
  listen: () => Promise<LocalServer | KubeletServer>,
  optional = false,
): Component {
  let server: LocalServer | KubeletServer | undefined;
  return asComponent(
    name,
    {
      start: async () => {
        server = await listen();
      },
      stop: () => server?.close(),
      detail: () => (server ? { port: server.port } : undefined),
    },
    { optional },
  );
}

/** The kubelet server under serverTLSBootstrap: it listens from the first issued certificate on. */
export function servedWhenIssued(
  certificates: KubeletCertificates,
  listen: (pair: { certPem: string; keyPem: string }) => Promise<KubeletServer>,
): Component {
  let server: KubeletServer | undefined;
  return asComponent(
    'kubeletserver',
    {
      start: () =>
        certificates.serveWith(async (pair) => {
          server = await listen(pair);
          return server;
        }),
      stop: () => server?.close(),
      detail: () => (server ? { port: server.port } : { waitingFor: 'serving certificate' }),
    },
    { optional: true },
  );
}
