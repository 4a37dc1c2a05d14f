/**
 * Upstream's exit when the kubelet's client certificate has run out (transport.go's exitAfter) on a
 * fake clock: the check alone against a stub manager, the certificate manager's view of the server's
 * health from its CSR requests' outcomes (a stub API server answering each code), and the wiring in
 * startClientCertificateManager with rotation on and off.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { CertificateManager } from '../../../src/certificate/certificate-manager.js';
import { CertificateStore, type StoredPair } from '../../../src/certificate/certificate-store.js';
import {
  ClientCertificateExitCheck,
  EXPIRED_CERTIFICATE_EXIT_MESSAGE,
  EXPIRED_CERTIFICATE_UNRESPONSIVE_MESSAGE,
  NO_VALID_CERTIFICATE_EXIT_MESSAGE,
  NO_VALID_CERTIFICATE_UNRESPONSIVE_MESSAGE,
} from '../../../src/certificate/client-certificate-exit-check.js';
import { KUBE_APISERVER_CLIENT_KUBELET_SIGNER } from '../../../src/certificate/csr.js';
import { startClientCertificateManager } from '../../../src/certificate/kubelet-certificates.js';
import { selfSignedServingCertificate } from '../../../src/certificate/x509.js';
import { RestClient } from '../../../src/k8s/rest-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';

const YEAR_MS = 365 * 24 * 3600_000;
const MINUTE_MS = 60_000;

const logLines: string[] = [];
setLogSink((l) => {
  logLines.push(l);
  if (process.env.TEST_LOGS) process.stderr.write(l + '\n');
});
const logged = (message: string) => logLines.filter((l) => l.includes(message)).length;

/** A fake clock on a whole second, as certificate times are. */
const wholeSecondClock = () => new FakeClock(Math.floor(Date.now() / 1000) * 1000);

/** A pair (a year long, as selfSignedServingCertificate makes them) whose NotAfter is expiresAtMs. */
async function pairExpiringAt(expiresAtMs: number): Promise<{ certPem: string; keyPem: string }> {
  const pair = await selfSignedServingCertificate('node-1', new Date(expiresAtMs - YEAR_MS));
  assert.equal(Date.parse(new X509Certificate(pair.certPem).validTo), expiresAtMs);
  return pair;
}

async function storedPairExpiringAt(expiresAtMs: number): Promise<StoredPair> {
  const { certPem, keyPem } = await pairExpiringAt(expiresAtMs);
  return { certPem, keyPem, leaf: new X509Certificate(certPem), certFile: '' };
}

