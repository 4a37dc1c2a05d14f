/**
 * What the kubelet API's unit tests share: a host over a fake runtime, a configuration with
 * upstream's defaults for a loopback test server, and a bounded HTTP(S) request.
 */
import http from 'node:http';
import https from 'node:https';
import type { Pod } from '../../../src/api/core-v1.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import { pingCheck } from '../../../src/server/healthz.js';
import type { KubeletServerConfig, KubeletServerHost } from '../../../src/server/kubelet-server.js';

export const testPod: Pod = {
  metadata: { name: 'web-node1', namespace: 'default', uid: 'u1' },
  spec: { containers: [{ name: 'c', image: 'i' }] },
};

export function testHost(extra: Partial<KubeletServerHost> = {}): KubeletServerHost {
  return {
    getPods: () => [testPod],
    getRunningPods: async () => [testPod],
    healthChecks: () => [pingCheck],
    runtime: new FakeRuntime(),
    ...extra,
  };
}

export function testConfig(overrides: Partial<KubeletServerConfig> = {}): KubeletServerConfig {
  return {
    address: '127.0.0.1',
    port: 0,
    tlsCertFile: '',
    tlsPrivateKeyFile: '',
    tlsMinVersion: '',
    tlsCipherSuites: [],
    authentication: {
      x509: { clientCAFile: '' },
      webhook: { enabled: false, cacheTTLMs: 120_000 },
      anonymous: { enabled: true },
    },
    authorization: {
      mode: 'AlwaysAllow',
      webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
    },
    enableDebuggingHandlers: true,
    enableSystemLogHandler: true,
    streamingConnectionIdleTimeoutMs: 60_000,
    runtimeRequestTimeoutMs: 10_000,
    featureGates: {},
    ...overrides,
  };
}

export interface TestResponse {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** One request on a fresh connection, answered within 10 s. */
export function request(
  port: number,
  path: string,
  opts: { method?: string; secure?: boolean; headers?: Record<string, string> } = {},
): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const mod = opts.secure === false ? http : https;
    const req = mod.request({
      host: '127.0.0.1',
      port,
      path,
      method: opts.method ?? 'GET',
      headers: opts.headers,
      agent: false,
      rejectUnauthorized: false,
      timeout: 10_000,
    });
    req.on('timeout', () => req.destroy(new Error(`no answer to ${path} within 10 s`)));
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString(), headers: res.headers }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
