/**
 * TLS bootstrap, client certificate rotation and serving certificates against the test API server
 * with its CSR API, the test driving approval and signing: the CSR has upstream's fields, the files
 * on disk follow upstream's layout, the issued identity is what the API server sees, a rotation swaps
 * the credential without a restart while requests keep succeeding, a denied renewal keeps the old one.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  existsSync,
} from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { loadClientCert, TMP_PRIVATE_KEY_FILE } from '../../../src/certificate/bootstrap.js';
import type { CertificateManager } from '../../../src/certificate/certificate-manager.js';
import {
  startClientCertificateManager,
  startServingCertificateManager,
} from '../../../src/certificate/kubelet-certificates.js';
import { parseCsrPem } from '../../../src/certificate/x509.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { FakeClock, realClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { pingCheck } from '../../../src/server/healthz.js';
import { startKubeletServer } from '../../../src/server/kubelet-server.js';
import { TestCsrSigner, type TestCsr } from '../../apiserver/csr-signer.js';
import { startTestApiServer, type TestApiServer } from '../../apiserver/test-api-server.js';

setLogSink((l) => {
  if (process.env.TEST_LOGS) process.stderr.write(l + '\n');
});

const NODE = 'node-1';
const DAY_MS = 24 * 3600_000;

/** Lets the manager's pending I/O (CSR create, watch) run before the fake clock moves. */
const settle = () => new Promise((r) => setTimeout(r, 300));
const BOOTSTRAP_USER = 'system:bootstrap:abcdef';

