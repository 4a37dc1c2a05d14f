/**
 * Whether a request comes from this machine and names it: the test the node page applies on
 * listeners without authentication. The Host check keeps a web page elsewhere from reaching a
 * loopback listener through DNS rebinding (its requests name the attacker's host).
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || (isIP(a) === 4 && a.startsWith('127.'));
}

/** The Host a browser on this machine names: localhost or a loopback address, with any port. */
function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return true; // HTTP/1.0 clients (curl -0) send none; the address check still holds.
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || isLoopbackAddress(name);
}

/** Why the request is not from this machine, or undefined when it is (loopback address and Host). */
export function loopbackRefusal(req: IncomingMessage): string | undefined {
  if (!isLoopbackAddress(req.socket.remoteAddress)) return 'only clients on this machine are answered here';
  if (!isLoopbackHost(req.headers.host)) return 'only requests naming localhost are answered here';
  return undefined;
}
