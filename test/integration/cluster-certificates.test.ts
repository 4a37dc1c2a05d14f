/**
 * The node's client certificate end to end: the built kubelet joins with a bootstrap token only, is
 * issued a short-lived certificate, its renewal is denied (a Warning event on the Node), and the
 * certificate really expires (the API server refuses it). The kubelet then asks again with the
 * bootstrap credentials, without a restart, and the node is Ready again under its own name.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Node } from '../../src/api/node.js';
import type { CoreEvent } from '../../src/events/event-types.js';
import { TestCsrSigner, type TestCsr } from '../apiserver/csr-signer.js';
import type { KubeObject } from '../apiserver/resources.js';
import { startTestApiServer, type TestApiServer } from '../apiserver/test-api-server.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { waitFor } from '../helpers/wait.js';

const NODE_NAME = `it-certs-node-${process.pid}`;
const NODE_USER = `system:node:${NODE_NAME}`;
const BOOTSTRAP_USER = 'system:bootstrap:abcdef';
/** Long enough to start and report Ready; short enough that the test sees it expire. */
const FIRST_LIFETIME_MS = 30_000;

describe('an expired client certificate', () => {
  let server: TestApiServer;
  let signer: TestCsrSigner;
  let kubelet: KubeletProcess;
  let dir = '';
  /** What the test's approver did, in order. */
  const decisions: {
    name: string;
    user: string;
    decision: 'approved' | 'denied';
    atMs: number;
    notAfterMs?: number;
  }[] = [];
  let approver: NodeJS.Timeout | undefined;

  const node = () => server.store.tryGet('nodes', NODE_NAME) as unknown as Node | undefined;
  const ready = () => node()?.status?.conditions?.find((c) => c.type === 'Ready');
  const withLog = async <T>(p: Promise<T>): Promise<T> =>
    p.catch(async (err: unknown) => {
      if (process.env.KEEP_KUBELET_LOG) await writeFile(process.env.KEEP_KUBELET_LOG, await kubelet.logs());
      throw new Error(
        `${(err as Error).message}\n--- kubelet log ---\n${(await kubelet.logs()).slice(-8000)}`,
      );
    });

  /**
   * The cluster's CSR approver, as kube-controller-manager's csrapproving would be configured by an
   * admin who lets nodes join with a token but not renew: bootstrap requests are approved and signed,
   * requests from the node's own identity are denied.
   */
  const decide = async (csr: TestCsr) => {
    const name = csr.metadata.name!;
    const user = csr.spec.username ?? '';
    if (user === BOOTSTRAP_USER) {
      signer.approve(name);
      const first = !decisions.some((d) => d.decision === 'approved');
      const pem = await signer.sign(name, first ? FIRST_LIFETIME_MS : 3600_000);
      const notAfterMs = Date.parse(new X509Certificate(pem).validTo);
      decisions.push({ name, user, decision: 'approved', atMs: Date.now(), notAfterMs });
    } else {
      signer.deny(name, 'NodeRenewalNotAllowed');
      decisions.push({ name, user, decision: 'denied', atMs: Date.now() });
    }
  };

  before(async () => {
    server = await startTestApiServer({
      nodeName: NODE_NAME,
      users: [{ name: BOOTSTRAP_USER, groups: ['system:bootstrappers'], token: 'abcdef.0123456789abcdef' }],
    });
    signer = new TestCsrSigner(server);
    let deciding = false;
    approver = setInterval(() => {
      if (deciding) return;
      deciding = true;
      void Promise.all(signer.pending().map(decide)).finally(() => (deciding = false));
    }, 100);
    dir = await mkdtemp(path.join(os.tmpdir(), 'it-certs-'));
    const bootstrapKubeconfig = path.join(dir, 'bootstrap-kubelet.conf');
    await server.writeKubeconfig(bootstrapKubeconfig, BOOTSTRAP_USER);
    kubelet = new KubeletProcess({
      nodeName: NODE_NAME,
      extraArgs: [
        `--bootstrap-kubeconfig=${bootstrapKubeconfig}`,
        `--kubeconfig=${path.join(dir, 'kubelet.conf')}`,
        `--cert-dir=${path.join(dir, 'pki')}`,
      ],
      extraConfig: ['rotateCertificates: true', 'nodeStatusUpdateFrequency: 2s'],
    });
    await kubelet.start();
  });

  after(async () => {
    clearInterval(approver);
    await kubelet?.dispose();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('a denied renewal is a Warning on the Node; once expired, the kubelet bootstraps again and the node is Ready again', async () => {
    await withLog(waitFor('the node to be Ready', () => ready()?.status === 'True', 30_000));
    const issued = decisions[0];
    assert.equal(issued?.user, BOOTSTRAP_USER);
    const expiresAtMs = issued.notAfterMs!;

    // The renewal (at 70–84 % of 30 s), sent with the node's own certificate, is denied.
    const denied = await withLog(
      waitFor('the denied renewal', () => decisions.find((d) => d.decision === 'denied'), 40_000),
    );
    assert.equal(denied.user, NODE_USER);
    const events = () =>
      (server.store.list('events', { namespace: 'default' }).items as unknown as CoreEvent[]).filter(
        (e) => e.involvedObject.kind === 'Node' && e.reason === 'CertificateSigningRequestDenied',
      );
    const [event] = await withLog(
      waitFor('the Warning event', () => events().length > 0 && events(), 10_000),
    );
    assert.equal(event?.type, 'Warning');
    assert.equal(
      event?.message,
      `The client certificate signing request ${denied.name} was denied (reason: NodeRenewalNotAllowed, message: denied by the test); a new one will be sent in 300s`,
    );

    // The certificate expires (the API server would refuse it), and the node lifecycle controller
    // (which the test API server does not run) would mark the node Unknown; the test does so.
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAtMs + 1000 - Date.now())));
    const n = node()!;
    server.store.updateStatus('nodes', {
      ...n,
      status: {
        ...n.status,
        conditions: (n.status?.conditions ?? []).map((c) =>
          c.type === 'Ready'
            ? {
                ...c,
                status: 'Unknown',
                reason: 'NodeStatusUnknown',
                message: 'Kubelet stopped posting node status.',
              }
            : c,
        ),
      },
    } as unknown as KubeObject);
    const recovered = await withLog(
      waitFor(
        'a CSR sent with the bootstrap credentials after the expiry',
        () => decisions.find((d) => d.user === BOOTSTRAP_USER && d !== issued),
        FIRST_LIFETIME_MS + 30_000,
      ),
    );
    assert.ok(recovered.atMs >= expiresAtMs, 'the bootstrap credentials are used only once it has expired');
    assert.equal(decisions.filter((d) => d.decision === 'denied').length, 1, JSON.stringify(decisions));

    // The node reports again under its own name with the new certificate: Ready again.
    await withLog(waitFor('the node to be Ready again', () => ready()?.status === 'True', 30_000));
    assert.ok(Date.parse(ready()?.lastHeartbeatTime ?? '') >= Math.floor(recovered.atMs / 1000) * 1000);
    const last = server.requests.filter((r) => r.resource === 'nodes' && r.subresource === 'status').at(-1);
    assert.equal(last?.user, NODE_USER);
    assert.match(
      await kubelet.logs(),
      /The certificate has expired: requesting a new one with the bootstrap credentials/,
    );
  });
});
