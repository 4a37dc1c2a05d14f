/**
 * The HTTP/2 connection the CRI's gRPC calls and containerd's event stream ride on: the project's
 * own (src/lib/http2) or node:http2's, chosen by TSKUBELET_CRI_TRANSPORT (`own`, the default, or
 * `node-http2`) so that bench/density.ts can weigh the two in one run (issue 35, item 6).
 */
import net from 'node:net';
import { KubeletError } from '../lib/errors.js';
import { Http2ClientConnection, type StreamHandler } from '../lib/http2/client-connection.js';
import { NodeHttp2Connection } from './node-http2-connection.js';

export type CriTransport = 'own' | 'node-http2';

/** What the gRPC layer needs of a connection; both transports have it. */
export interface GrpcHttp2Connection {
  readonly acceptsStreams: boolean;
  onClose: ((error: Error | undefined) => void) | undefined;
  request(fields: readonly (readonly [string, string])[], body: Buffer, handler: StreamHandler): number;
  cancel(id: number): void;
  close(): void;
  ref(): void;
  unref(): void;
}

let chosen: CriTransport | undefined;

/** TSKUBELET_CRI_TRANSPORT, read once; anything but the two names is refused by name. */
export function criTransport(): CriTransport {
  if (chosen) return chosen;
  const raw = process.env.TSKUBELET_CRI_TRANSPORT ?? 'own';
  if (raw !== 'own' && raw !== 'node-http2') {
    throw new KubeletError(
      'INVALID_CONFIG',
      `TSKUBELET_CRI_TRANSPORT=${JSON.stringify(raw)}: expected "own" or "node-http2"`,
    );
  }
  chosen = raw;
  return chosen;
}

export function dialHttp2(socketPath: string, options: { windowBytes: number }): GrpcHttp2Connection {
  if (criTransport() === 'node-http2') return new NodeHttp2Connection(socketPath, options);
  return new Http2ClientConnection(net.connect(socketPath), options);
}
