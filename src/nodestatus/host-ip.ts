/**
 * The node's own IP when --node-ip does not give one: the address upstream's NodeAddress setter
 * finds by looking up the node's name, else on the interface of the default route
 * (k8s.io/apimachinery util/net ChooseHostInterface), preferring the family of --node-ip (IPv4 when
 * unset or 0.0.0.0, IPv6 for ::).
 */
import type * as DnsPromises from 'node:dns/promises';
import net from 'node:net';
import os from 'node:os';
import { lazyBuiltin } from '../lib/lazy-builtin.js';
import { readSmallTextFile } from '../lib/read-small-file.js';

// Loaded by the first look-up of the node's name.
const dnsPromises = lazyBuiltin<typeof DnsPromises>('node:dns/promises');

export type IpFamily = 4 | 6;

export interface InterfaceAddress {
  address: string;
  family: IpFamily;
  internal: boolean;
}

/** The host's network facts, passed in so tests can give their own. */
export interface NetworkHost {
  interfaces(): Record<string, InterfaceAddress[]>;
  /** /proc/net/route or /proc/net/ipv6_route; undefined when the file does not exist. */
  readRouteFile(family: IpFamily): Promise<string | undefined>;
  /** Every address the name resolves to (getaddrinfo), bounded by signal. */
  lookupHost(name: string, signal: AbortSignal): Promise<string[]>;
}

export const realNetworkHost: NetworkHost = {
  interfaces: () => {
    const out: Record<string, InterfaceAddress[]> = {};
    for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
      out[name] = (addrs ?? []).map((a) => ({
        address: a.address,
        family: a.family === 'IPv6' ? 6 : 4,
        internal: a.internal,
      }));
    }
    return out;
  },
  readRouteFile: async (family) => {
    try {
      return await readSmallTextFile(family === 4 ? '/proc/net/route' : '/proc/net/ipv6_route');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  },
  lookupHost: async (name, signal) => {
    // getaddrinfo cannot be cancelled; the race only stops the wait for it.
    const answer = dnsPromises()
      .lookup(name, { all: true })
      .then((list) => list.map((a) => a.address));
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    return Promise.race([answer, aborted]);
  },
};

export function ipFamily(ip: string): IpFamily | undefined {
  const v = net.isIP(ip);
  return v === 4 || v === 6 ? v : undefined;
}

function ipv4Octets(ip: string): number[] {
  return ip.split('.').map(Number);
}

/** Expands an IPv6 address to its eight 16-bit groups. */
function ipv6Groups(ip: string): number[] {
  let text = ip.toLowerCase();
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = ipv4Octets(v4[1]!);
    text =
      text.slice(0, -v4[1]!.length) + `${((a! << 8) | b!).toString(16)}:${((c! << 8) | d!).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = parse(tail);
  if (tail === undefined) return h;
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

/** An IPv4-mapped IPv6 address as Go's net.IP.To4 sees it, else undefined. */
function mappedV4(groups: number[]): number[] | undefined {
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff];
  }
  return undefined;
}

export function isUnspecifiedIP(ip: string): boolean {
  const f = ipFamily(ip);
  if (f === 4) return ipv4Octets(ip).every((o) => o === 0);
  if (f === 6) return ipv6Groups(ip).every((g) => g === 0);
  return false;
}

/** Go's net.IP.IsGlobalUnicast: not loopback, link-local, multicast, broadcast or unspecified. */
export function isGlobalUnicast(ip: string): boolean {
  const f = ipFamily(ip);
  let octets: number[] | undefined;
  if (f === 4) octets = ipv4Octets(ip);
  else if (f === 6) {
    const g = ipv6Groups(ip);
    octets = mappedV4(g);
    if (!octets) {
      if (g.every((x) => x === 0)) return false;
      if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return false; // ::1
      if ((g[0]! & 0xff00) === 0xff00) return false; // multicast
      if ((g[0]! & 0xffc0) === 0xfe80) return false; // link-local
      return true;
    }
  } else return false;
  const [a, b] = octets;
  if (octets.every((o) => o === 0) || octets.every((o) => o === 255)) return false;
  if (a === 127 || a! >= 224 || (a === 169 && b === 254)) return false;
  return true;
}

/**
 * Upstream's validateNodeIP: why ip cannot be the node's address, or undefined when it can
 * (a unicast address of one of the host's interfaces).
 */
export function validateNodeIP(ip: string, host: NetworkHost): string | undefined {
  const f = ipFamily(ip);
  if (!f) return 'nodeIP must be a valid IP address';
  if (isUnspecifiedIP(ip)) return "nodeIP can't be an all zeros address";
  const firstOctet = f === 4 ? ipv4Octets(ip)[0]! : undefined;
  const groups = f === 6 ? ipv6Groups(ip) : undefined;
  if (firstOctet === 127 || (groups && groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1)) {
    return "nodeIP can't be loopback address";
  }
  if (
    (firstOctet !== undefined && firstOctet >= 224 && firstOctet < 240) ||
    (groups && (groups[0]! & 0xff00) === 0xff00)
  ) {
    return "nodeIP can't be a multicast address";
  }
  if (f === 4 ? ip.startsWith('169.254.') : (groups![0]! & 0xffc0) === 0xfe80) {
    return "nodeIP can't be a link-local unicast address";
  }
  const wanted = canonicalIP(ip);
  for (const addrs of Object.values(host.interfaces())) {
    if (addrs.some((a) => canonicalIP(a.address) === wanted)) return undefined;
  }
  return `node IP: ${JSON.stringify(ip)} not found in the host's network interfaces`;
}

