/**
 * Stops a gRPC server the kind way first: calls in flight get graceMs to finish, then the server is
 * forced down, so a stop never waits on a client that keeps a stream open.
 */
import type { Server } from '@grpc/grpc-js';

export async function shutdownGrpcServer(server: Server, graceMs = 1000): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
