/**
 * Node's socket errors rendered as Go's net package renders them, because probe failure messages
 * reach users verbatim (`dial tcp 10.244.77.5:8080: connect: connection refused`) and people grep
 * for them.
 */

/** Go's net.JoinHostPort: brackets around an IPv6 host. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

// errno → the strerror text Go prints after "connect: " (or "read: ", "write: ").
const ERRNO_TEXT: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by peer',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network is unreachable',
  ETIMEDOUT: 'connection timed out',
  EADDRNOTAVAIL: 'cannot assign requested address',
  EADDRINUSE: 'address already in use',
  EPIPE: 'broken pipe',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
};

interface SystemError extends Error {
  code?: string;
  syscall?: string;
  hostname?: string;
}

/** The message of a failed dial to addr (`host:port`), as Go's net.Dial returns it. */
export function dialErrorMessage(err: unknown, addr: string, host: string): string {
  const e = err as SystemError;
  const code = e?.code ?? '';
  if (code === 'ENOTFOUND') return `dial tcp: lookup ${host}: no such host`;
  if (code === 'EAI_AGAIN') return `dial tcp: lookup ${host}: Temporary failure in name resolution`;
  const text = ERRNO_TEXT[code];
  if (text) return `dial tcp ${addr}: connect: ${text}`;
  return `dial tcp ${addr}: ${e instanceof Error ? e.message : String(err)}`;
}

/** The message of a connection that failed after it was made, as Go's net.Conn reports it. */
export function connErrorMessage(err: unknown, local: string | undefined, remote: string): string {
  const e = err as SystemError;
  const code = e?.code ?? '';
  // Node's name for a peer that closed before answering; Go's reader just sees the end of the stream.
  if (e instanceof Error && e.message === 'socket hang up') return 'EOF';
  const text = ERRNO_TEXT[code];
  const op = e?.syscall === 'write' ? 'write' : 'read';
  if (text) return `${op} tcp ${local ? `${local}->` : ''}${remote}: ${op}: ${text}`;
  return e instanceof Error ? e.message : String(err);
}