/** One spelling per address, so `::ffff:10.0.0.1` and `10.0.0.1` compare equal, as Go's IP.Equal. */
export function canonicalIP(ip: string): string {
  const f = ipFamily(ip);
  if (f === 4) return ipv4Octets(ip).join('.');
  if (f === 6) {
    const g = ipv6Groups(ip);
    const v4 = mappedV4(g);
    return v4 ? v4.join('.') : g.map((x) => x.toString(16)).join(':');
  }
  return ip;
}

/** How Go's net.IP.String() writes an address: dotted IPv4 (also for v4-mapped), RFC 5952 IPv6. */
export function formatIP(ip: string): string {
  const f = ipFamily(ip);
  if (f === 4) return ipv4Octets(ip).join('.');
  if (f !== 6) return ip;
  const g = ipv6Groups(ip);
  const v4 = mappedV4(g);
  if (v4) return v4.join('.');
  // The longest run of two or more zero groups (the first of equals) becomes "::".
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (list: number[]) => list.map((x) => x.toString(16)).join(':');
  if (bestStart < 0) return hex(g);
  return `${hex(g.slice(0, bestStart))}::${hex(g.slice(bestStart + bestLen))}`;
}

/** Interfaces that carry a default route in a /proc/net/route (or ipv6_route) table, in table order. */
export function defaultRouteInterfaces(table: string, family: IpFamily): string[] {
  const out: string[] = [];
  const lines = table.split('\n');
  if (family === 4) {
    for (const line of lines.slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 2) continue;
      if (f[1] === '00000000' && !out.includes(f[0]!)) out.push(f[0]!);
    }
  } else {
    for (const line of lines) {
      const f = line.trim().split(/\s+/);
      // dest, dest prefix length, ..., interface last; loopback's own entries are not routes out.
      if (f.length < 10) continue;
      if (/^0{32}$/.test(f[0]!) && f[1] === '00' && f[9] !== 'lo' && !out.includes(f[9]!)) out.push(f[9]!);
    }
  }
  return out;
}

/**
 * ChooseHostInterface: a global unicast address on an interface with a default route, the preferred
 * family first; without route tables, the first such address on any interface.
 */
export async function chooseHostInterface(host: NetworkHost, prefer: IpFamily = 4): Promise<string> {
  const families: IpFamily[] = prefer === 4 ? [4, 6] : [6, 4];
  const interfaces = host.interfaces();
  const pick = (names: string[], family: IpFamily) => {
    for (const name of names) {
      const found = (interfaces[name] ?? []).find(
        (a) => a.family === family && !a.internal && isGlobalUnicast(a.address),
      );
      if (found) return found.address;
    }
    return undefined;
  };
  const v4Table = await host.readRouteFile(4);
  if (v4Table === undefined) {
    for (const family of families) {
      const ip = pick(Object.keys(interfaces), family);
      if (ip) return ip;
    }
    throw new Error('no acceptable interface with global unicast address found on host');
  }
  const v6Table = (await host.readRouteFile(6)) ?? '';
  const routes = { 4: defaultRouteInterfaces(v4Table, 4), 6: defaultRouteInterfaces(v6Table, 6) };
  if (routes[4].length === 0 && routes[6].length === 0) {
    throw new Error('no default routes found in "/proc/net/route" or "/proc/net/ipv6_route"');
  }
  for (const family of families) {
    const ip = pick(routes[family], family);
    if (ip) return ip;
  }
  throw new Error('unable to select an IP from default routes.');
}

/**
 * Steps 3 and 4 of upstream's NodeAddress: the first valid address the node's name resolves to (the
 * preferred family first), else the default route's interface address.
 */
export async function discoverNodeIP(
  nodeName: string,
  host: NetworkHost,
  prefer: IpFamily,
  signal: AbortSignal,
): Promise<string> {
  let candidate: string | undefined;
  try {
    for (const addr of await host.lookupHost(nodeName, signal)) {
      if (validateNodeIP(addr, host) !== undefined) continue;
      if (ipFamily(addr) === prefer) return addr;
      candidate ??= addr;
    }
  } catch {
    // An unresolvable name is the common case; the default route decides then.
  }
  return candidate ?? chooseHostInterface(host, prefer);
}
