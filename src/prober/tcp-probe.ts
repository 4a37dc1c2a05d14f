/**
 * The tcpSocket probe (upstream: pkg/probe/tcp): a success when a TCP connection opens within the
 * timeout, closed again at once; any failure to connect is a failure with Go's dial message.
 */
import net from 'node:net';
import type { Clock } from '../lib/clock.js';
import { dialErrorMessage, joinHostPort } from '../lib/go-net-error.js';
import type { ProbeOutcome } from './probe-outcome.js';

export interface TcpProbeOptions {
  clock: Clock;
  timeoutMs: number;
  signal?: AbortSignal;
}

export function doTcpProbe(host: string, port: number, opts: TcpProbeOptions): Promise<ProbeOutcome> {
  const addr = joinHostPort(host, port);
  return new Promise((resolve) => {
    // Go dials the local system for an empty host.
    const socket = net.connect({ host: host === '' ? 'localhost' : host, port });
    let settled = false;
    const finish = (outcome: ProbeOutcome) => {
      if (settled) return;
      settled = true;
      opts.clock.clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(outcome);
    };
    const timer = opts.clock.setTimeout(
      () => finish({ result: 'failure', output: `dial tcp ${addr}: i/o timeout` }),
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
    socket.once('connect', () => finish({ result: 'success', output: '' }));
    socket.once('error', (err) => {
      // With several addresses for a name, Node reports all attempts together; the first says why.
      const first = err instanceof AggregateError && err.errors.length > 0 ? (err.errors[0] as unknown) : err;
      finish({ result: 'failure', output: dialErrorMessage(first, addr, host) });
    });
  });
}