async function waitFor<T>(what: string, fn: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('TLS bootstrap and certificate rotation', () => {
  let server: TestApiServer;
  let signer: TestCsrSigner;
  let dir: string;
  const clients: RestClient[] = [];
  const managers: CertificateManager[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tls-bootstrap-'));
    server = await startTestApiServer({
      nodeName: NODE,
      users: [{ name: BOOTSTRAP_USER, groups: ['system:bootstrappers'], token: 'abcdef.0123456789abcdef' }],
    });
    signer = new TestCsrSigner(server);
  });
  after(async () => {
    for (const m of managers) await m.stop();
    for (const c of clients) c.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Bootstraps into its own folder; the test approves and signs for lifetimeMs. */
  async function bootstrap(
    name: string,
    lifetimeMs: number,
  ): Promise<{ certDir: string; kubeconfig: string; csr: TestCsr }> {
    const certDir = join(dir, name, 'pki');
    const kubeconfig = join(dir, name, 'kubelet.conf');
    const bootstrapKubeconfig = join(dir, name, 'bootstrap-kubelet.conf');
    mkdirSync(join(dir, name), { recursive: true });
    await server.writeKubeconfig(bootstrapKubeconfig, BOOTSTRAP_USER);
    const seen = new Set(signer.list().map((c) => c.metadata.name));
    const done = loadClientCert({
      kubeconfigPath: kubeconfig,
      bootstrapKubeconfigPath: bootstrapKubeconfig,
      certDirectory: certDir,
      nodeName: NODE,
      clock: realClock,
      waitTimeoutMs: 20_000,
    });
    const csr = await waitFor('the bootstrap CSR', () =>
      signer.pending().find((c) => !seen.has(c.metadata.name)),
    );
    signer.approve(csr.metadata.name!, 'AutoApproved');
    await signer.sign(csr.metadata.name!, lifetimeMs);
    assert.equal(await done, true);
    return { certDir, kubeconfig, csr };
  }

  test('a node with only a bootstrap token gets a client certificate laid out as upstream lays it out', async () => {
    const { certDir, kubeconfig, csr } = await bootstrap('bootstrap', 3600_000);

    // The CSR: upstream's name, signer, usages, subject and key.
    assert.match(csr.metadata.name!, /^node-csr-[A-Za-z0-9_-]{43}$/);
    assert.equal(csr.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.deepEqual(csr.spec.usages, ['digital signature', 'key encipherment', 'client auth']);
    assert.equal(csr.spec.username, BOOTSTRAP_USER);
    assert.ok(csr.spec.groups?.includes('system:bootstrappers'));
    const request = parseCsrPem(Buffer.from(csr.spec.request, 'base64').toString('utf8'));
    assert.equal(request.commonName, `system:node:${NODE}`);
    assert.deepEqual(request.organization, ['system:nodes']);
    assert.equal(await request.verify(), true);

    // The files: kubelet-client-<timestamp>.pem (cert then key, 0600) and the current link to it.
    const current = join(certDir, 'kubelet-client-current.pem');
    assert.ok(lstatSync(current).isSymbolicLink());
    const target = readlinkSync(current);
    assert.match(
      target,
      new RegExp(`^${certDir}/kubelet-client-\\d{4}-\\d\\d-\\d\\d-\\d\\d-\\d\\d-\\d\\d\\.pem$`),
    );
    assert.equal(statSync(target).mode & 0o777, 0o600);
    const pem = readFileSync(target, 'utf8');
    assert.match(
      pem,
      /^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n-----BEGIN EC PRIVATE KEY-----\n[\s\S]+-----END EC PRIVATE KEY-----\n$/,
    );
    const key = createPrivateKey(pem);
    assert.equal(key.asymmetricKeyType, 'ec');
    assert.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.equal(new X509Certificate(pem).subject, `O=system:nodes\nCN=system:node:${NODE}`);
    assert.equal(existsSync(join(certDir, TMP_PRIVATE_KEY_FILE)), false);

    // The kubeconfig names the link, with the bootstrap cluster.
    const doc = parse(readFileSync(kubeconfig, 'utf8')) as {
      'current-context': string;
      users: { name: string; user: Record<string, string> }[];
      clusters: { cluster: Record<string, string> }[];
      contexts: { context: Record<string, string> }[];
    };
    assert.equal(doc['current-context'], 'default-context');
    assert.equal(doc.users[0]!.name, 'default-auth');
    assert.equal(doc.users[0]!.user['client-certificate'], current);
    assert.equal(doc.users[0]!.user['client-key'], current);
    assert.equal(doc.clusters[0]!.cluster.server, server.url);
    assert.equal(doc.contexts[0]!.context.namespace, 'default');

    // The node's identity: the API server sees system:node:node-1.
    const client = await RestClient.fromKubeconfig(kubeconfig);
    clients.push(client);
    const r = await client.list({ resource: 'pods' });
    assert.equal(r.ok, true);
    assert.equal(server.requests.at(-1)?.user, `system:node:${NODE}`);

    // A restart with a valid certificate asks for nothing.
    const before = signer.list().length;
    assert.equal(
      await loadClientCert({
        kubeconfigPath: kubeconfig,
        bootstrapKubeconfigPath: join(dir, 'bootstrap', 'bootstrap-kubelet.conf'),
        certDirectory: certDir,
        nodeName: NODE,
        clock: realClock,
      }),
      false,
    );
    assert.equal(signer.list().length, before);
  });

  test('a short-lived client certificate is renewed through a new CSR and swapped in without a restart', async () => {
    const { certDir, kubeconfig } = await bootstrap('rotate', 4_000);
    const client = await RestClient.fromKubeconfig(kubeconfig);
    clients.push(client);
    const firstCert = client.config.clientCertPem;
    let failures = 0;
    let successes = 0;
    const poll = setInterval(() => {
      client.list({ resource: 'pods' }, { timeoutMs: 2000 }).then(
        (r) => (r.ok ? successes++ : failures++),
        () => failures++,
      );
    }, 100);
    const seen = new Set(signer.list().map((c) => c.metadata.name));
    try {
      const manager = await startClientCertificateManager({
        certDirectory: certDir,
        nodeName: NODE,
        client,
        clock: realClock,
        onRotate: (pair) => client.setClientCertificate(pair.certPem, pair.keyPem),
      });
      managers.push(manager);
      // Renewal at 70–84 % of 4 s: a CSR signed with the node's own certificate, generateName csr-.
      const csr = await waitFor('the renewal CSR', () =>
        signer.pending().find((c) => !seen.has(c.metadata.name)),
      );
      assert.match(csr.metadata.name!, /^csr-/);
      assert.equal(csr.spec.username, `system:node:${NODE}`);
      assert.equal(csr.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
      signer.approve(csr.metadata.name!);
      await signer.sign(csr.metadata.name!, 3600_000);
      await waitFor('the rotation', () => manager.rotations === 1);
      assert.notEqual(client.config.clientCertPem, firstCert);
      // Past the first certificate's expiry, requests still succeed on the new one.
      await new Promise((r) => setTimeout(r, 2_500));
      const r = await client.list({ resource: 'pods' });
      assert.equal(r.ok, true);
      assert.equal(server.requests.at(-1)?.user, `system:node:${NODE}`);
      assert.equal(failures, 0, `${failures} requests failed during rotation (${successes} succeeded)`);
      assert.ok(successes > 20);
      const current = readlinkSync(join(certDir, 'kubelet-client-current.pem'));
      assert.equal(new X509Certificate(readFileSync(current)).validTo, manager.current()!.leaf.validTo);
    } finally {
      clearInterval(poll);
    }
  });

  test('a denied renewal keeps the old certificate, records a Warning on the Node and backs off 5 min, then 10 min', async () => {
    const { certDir, kubeconfig } = await bootstrap('denied', DAY_MS);
    const client = await RestClient.fromKubeconfig(kubeconfig);
    clients.push(client);
    const firstCert = client.config.clientCertPem;
    const seen = new Set(signer.list().map((c) => c.metadata.name));
    const newCsr = () => signer.list().find((c) => !seen.has(c.metadata.name));
    const clock = new FakeClock(Date.now());
    const events: { type: string; reason: string; message: string }[] = [];
    const manager = await startClientCertificateManager({
      certDirectory: certDir,
      nodeName: NODE,
      client,
      clock,
      onRotate: (pair) => client.setClientCertificate(pair.certPem, pair.keyPem),
      recordEvent: (type, reason, message) => events.push({ type, reason, message }),
    });
    managers.push(manager);
    clock.advance(0.85 * DAY_MS); // past the rotation deadline (70–84 % of the lifetime)
    const denied = await waitFor('the renewal CSR', newCsr);
    seen.add(denied.metadata.name);
    signer.deny(denied.metadata.name!);
    await waitFor('the failure', () => manager.lastError);
    assert.match(manager.lastError!, /certificate signing request is denied, reason: TestDenied/);
    await waitFor('the event', () => events.length === 1);
    assert.deepEqual(events, [
      {
        type: 'Warning',
        reason: 'CertificateSigningRequestDenied',
        message: `The client certificate signing request ${denied.metadata.name} was denied (reason: TestDenied, message: denied by the test); a new one will be sent in 300s`,
      },
    ]);
    assert.equal(client.config.clientCertPem, firstCert);
    assert.equal((await client.list({ resource: 'pods' })).ok, true);

    // Not a fresh key every few seconds: nothing until the 5 minutes have passed.
    await settle();
    clock.advance(299_000);
    await settle();
    assert.equal(newCsr(), undefined, 'a new CSR before the back-off ended');
    clock.advance(1_000);
    const second = await waitFor('the second CSR', newCsr);
    seen.add(second.metadata.name);
    signer.deny(second.metadata.name!);
    await waitFor('the second event', () => events.length === 2);
    assert.match(events[1]!.message, /a new one will be sent in 600s$/);
    await settle();
    clock.advance(599_000);
    await settle();
    assert.equal(newCsr(), undefined, 'the back-off doubles');
    clock.advance(1_000);

    const third = await waitFor('the third CSR', newCsr);
    signer.approve(third.metadata.name!);
    await signer.sign(third.metadata.name!, DAY_MS);
    await waitFor('the rotation', () => manager.rotations === 1);
    assert.notEqual(client.config.clientCertPem, firstCert);
    assert.equal((await client.list({ resource: 'pods' })).ok, true);
    assert.equal(events.length, 2);
  });

  test('an expired client certificate is replaced through the bootstrap credentials, in place', async () => {
    const { certDir, kubeconfig } = await bootstrap('expired', DAY_MS);
    const bootstrapKubeconfig = join(dir, 'expired', 'bootstrap-kubelet.conf');
    // An admin's kubeconfig with the certificate embedded: recovery writes one that names the store.
    await server.writeKubeconfig(kubeconfig, `system:node:${NODE}`, {
      credential: 'certificate',
      groups: ['system:nodes'],
    });
    const client = await RestClient.fromKubeconfig(kubeconfig);
    clients.push(client);
    const seen = new Set(signer.list().map((c) => c.metadata.name));
    const newCsr = () => signer.list().find((c) => !seen.has(c.metadata.name));
    const clock = new FakeClock(Date.now());
    const manager = await startClientCertificateManager({
      certDirectory: certDir,
      nodeName: NODE,
      client,
      clock,
      onRotate: (pair) => client.setClientCertificate(pair.certPem, pair.keyPem),
      bootstrap: { bootstrapKubeconfigPath: bootstrapKubeconfig, kubeconfigPath: kubeconfig },
    });
    managers.push(manager);
    // The stored pair (from bootstrap) is newer than the kubeconfig's: it is the one in use.
    const inUse = manager.current()!;
    clock.advance(Date.parse(inUse.leaf.validTo) - clock.now() - 60_000);
    // The renewal goes out with the node's own certificate, and nobody approves it.
    const renewal = await waitFor('the renewal CSR', newCsr);
    seen.add(renewal.metadata.name);
    assert.equal(renewal.spec.username, `system:node:${NODE}`);
    await settle();
    clock.advance(61_000); // the certificate expires with the renewal still pending
    const recovery = await waitFor('the CSR sent with the bootstrap credentials', newCsr);
    assert.equal(recovery.spec.username, BOOTSTRAP_USER);
    assert.equal(recovery.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.equal(
      parseCsrPem(Buffer.from(recovery.spec.request, 'base64').toString('utf8')).commonName,
      `system:node:${NODE}`,
    );
    signer.approve(recovery.metadata.name!);
    // Valid for two days: the fake clock is a day ahead of the signer's.
    await signer.sign(recovery.metadata.name!, 2 * DAY_MS);
    await waitFor('the recovery', () => manager.bootstraps === 1);
    assert.equal(manager.rotations, 1);
    assert.ok(Date.parse(manager.current()!.leaf.validTo) > clock.now());
    assert.equal(client.config.clientCertPem, manager.current()!.certPem);
    // --kubeconfig now names the store, so a restart loads the new pair without bootstrapping.
    const doc = parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: Record<string, string> }[] };
    assert.equal(doc.users[0]!.user['client-certificate'], join(certDir, 'kubelet-client-current.pem'));
    const r = await client.list({ resource: 'pods' });
    assert.equal(r.ok, true);
    assert.equal(server.requests.at(-1)?.user, `system:node:${NODE}`);
  });

  test('a bootstrap kubeconfig removed after the join (as kubeadm does) is read again at each attempt', async () => {
    const { certDir, kubeconfig } = await bootstrap('removed', DAY_MS);
    const bootstrapKubeconfig = join(dir, 'removed', 'bootstrap-kubelet.conf');
    rmSync(bootstrapKubeconfig);
    const client = await RestClient.fromKubeconfig(kubeconfig);
    clients.push(client);
    const seen = new Set(signer.list().map((c) => c.metadata.name));
    const newCsr = () => signer.list().find((c) => !seen.has(c.metadata.name));
    const clock = new FakeClock(Date.now());
    const manager = await startClientCertificateManager({
      certDirectory: certDir,
      nodeName: NODE,
      client,
      clock,
      onRotate: (pair) => client.setClientCertificate(pair.certPem, pair.keyPem),
      rotate: false,
      bootstrap: { bootstrapKubeconfigPath: bootstrapKubeconfig, kubeconfigPath: kubeconfig },
    });
    managers.push(manager);
    // rotateCertificates off: nothing is asked for before the certificate expires.
    clock.advance(DAY_MS - 60_000);
    await settle();
    assert.equal(newCsr(), undefined);
    clock.advance(61_000);
    await waitFor('the failure', () => manager.lastError);
    assert.match(
      manager.lastError!,
      /^unable to load the bootstrap kubeconfig to replace the expired client certificate: .*bootstrap-kubelet\.conf/,
    );
    // The admin puts a new one there: the next attempt (2 s later) uses it, without a restart.
    await server.writeKubeconfig(bootstrapKubeconfig, BOOTSTRAP_USER);
    clock.advance(2_500);
    const recovery = await waitFor('the CSR sent with the new bootstrap kubeconfig', newCsr);
    assert.equal(recovery.spec.username, BOOTSTRAP_USER);
    signer.approve(recovery.metadata.name!);
    await signer.sign(recovery.metadata.name!, 2 * DAY_MS);
    await waitFor('the recovery', () => manager.bootstraps === 1);
  });

  test('serverTLSBootstrap: a kubelet-serving CSR with the node names and addresses, served and rotated', async () => {
    const { kubeconfig } = await bootstrap('serving', 3600_000);
    const client = await RestClient.fromKubeconfig(kubeconfig);
    clients.push(client);
    const certDir = join(dir, 'serving', 'pki');
    const served: { server?: Awaited<ReturnType<typeof startKubeletServer>> } = {};
    let firstPair: { certPem: string; keyPem: string } | undefined;
    const seen = new Set(signer.list().map((c) => c.metadata.name));
    const manager = await startServingCertificateManager({
      certDirectory: certDir,
      nodeName: NODE,
      hostnames: () => [NODE],
      ips: () => ['127.0.0.1'],
      client,
      clock: realClock,
      onRotate: (pair) => {
        if (served.server) served.server.setServingCertificate?.(pair.certPem, pair.keyPem);
        else firstPair = pair;
      },
    });
    managers.push(manager);
    const csr = await waitFor('the serving CSR', () =>
      signer.pending().find((c) => !seen.has(c.metadata.name)),
    );
    seen.add(csr.metadata.name);
    assert.equal(csr.spec.signerName, 'kubernetes.io/kubelet-serving');
    assert.deepEqual(csr.spec.usages, ['digital signature', 'key encipherment', 'server auth']);
    const request = parseCsrPem(Buffer.from(csr.spec.request, 'base64').toString('utf8'));
    assert.equal(request.commonName, `system:node:${NODE}`);
    assert.deepEqual(request.dnsNames, [NODE]);
    assert.deepEqual(request.ipAddresses, ['127.0.0.1']);
    signer.approve(csr.metadata.name!);
    await signer.sign(csr.metadata.name!, 6_000);
    await waitFor('the serving certificate', () => firstPair);
    assert.ok(lstatSync(join(certDir, 'kubelet-server-current.pem')).isSymbolicLink());

    const kubeletServer = await startKubeletServer(
      {
        getPods: () => [],
        getRunningPods: async () => [],
        healthChecks: () => [pingCheck],
        runtime: new FakeRuntime(),
      },
      {
        config: {
          address: '127.0.0.1',
          port: 0,
          tlsCertFile: '',
          tlsPrivateKeyFile: '',
          tlsMinVersion: '',
          tlsCipherSuites: [],
          authentication: {
            x509: { clientCAFile: '' },
            webhook: { enabled: false, cacheTTLMs: 0 },
            anonymous: { enabled: true },
          },
          authorization: {
            mode: 'AlwaysAllow',
            webhook: { cacheAuthorizedTTLMs: 0, cacheUnauthorizedTTLMs: 0 },
          },
          enableDebuggingHandlers: true,
          enableSystemLogHandler: false,
          streamingConnectionIdleTimeoutMs: 60_000,
          runtimeRequestTimeoutMs: 10_000,
          featureGates: {},
        },
        nodeName: NODE,
        certDirectory: certDir,
        servingCertificate: firstPair!,
      },
    );
    served.server = kubeletServer;
    try {
      // Verified against the cluster CA, as the API server's proxy to the kubelet verifies it.
      const first = await servedCertificate(kubeletServer.port, server.caPem!);
      assert.equal(first.subject, `O=system:nodes\nCN=system:node:${NODE}`);
      assert.match(first.subjectAltName ?? '', /IP Address:127.0.0.1/);

      const renewal = await waitFor('the serving renewal', () =>
        signer.pending().find((c) => !seen.has(c.metadata.name)),
      );
      signer.approve(renewal.metadata.name!);
      await signer.sign(renewal.metadata.name!, 3600_000);
      await waitFor('the serving rotation', () => manager.rotations === 2, 20_000);
      const second = await servedCertificate(kubeletServer.port, server.caPem!);
      assert.notEqual(second.serialNumber, first.serialNumber);
    } finally {
      await kubeletServer.close();
    }
  });
});

function servedCertificate(port: number, caPem: string): Promise<X509Certificate & { status: number }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port, path: '/healthz', ca: caPem, rejectUnauthorized: true, agent: false },
      (res) => {
        const raw = (res.socket as import('node:tls').TLSSocket).getPeerX509Certificate();
        res.resume();
        res.on('end', () =>
          raw
            ? resolve(Object.assign(raw, { status: res.statusCode ?? 0 }))
            : reject(new Error('no certificate')),
        );
      },
    );
    req.on('error', reject);
  });
}