async function waitFor<T>(what: string, fn: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Moves the fake clock in steps, letting the managers' HTTP requests run between them. */
async function advanceInSteps(clock: FakeClock, ms: number, stepMs = 10_000): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    clock.advance(Math.min(stepMs, ms - done));
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('the exit check (upstream addCertRotation with exitAfter = 5 min)', () => {
  let clock: FakeClock;
  let exits: Error[];
  let current: StoredPair | undefined;
  let healthy: boolean;
  let check: ClientCertificateExitCheck;
  const source = { currentUnexpired: () => current, serverHealthy: () => healthy };

  beforeEach(() => {
    clock = wholeSecondClock();
    exits = [];
    current = undefined;
    healthy = true;
    logLines.length = 0;
  });
  afterEach(() => check?.stop());

  const startCheck = () => {
    check = new ClientCertificateExitCheck({ source, clock, exit: (err) => exits.push(err) });
    check.start();
  };

  test('a certificate past its NotAfter while the server answers: exit at the next check', async () => {
    current = await storedPairExpiringAt(clock.now() + 15_000);
    startCheck();
    clock.advance(10_000);
    assert.equal(exits.length, 0, 'still valid at the first check');
    clock.advance(10_000);
    assert.deepEqual(
      exits.map((e) => e.message),
      [EXPIRED_CERTIFICATE_EXIT_MESSAGE],
    );
    assert.equal(logged(EXPIRED_CERTIFICATE_EXIT_MESSAGE), 1);
    clock.advance(60_000);
    assert.equal(exits.length, 1, 'one exit, then no more checks');
    assert.equal(clock.pendingTimers(), 0);
  });

  test('a certificate past its NotAfter while the server does not answer: logged at each check, no exit', async () => {
    current = await storedPairExpiringAt(clock.now() + 15_000);
    healthy = false;
    startCheck();
    clock.advance(30_000);
    assert.equal(exits.length, 0);
    assert.equal(logged(EXPIRED_CERTIFICATE_UNRESPONSIVE_MESSAGE), 2);
    assert.ok(logLines.every((l) => !l.includes('exiting')));
    healthy = true; // the server answers again: the next check exits
    clock.advance(10_000);
    assert.equal(exits.length, 1);
  });

  test('no valid certificate: nothing for five minutes, then exit while the server answers', () => {
    startCheck();
    clock.advance(5 * MINUTE_MS);
    assert.equal(exits.length, 0);
    assert.equal(logLines.length, 0, logLines.join('\n'));
    clock.advance(1_000); // polled every second until a first certificate is seen
    assert.deepEqual(
      exits.map((e) => e.message),
      [NO_VALID_CERTIFICATE_EXIT_MESSAGE],
    );
    const line = logLines.find((l) => l.includes(NO_VALID_CERTIFICATE_EXIT_MESSAGE))!;
    assert.match(line, /shutdownThreshold="?5m0s/);
    assert.ok(line.includes(new Date(clock.now() - 5 * MINUTE_MS - 1_000).toISOString()), line);
  });

  test('no valid certificate while the server does not answer: logged, no exit', () => {
    healthy = false;
    startCheck();
    clock.advance(5 * MINUTE_MS + 3_000);
    assert.equal(exits.length, 0);
    assert.equal(logged(NO_VALID_CERTIFICATE_UNRESPONSIVE_MESSAGE), 3);
  });

  test('the five minutes run from the last check that saw a valid certificate', async () => {
    const pair = await storedPairExpiringAt(clock.now() + YEAR_MS);
    current = pair;
    startCheck();
    clock.advance(60_000);
    current = undefined; // expired as the manager sees it (its Current() is nil then)
    clock.advance(5 * MINUTE_MS);
    assert.equal(exits.length, 0, 'last seen at 60 s: not five minutes yet at 360 s');
    clock.advance(10_000);
    assert.equal(exits.length, 1);
    assert.equal(exits[0]?.message, NO_VALID_CERTIFICATE_EXIT_MESSAGE);
  });

  test('a certificate that comes back in time resets the window', async () => {
    startCheck();
    clock.advance(4 * MINUTE_MS);
    current = await storedPairExpiringAt(clock.now() + YEAR_MS);
    clock.advance(1_000);
    current = undefined;
    clock.advance(5 * MINUTE_MS);
    assert.equal(exits.length, 0);
    clock.advance(10_000);
    assert.equal(exits.length, 1);
  });
});

/** A stand-in API server for certificates.k8s.io: each CSR create gets the answer the test set. */
type CsrAnswer =
  | { code: number; json?: unknown; text?: string }
  | 'reset' // the connection is cut, no answer
  | 'issue'; // created, approved and issued at once

interface StubApiServer {
  url: string;
  answer: CsrAnswer;
  creates: number;
  close(): Promise<void>;
}

async function startStubApiServer(issuedCertPem: string): Promise<StubApiServer> {
  const issued = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { name: 'csr-stub', uid: 'uid-stub', resourceVersion: '1' },
    spec: { request: '', signerName: KUBE_APISERVER_CLIENT_KUBELET_SIGNER },
    status: {
      conditions: [{ type: 'Approved', status: 'True' }],
      certificate: Buffer.from(issuedCertPem).toString('base64'),
    },
  };
  const stub: StubApiServer = { url: '', answer: 'reset', creates: 0, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const json = (code: number, body: unknown) => {
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET') {
        json(200, {
          kind: 'CertificateSigningRequestList',
          metadata: { resourceVersion: '1' },
          items: [issued],
        });
        return;
      }
      stub.creates++;
      const a = stub.answer;
      if (a === 'reset') req.socket.destroy();
      else if (a === 'issue') json(201, issued);
      else if (a.json !== undefined) json(a.code, a.json);
      else {
        res.writeHead(a.code, { 'Content-Type': 'text/plain' });
        res.end(a.text ?? '');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stub.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return stub;
}

const status = (code: number, reason: string) => ({
  code,
  json: {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code,
    reason,
    message: `${reason} by the stub`,
  },
});

describe('the server health the certificate manager reads from its CSR requests (upstream updateServerError)', () => {
  let dir: string;
  let stub: StubApiServer;
  const clients: RestClient[] = [];
  const managers: CertificateManager[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cert-exit-'));
    stub = await startStubApiServer((await selfSignedServingCertificate('node-1')).certPem);
  });
  after(async () => {
    for (const m of managers) await m.stop();
    for (const c of clients) c.close();
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('401, 403 and 404 count as a live server; 5xx and no answer do not; an issued certificate does', async () => {
    const clock = wholeSecondClock();
    const client = new RestClient({ config: { server: stub.url }, clock });
    clients.push(client);
    const manager = new CertificateManager({
      name: 'client',
      store: new CertificateStore('kubelet-client', join(dir, 'health')),
      subject: () => ({ commonName: 'system:node:node-1', organization: ['system:nodes'] }),
      signerName: KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
      usages: ['digital signature', 'key encipherment', 'client auth'],
      csrClient: client,
      clock,
      random: () => 0,
    });
    managers.push(manager);
    assert.equal(manager.serverHealthy(), false, 'upstream starts from false');
    // Each answer flips the health, so each step proves the outcome was read.
    const steps: [string, CsrAnswer, boolean][] = [
      ['401 Unauthorized (a TLS-terminating proxy)', status(401, 'Unauthorized'), true],
      ['500 from a proxy, not a Status', { code: 500, text: 'upstream connect error' }, false],
      ['403 Forbidden', status(403, 'Forbidden'), true],
      ['no answer (connection reset)', 'reset', false],
      ['404, not a Status (the group is not served)', { code: 404, text: '404 page not found' }, true],
      ['503 Status', status(503, 'ServiceUnavailable'), false],
      ['an issued certificate', 'issue', true],
    ];
    stub.answer = steps[0]![1];
    await manager.start();
    for (const [i, [what, answer, expected]] of steps.entries()) {
      if (i > 0) {
        stub.answer = answer;
        await new Promise((r) => setTimeout(r, 50)); // the failed attempt's back-off is armed
        clock.advance(200_000); // past the back-off (2 s doubling to 128 s)
      }
      await waitFor(`the health after ${what}`, () => stub.creates === i + 1);
      await waitFor(`health ${expected} after ${what}`, () => manager.serverHealthy() === expected);
    }
    assert.equal(manager.rotations, 1);
  });
});

describe('startClientCertificateManager with an exit hook', () => {
  let dir: string;
  let stub: StubApiServer;
  const clients: RestClient[] = [];
  const managers: CertificateManager[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cert-exit-wiring-'));
    stub = await startStubApiServer((await selfSignedServingCertificate('node-1')).certPem);
  });
  after(async () => {
    for (const m of managers) await m.stop();
    for (const c of clients) c.close();
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A node whose certificate expires ten minutes after the clock's start; renewals are forbidden. */
  async function start(name: string, rotate: boolean) {
    const clock = wholeSecondClock();
    const expiresAtMs = clock.now() + 10 * MINUTE_MS;
    const { certPem, keyPem } = await pairExpiringAt(expiresAtMs);
    const client = new RestClient({
      config: { server: stub.url, clientCertPem: certPem, clientKeyPem: keyPem },
      clock,
    });
    clients.push(client);
    const exits: Error[] = [];
    const manager = await startClientCertificateManager({
      certDirectory: join(dir, name),
      nodeName: 'node-1',
      client,
      clock,
      onRotate: (pair) => client.setClientCertificate(pair.certPem, pair.keyPem),
      rotate,
      exit: (err) => exits.push(err),
    });
    managers.push(manager);
    return { clock, expiresAtMs, manager, exits };
  }

  test('rotation on: five minutes after the certificate expired, the server answering 403, it exits', async () => {
    stub.answer = status(403, 'Forbidden');
    logLines.length = 0;
    const { clock, expiresAtMs, manager, exits } = await start('on', true);
    // Past 70–84 % of its year, the renewal goes out at once and is forbidden: the server answers.
    await waitFor('the forbidden renewal', () => manager.serverHealthy());
    await advanceInSteps(clock, expiresAtMs - clock.now());
    assert.ok(manager.current(), 'the expired pair is still the one held');
    await advanceInSteps(clock, 5 * MINUTE_MS);
    assert.equal(exits.length, 0, 'seen valid at its NotAfter: not five minutes yet');
    await advanceInSteps(clock, 10_000);
    assert.deepEqual(
      exits.map((e) => e.message),
      [NO_VALID_CERTIFICATE_EXIT_MESSAGE],
    );
    assert.equal(logged(NO_VALID_CERTIFICATE_EXIT_MESSAGE), 1);
  });

  test('rotation on, the server not answering: no exit until it answers again', async () => {
    stub.answer = { code: 503, text: 'no healthy upstream' };
    const { clock, expiresAtMs, manager, exits } = await start('unhealthy', true);
    await waitFor('the failed renewal', () => manager.lastError);
    logLines.length = 0;
    await advanceInSteps(clock, expiresAtMs - clock.now() + 6 * MINUTE_MS);
    assert.equal(exits.length, 0);
    assert.ok(logged(NO_VALID_CERTIFICATE_UNRESPONSIVE_MESSAGE) >= 5);
    stub.answer = status(401, 'Unauthorized'); // the expired certificate is refused: the server is up
    await advanceInSteps(clock, 4 * MINUTE_MS); // the next attempt comes within the 128 s back-off
    assert.equal(exits.length, 1);
    assert.equal(exits[0]?.message, NO_VALID_CERTIFICATE_EXIT_MESSAGE);
  });

  test('rotation off: never exits', async () => {
    stub.answer = status(403, 'Forbidden');
    logLines.length = 0;
    const { clock, expiresAtMs, manager, exits } = await start('off', false);
    await advanceInSteps(clock, expiresAtMs - clock.now() + 20 * MINUTE_MS);
    assert.equal(manager.serverHealthy(), true, 'the server answered the request made once expired');
    assert.equal(exits.length, 0);
    assert.equal(logged('exiting'), 0);
  });
});
