import net from 'node:net';
import { Http2ClientConnection } from './client-connection.js';
import type { GrpcHttp2Connection } from './stream-handler.js';

/** The project's own HTTP/2 connection to a unix socket. */
export function dialOwnHttp2(socketPath: string, options: { windowBytes: number }): GrpcHttp2Connection {
  return new Http2ClientConnection(net.connect(socketPath), options);
}
