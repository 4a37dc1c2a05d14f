/** A kubeconfig file for one user of the test cluster, with the CA and credentials embedded. */
import { stringify } from 'yaml';

export interface KubeconfigParams {
  server: string;
  /** The CA that signed the server's certificate; absent for a plain HTTP server. */
  caPem?: string;
  user: string;
  token?: string;
  clientCertPem?: string;
  clientKeyPem?: string;
  clusterName?: string;
}

function b64(pem: string): string {
  return Buffer.from(pem).toString('base64');
}

export function renderKubeconfig(p: KubeconfigParams): string {
  const clusterName = p.clusterName ?? 'test-cluster';
  const userEntry: Record<string, string> = {};
  if (p.token) userEntry.token = p.token;
  if (p.clientCertPem && p.clientKeyPem) {
    userEntry['client-certificate-data'] = b64(p.clientCertPem);
    userEntry['client-key-data'] = b64(p.clientKeyPem);
  }
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: clusterName,
        cluster: { server: p.server, ...(p.caPem ? { 'certificate-authority-data': b64(p.caPem) } : {}) },
      },
    ],
    users: [{ name: p.user, user: userEntry }],
    contexts: [{ name: `${p.user}@${clusterName}`, context: { cluster: clusterName, user: p.user } }],
    'current-context': `${p.user}@${clusterName}`,
    preferences: {},
  });
}
