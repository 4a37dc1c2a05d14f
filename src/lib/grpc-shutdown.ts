/**
 * Stops a gRPC server the kind way first: calls in flight get graceMs to finish, then the server is
 * forced down, so a stop never waits on a client that keeps a stream open.
 */

/** What a grpc-js Server and a GrpcUnaryServer both offer for stopping. */
export interface StoppableGrpcServer {
  /** Stops accepting; callback once the calls in flight have finished and the connections closed. */
  tryShutdown(callback: (err?: Error) => void): void;
  /** Cuts every connection, calls in flight too. */
  forceShutdown(): void;
}

export async function shutdownGrpcServer(server: StoppableGrpcServer, graceMs = 1000): Promise<void> {
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
