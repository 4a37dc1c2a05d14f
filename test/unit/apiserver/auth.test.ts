import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CertificateAuthority } from '../../apiserver/certs.js';
import {
  defaultAuthorizationPolicy,
  startTestApiServer,
  type AuthorizationAttributes,
  type TestApiServer,
} from '../../apiserver/test-api-server.js';
import { adminClient, Client, podManifest } from './client.js';

function jwtClaims(token: string): Record<string, unknown> {
  const part = token.split('.')[1] ?? '';
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('test API server: authentication and authorization', () => {
  let server: TestApiServer;
  let admin: Client;

  before(async () => {
    server = await startTestApiServer({
      nodeName: 'node-x',
      users: [{ name: 'jane', groups: ['dev'], token: 'jane-token' }],
    });
    admin = adminClient(server);
  });
  after(() => server.stop());

  it('serves HTTPS with a certificate for 127.0.0.1 signed by its CA', async () => {
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.match(server.caPem ?? '', /BEGIN CERTIFICATE/);
    const res = await admin.get('/api/v1/namespaces');
    assert.equal(res.status, 200);
    const stranger = await CertificateAuthority.create('someone-else');
    try {
      await assert.rejects(
        new Client(server, { token: server.adminToken, caPem: stranger.certPem }).get('/version'),
      );
    } finally {
      await stranger.dispose();
    }
  });

  it('maps a client certificate to its CN and O, and refuses one from another CA with 401', async () => {
    const nodeCert = await server.issueClientCertificate(server.nodeUser, ['system:nodes']);
    const asNode = await new Client(server, { cert: nodeCert }).get('/api/v1/pods');
    assert.equal(asNode.status, 200);

    const devCert = await server.issueClientCertificate('jane', ['dev']);
    const asJane = await new Client(server, { cert: devCert }).get('/api/v1/pods');
    assert.equal(asJane.status, 403);
    assert.equal(
      asJane.body.message,
      'pods is forbidden: User "jane" cannot list resource "pods" in API group "" at the cluster scope',
    );
    assert.deepEqual(asJane.body.details, { kind: 'pods' });

    const other = await CertificateAuthority.create('rogue-ca');
    try {
      const rogue = await other.issueClient('admin', ['system:masters']);
      const res = await new Client(server, { cert: rogue }).get('/api/v1/pods');
      assert.equal(res.status, 401);
    } finally {
      await other.dispose();
    }
  });

  it('answers a bad token with 401 and lets anonymous users read only health and version', async () => {
    const bad = await new Client(server, { token: 'nope' }).get('/api/v1/pods');
    assert.equal(bad.status, 401);
    assert.deepEqual(bad.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
    const anonymous = new Client(server);
    const health = await anonymous.get('/healthz');
    assert.deepEqual([health.status, health.text], [200, 'ok']);
    assert.equal((await anonymous.get('/version')).body.gitVersion, 'v1.32.4');
    const pods = await anonymous.get('/api/v1/namespaces/default/pods/x');
    assert.equal(pods.status, 403);
    assert.equal(
      pods.body.message,
      'pods "x" is forbidden: User "system:anonymous" cannot get resource "pods" in API group "" in the namespace "default"',
    );
    const api = await anonymous.get('/api');
    assert.equal(api.body.message, 'forbidden: User "system:anonymous" cannot get path "/api"');
  });

  it('decides requests and SubjectAccessReviews with a test-supplied policy', async () => {
    const seen: AuthorizationAttributes[] = [];
    server.setAuthorizationPolicy((a) => {
      seen.push(a);
      if (a.user.username === 'jane') {
        return a.verb === 'get' && a.resource === 'pods' && a.subresource === 'log'
          ? { allowed: true, reason: 'logs are fine' }
          : a.namespace === 'default' && a.resource === 'configmaps';
      }
      return defaultAuthorizationPolicy(a);
    });
    try {
      const jane = new Client(server, { token: 'jane-token' });
      assert.equal((await jane.get('/api/v1/namespaces/default/configmaps')).status, 200);
      const denied = await jane.get('/api/v1/namespaces/kube-system/configmaps');
      assert.equal(denied.status, 403);
      const last = seen[seen.length - 1]!;
      assert.deepEqual(
        [last.verb, last.namespace, last.resource, last.user.groups],
        ['list', 'kube-system', 'configmaps', ['dev', 'system:authenticated']],
      );

      const review = (spec: object) =>
        admin.post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec,
        });
      const allowed = await review({
        user: 'jane',
        groups: ['dev'],
        resourceAttributes: {
          verb: 'get',
          resource: 'pods',
          subresource: 'log',
          namespace: 'default',
          name: 'web',
        },
      });
      assert.equal(allowed.status, 201);
      assert.deepEqual(allowed.body.status, { allowed: true, reason: 'logs are fine' });
      const nodeProxy = await review({
        user: 'jane',
        resourceAttributes: { verb: 'create', resource: 'nodes', subresource: 'proxy' },
      });
      assert.deepEqual(nodeProxy.body.status, { allowed: false });
      const nodeUser = await review({
        user: server.nodeUser,
        groups: ['system:nodes'],
        nonResourceAttributes: { path: '/metrics', verb: 'get' },
      });
      assert.equal(nodeUser.body.status.allowed, true);
      const malformed = await review({ resourceAttributes: { verb: 'get' } });
      assert.equal(malformed.status, 422);
    } finally {
      server.setAuthorizationPolicy(defaultAuthorizationPolicy);
    }
  });

  it('issues a pod-bound service account token that TokenReview accepts until the pod is gone', async () => {
    server.store.create('nodes', { metadata: { name: 'node-x' } });
    const pod = await admin.post('/api/v1/namespaces/default/pods', podManifest('token-pod', 'node-x'));
    const kubelet = new Client(server, { token: server.tokenFor(server.nodeUser) });
    const res = await kubelet.post('/api/v1/namespaces/default/serviceaccounts/default/token', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: ['https://kubernetes.default.svc.cluster.local'],
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'token-pod', uid: pod.body.metadata.uid },
      },
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.kind, 'TokenRequest');
    const token: string = res.body.status.token;
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8'));
    assert.equal(header.alg, 'RS256');
    const claims = jwtClaims(token) as {
      sub: string;
      aud: string[];
      exp: number;
      iat: number;
      'kubernetes.io': {
        namespace: string;
        pod: { name: string; uid: string };
        node: { name: string };
        serviceaccount: { name: string };
      };
    };
    assert.equal(claims.sub, 'system:serviceaccount:default:default');
    assert.deepEqual(claims.aud, ['https://kubernetes.default.svc.cluster.local']);
    assert.equal(claims.exp - claims.iat, 3600);
    assert.deepEqual(claims['kubernetes.io'].pod, { name: 'token-pod', uid: pod.body.metadata.uid });
    assert.equal(claims['kubernetes.io'].node.name, 'node-x');
    assert.equal(Date.parse(res.body.status.expirationTimestamp) / 1000, claims.exp);

    const review = (t: string, audiences?: string[]) =>
      kubelet.post('/apis/authentication.k8s.io/v1/tokenreviews', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token: t, ...(audiences ? { audiences } : {}) },
      });
    const ok = await review(token);
    assert.equal(ok.status, 201);
    assert.equal(ok.body.status.authenticated, true);
    assert.equal(ok.body.status.user.username, 'system:serviceaccount:default:default');
    assert.deepEqual(ok.body.status.user.groups, [
      'system:serviceaccounts',
      'system:serviceaccounts:default',
      'system:authenticated',
    ]);
    assert.deepEqual(ok.body.status.user.extra['authentication.kubernetes.io/pod-name'], ['token-pod']);
    assert.deepEqual(ok.body.status.audiences, ['https://kubernetes.default.svc.cluster.local']);

    const wrongAudience = await review(token, ['vault']);
    assert.equal(wrongAudience.body.status.authenticated, undefined);
    assert.match(wrongAudience.body.status.error, /invalid bearer token/);

    const staticToken = await review(server.adminToken);
    assert.equal(staticToken.body.status.user.username, 'admin');
    assert.deepEqual(staticToken.body.status.user.groups, ['system:masters', 'system:authenticated']);

    // The token authenticates API requests as the service account, which may read discovery only.
    const asSa = new Client(server, { token });
    assert.equal((await asSa.get('/api/v1')).status, 200);
    const forbidden = await asSa.get('/api/v1/namespaces/default/secrets');
    assert.equal(forbidden.status, 403);
    assert.match(
      forbidden.body.message,
      /User "system:serviceaccount:default:default" cannot list resource "secrets"/,
    );

    await admin.delete('/api/v1/namespaces/default/pods/token-pod', { gracePeriodSeconds: 0 });
    const afterDelete = await review(token);
    assert.equal(afterDelete.body.status.authenticated, undefined);
    assert.equal(
      afterDelete.body.status.error,
      '[invalid bearer token, service account token has been invalidated]',
    );
    assert.equal((await asSa.get('/api/v1')).status, 401);
  });

  it('extends a kubelet projected token (3607 s) to a year but reports the asked-for expiry', async () => {
    const pod = await admin.post('/api/v1/namespaces/default/pods', podManifest('projected', 'node-x'));
    const res = await admin.post('/api/v1/namespaces/default/serviceaccounts/default/token', {
      spec: {
        expirationSeconds: 3607,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'projected', uid: pod.body.metadata.uid },
      },
    });
    const claims = jwtClaims(res.body.status.token) as {
      exp: number;
      iat: number;
      'kubernetes.io': { warnafter: number };
    };
    assert.equal(claims.exp - claims.iat, 365 * 24 * 3600);
    assert.equal(claims['kubernetes.io'].warnafter - claims.iat, 3607);
    assert.equal(Date.parse(res.body.status.expirationTimestamp) / 1000 - claims.iat, 3607);
  });

  it('refuses bad token requests as the real server does', async () => {
    const short = await admin.post('/api/v1/namespaces/default/serviceaccounts/default/token', {
      spec: { expirationSeconds: 60 },
    });
    assert.equal(short.status, 422);
    assert.equal(
      short.body.message,
      'TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes',
    );
    const noSa = await admin.post('/api/v1/namespaces/default/serviceaccounts/nope/token', { spec: {} });
    assert.equal(noSa.status, 404);
    assert.equal(noSa.body.message, 'serviceaccounts "nope" not found');
    await admin.post('/api/v1/namespaces/default/pods', podManifest('uid-pod', 'node-x'));
    const wrongUid = await admin.post('/api/v1/namespaces/default/serviceaccounts/default/token', {
      spec: { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'uid-pod', uid: 'stale' } },
    });
    assert.equal(wrongUid.status, 409);
    assert.match(
      wrongUid.body.message,
      /^Operation cannot be fulfilled on Pod "uid-pod": the UID in the bound object reference \(stale\)/,
    );
  });
});
