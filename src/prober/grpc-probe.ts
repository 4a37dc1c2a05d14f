/**
 * The grpc probe (upstream: pkg/probe/grpc): connect without TLS, waiting for the connection until
 * the timeout (grpc-go's WithBlock), then call grpc.health.v1.Health/Check for the probe's service
 * within what is left of it. SERVING is a success; everything else, a failed connection included, is
 * a failure with the message grpc_health_probe users know.
 */
import type * as grpcTypes from '@grpc/grpc-js';
import { formatGoDuration } from '../lib/go-duration.js';
import type { Clock } from '../lib/clock.js';
import { loadGrpcJs } from '../lib/grpc-definitions.js';
import { GrpcStatus } from '../lib/grpc-status.js';
import { joinHostPort } from '../lib/go-net-error.js';
import {
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  HEALTH_CHECK_PATH,
  servingStatusName,
  type HealthCheckRequest,
  type HealthCheckResponse,
} from './grpc-health.js';
import type { ProbeOutcome } from './probe-outcome.js';
import { goRpcErrorText } from '../lib/grpc-status-text.js';

const SERVING = 1;

export interface GrpcProbeOptions {
  clock: Clock;
  timeoutMs: number;
  userAgent: string;
  signal?: AbortSignal;
}

export async function doGrpcProbe(
  host: string,
  service: string,
  port: number,
  opts: GrpcProbeOptions,
): Promise<ProbeOutcome> {
  // Loaded at the first gRPC probe: a node whose pods have none never loads grpc-js.
  const grpc = await loadGrpcJs();
  const addr = joinHostPort(host, port);
  const timeout = formatGoDuration(opts.timeoutMs);
  const client = new grpc.Client(
    joinHostPort(host === '' ? 'localhost' : host, port),
    grpc.credentials.createInsecure(),
    {
      'grpc.primary_user_agent': opts.userAgent,
      // A connection of its own, closed with the probe: never one shared with other channels.
      'grpc.use_local_subchannel_pool': 1,
    },
  );
  return new Promise((resolve) => {
    let settled = false;
    let connected = false;
    let call: grpcTypes.ClientUnaryCall | undefined;
    const finish = (outcome: ProbeOutcome) => {
      if (settled) return;
      settled = true;
      opts.clock.clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      call?.cancel();
      client.close();
      resolve(outcome);
    };
    const connectTimedOut = (): ProbeOutcome => ({
      result: 'failure',
      output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${timeout}: context deadline exceeded`,
    });
    const rpcTimedOut = (): ProbeOutcome => ({
      result: 'failure',
      output: `timeout: health rpc did not complete within ${timeout}`,
    });
    // The injected clock decides the timeout; grpc-js's own deadline (on real time) is the backstop.
    const timer = opts.clock.setTimeout(
      () => finish(connected ? rpcTimedOut() : connectTimedOut()),
      opts.timeoutMs,
    );
    const onAbort = () => {
      const reason: unknown = opts.signal?.reason;
      finish({
        result: 'unknown',
        output: '',
        error: reason instanceof Error ? reason : new Error('probe aborted'),
      });
    };
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    const deadline = new Date(Date.now() + opts.timeoutMs);
    client.waitForReady(deadline, (err) => {
      if (settled) return;
      if (err) return finish(connectTimedOut());
      connected = true;
      call = client.makeUnaryRequest<HealthCheckRequest, HealthCheckResponse>(
        HEALTH_CHECK_PATH,
        encodeHealthCheckRequest,
        decodeHealthCheckResponse,
        { service },
        new grpc.Metadata(),
        { deadline },
        (callErr, res) => {
          if (callErr) {
            switch (callErr.code) {
              case GrpcStatus.UNIMPLEMENTED:
                return finish({
                  result: 'failure',
                  output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${callErr.details}`,
                });
              case GrpcStatus.DEADLINE_EXCEEDED:
                return finish(rpcTimedOut());
              default:
                return finish({
                  result: 'failure',
                  output: `error: health rpc probe failed: ${goRpcErrorText(callErr.code, callErr.details)}`,
                });
            }
          }
          const status = res?.status ?? 0;
          if (status !== SERVING) {
            return finish({
              result: 'failure',
              output: `service unhealthy (responded with ${JSON.stringify(servingStatusName(status))})`,
            });
          }
          finish({ result: 'success', output: 'service healthy' });
        },
      );
    });
  });
}
