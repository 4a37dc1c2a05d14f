/**
 * A kubelet API server (HTTPS, anonymous, debugging handlers on) over a fake runtime with one running
 * container default/web/c, whose exec URL points at a stand-in for the runtime's streaming server:
 * it accepts the SPDY upgrade and then says nothing, as a runtime waiting for its client would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../src/api/core-v1.js';
import { FakeRuntime } from '../../src/cri/testing/fake-runtime.js';
import type { ContainerConfig, ExecRequest, PodSandboxConfig } from '../../src/cri/types.js';
import { pingCheck } from '../../src/server/healthz.js';
import { startKubeletServer, type KubeletServerConfig } from '../../src/server/kubelet-server.js';

export interface StreamingKubelet {
  port: number;
  /** The stand-in runtime's open stream sockets. */
  runtimeSockets: Set<Socket>;
  close(): Promise<void>;
}

const POD: Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'u1' },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
};

export async function startStreamingKubelet(): Promise<StreamingKubelet> {
  const dir = mkdtempSync(join(tmpdir(), 'streaming-kubelet-'));
  const runtimeSockets = new Set<Socket>();
  const streamingServer = http.createServer();
  streamingServer.on('upgrade', (_req, socket: Socket) => {
    runtimeSockets.add(socket);
    socket.on('close', () => runtimeSockets.delete(socket));
    socket.on('error', () => undefined);
    socket.on('end', () => socket.destroy()); // the kubelet hung up
    socket.resume();
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
        'X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n',
    );
  });
  await new Promise<void>((r) => streamingServer.listen(0, '127.0.0.1', r));
  const streamingUrl = `http://127.0.0.1:${(streamingServer.address() as AddressInfo).port}/exec/token`;

  class StreamingFakeRuntime extends FakeRuntime {
    override async exec(req: ExecRequest): Promise<string> {
      await super.exec(req);
      return streamingUrl;
    }
  }
  const runtime = new StreamingFakeRuntime();
  runtime.addImage('busybox');
  const sandboxConfig = {
    metadata: { name: 'web', namespace: 'default', uid: 'u1', attempt: 0 },
    labels: {},
    annotations: {},
  } as unknown as PodSandboxConfig;
  const sandbox = await runtime.runPodSandbox(sandboxConfig, '');
  const containerConfig = {
    metadata: { name: 'c', attempt: 0 },
    image: { image: 'busybox' },
    labels: {
      'io.kubernetes.container.name': 'c',
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'default',
      'io.kubernetes.pod.uid': 'u1',
    },
    annotations: {},
  } as unknown as ContainerConfig;
  await runtime.startContainer(await runtime.createContainer(sandbox, containerConfig, sandboxConfig));

  const config: KubeletServerConfig = {
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
    authorization: { mode: 'AlwaysAllow', webhook: { cacheAuthorizedTTLMs: 0, cacheUnauthorizedTTLMs: 0 } },
    enableDebuggingHandlers: true,
    enableSystemLogHandler: false,
    streamingConnectionIdleTimeoutMs: 60_000,
    runtimeRequestTimeoutMs: 2000,
    featureGates: {},
  };
  const kubelet = await startKubeletServer(
    { getPods: () => [POD], getRunningPods: async () => [POD], healthChecks: () => [pingCheck], runtime },
    { config, nodeName: 'node-a', certDirectory: join(dir, 'pki') },
  );
  return {
    port: kubelet.port,
    runtimeSockets,
    async close() {
      await kubelet.close();
      for (const s of runtimeSockets) s.destroy();
      await new Promise<void>((r) => streamingServer.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
