/**
 * The CSR approver and signer a test drives (in a real cluster: `kubectl certificate approve` or the
 * controller manager's csrapproving, and its csrsigning controller). approve/deny write the
 * `approval` subresource; sign reads the request and writes `status.certificate` through `status`,
 * signed by the test API server's CA for the validity the test chooses.
 */
import type { TestApiServer } from './test-api-server.js';
import type { KubeObject } from './resources.js';

export interface TestCsr extends KubeObject {
  spec: {
    request: string;
    signerName: string;
    usages?: string[];
    username?: string;
    groups?: string[];
  };
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    certificate?: string;
  };
}

export class TestCsrSigner {
  constructor(private readonly server: TestApiServer) {}

  list(): TestCsr[] {
    return this.server.store.list('certificatesigningrequests').items as TestCsr[];
  }

  /** CSRs with no decision yet. */
  pending(): TestCsr[] {
    return this.list().filter(
      (c) => !(c.status?.conditions ?? []).some((x) => x.type === 'Approved' || x.type === 'Denied'),
    );
  }

  approve(name: string, reason = 'AutoApproved'): void {
    this.decide(name, { type: 'Approved', status: 'True', reason, message: 'approved by the test' });
  }

  deny(name: string, reason = 'TestDenied'): void {
    this.decide(name, { type: 'Denied', status: 'True', reason, message: 'denied by the test' });
  }

  /** Issues an approved CSR's certificate, valid from now for lifetimeMs (1 s back-dated, as signers do). */
  async sign(name: string, lifetimeMs: number): Promise<string> {
    const csr = this.server.store.get('certificatesigningrequests', name) as TestCsr;
    if (!(csr.status?.conditions ?? []).some((c) => c.type === 'Approved'))
      throw new Error(`csr ${name} is not approved`);
    const now = Date.now();
    const pem = await this.server.signCertificateRequest(
      Buffer.from(csr.spec.request, 'base64').toString('utf8'),
      {
        usages: csr.spec.usages ?? [],
        notBefore: new Date(now - 1000),
        notAfter: new Date(now + lifetimeMs),
      },
    );
    const latest = this.server.store.get('certificatesigningrequests', name) as TestCsr;
    this.server.store.updateStatus('certificatesigningrequests', {
      ...latest,
      status: { ...latest.status, certificate: Buffer.from(pem).toString('base64') },
    });
    return pem;
  }

  private decide(
    name: string,
    condition: { type: string; status: string; reason: string; message: string },
  ): void {
    const csr = this.server.store.get('certificatesigningrequests', name) as TestCsr;
    const stamped = { ...condition, lastUpdateTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
    this.server.store.update(
      'certificatesigningrequests',
      { ...csr, status: { ...csr.status, conditions: [...(csr.status?.conditions ?? []), stamped] } },
      { subresource: 'approval' },
    );
  }
}
