/**
 * A pod's resolver configuration, as upstream's dns.Configurer.GetPodDNS forms it from the pod's
 * dnsPolicy and dnsConfig, the node's resolv.conf (--resolv-conf), --cluster-dns and
 * --cluster-domain.
 */
import { stat } from 'node:fs/promises';
import type { Pod } from '../api/core-v1.js';
import type { DNSConfig } from '../cri/types.js';
import { logger } from '../lib/log.js';
import { FileTooLargeError, readSmallTextFile } from '../lib/read-small-file.js';
import { EventReason, type EventRecorder } from './event-recorder.js';
import { formatPod } from './format.js';

const log = logger('kuberuntime');

const DEFAULT_DNS_OPTIONS = ['ndots:5'];
// Upstream's validation limits (ExpandedDNSConfig, GA since 1.28).
const MAX_DNS_NAMESERVERS = 3;
const MAX_DNS_SEARCH_PATHS = 32;
const MAX_DNS_SEARCH_LIST_CHARS = 2048;
const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
const MAX_RESOLV_CONF_BYTES = 10 * 1024 * 1024;

export interface ParsedResolvConf {
  nameservers: string[];
  searches: string[];
  options: string[];
  errors: string[];
}

/** Nameserver lines accumulate; the last search line and the last options line win. */
export function parseResolvConf(text: string): ParsedResolvConf {
  const parsed: ParsedResolvConf = { nameservers: [], searches: [], options: [], errors: [] };
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter((f) => f !== '');
    const [key, ...rest] = fields;
    if (key === undefined) continue;
    if (key === 'nameserver') {
      if (rest[0] !== undefined) parsed.nameservers.push(rest[0]);
      else parsed.errors.push('nameserver list is empty ');
    } else if (key === 'search') {
      // One domain with and without its trailing dot counts once.
      parsed.searches = rest.map((s) => (s.endsWith('.') ? s.slice(0, -1) : s));
    } else if (key === 'options') {
      parsed.options = rest;
    }
  }
  return parsed;
}

/** A file whose change time is this close to now is read again next time (see readHostDNSConfig). */
const RACY_WINDOW_NS = 2_000_000_000n;

function tooLarge(file: string): string {
  return `resolv.conf ${file} is larger than ${MAX_RESOLV_CONF_BYTES} bytes`;
}

/** The last version of each resolv.conf read: what identifies it (from stat), and what it gave. */
const hostDNSReads = new Map<string, { version: string; config?: DNSConfig; error?: string }>();

/**
 * Reads the node's resolv.conf; '' means none (upstream's `--resolv-conf=""`). Read once per sync so
 * that a pod's sandbox and containers see one version of it. A stat tells whether the file changed
 * since the last read: nearly always it has not, and it is parsed again only when it has (the
 * read was four more file system calls for every pod that starts).
 */
export async function readHostDNSConfig(
  resolvConfPath: string,
  signal?: AbortSignal,
): Promise<DNSConfig | undefined> {
  if (resolvConfPath === '') return undefined;
  const st = await stat(resolvConfPath, { bigint: true });
  signal?.throwIfAborted();
  if (st.size > BigInt(MAX_RESOLV_CONF_BYTES)) throw new Error(tooLarge(resolvConfPath));
  // A file changed within the last moments may change again within the same timestamp tick, with
  // the same size: it is kept under no version (git's "racily clean" rule), so it is read again.
  const racy = BigInt(Date.now()) * 1_000_000n - st.ctimeNs < RACY_WINDOW_NS;
  const version = racy ? '' : `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  let read = hostDNSReads.get(resolvConfPath);
  if (version === '' || read?.version !== version) {
    read = { version, ...(await parseHostDNSFile(resolvConfPath, Number(st.size), signal)) };
    hostDNSReads.set(resolvConfPath, read);
  }
  if (read.error !== undefined) throw new Error(read.error);
  // A copy: the caller's pod config may be built on it.
  const { servers, searches, options } = read.config!;
  return { servers: [...servers], searches: [...searches], options: [...options] };
}

/** The file's DNS config, or why it has none; a file that cannot be read throws (and is not kept). */
async function parseHostDNSFile(
  file: string,
  sizeHint: number,
  signal: AbortSignal | undefined,
): Promise<{ config?: DNSConfig; error?: string }> {
  let text: string;
  try {
    text = await readSmallTextFile(file, { sizeHint, maxBytes: MAX_RESOLV_CONF_BYTES, signal });
  } catch (err) {
    if (err instanceof FileTooLargeError) return { error: tooLarge(file) };
    throw err;
  }
  const parsed = parseResolvConf(text);
  if (parsed.errors.length > 0) return { error: parsed.errors.join(', ') };
  return { config: { servers: parsed.nameservers, searches: parsed.searches, options: parsed.options } };
}

export interface PodDNSOptions {
  /** The parsed resolv.conf, or undefined when the kubelet has none configured. */
  hostDNS: DNSConfig | undefined;
  clusterDNS: string[];
  clusterDomain: string;
  nodeIPs: string[];
  recorder?: EventRecorder;
}

type PodDNSType = 'cluster' | 'host' | 'none';

function podDNSType(pod: Pod): PodDNSType {
  // The API server defaults dnsPolicy to ClusterFirst.
  switch (pod.spec.dnsPolicy ?? 'ClusterFirst') {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'ClusterFirst':
      // A host-network pod with ClusterFirst resolves like the node.
      return pod.spec.hostNetwork ? 'host' : 'cluster';
    case 'Default':
      return 'host';
  }
  log.error('Failed to get DNS type for pod. Falling back to DNSClusterFirst policy.', {
    pod: formatPod(pod),
  });
  return 'cluster';
}

export function getPodDNS(pod: Pod, opts: PodDNSOptions): DNSConfig {
  let config: DNSConfig = {
    servers: [...(opts.hostDNS?.servers ?? [])],
    searches: [...(opts.hostDNS?.searches ?? [])],
    options: [...(opts.hostDNS?.options ?? [])],
  };
  let type = podDNSType(pod);
  if (type === 'none') {
    config = { servers: [], searches: [], options: [] };
  } else if (type === 'cluster') {
    if (opts.clusterDNS.length > 0) {
      // The cluster DNS server is the pod's only nameserver; it forwards what it cannot answer.
      config.servers = [...opts.clusterDNS];
      config.searches = searchesForClusterFirst(config.searches, pod, opts.clusterDomain);
      config.options = [...DEFAULT_DNS_OPTIONS];
    } else {
      const message =
        'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. ' +
        'Falling back to "Default" policy.';
      // Upstream only records the event; a log line per pod per sync would drown the log.
      log.v(4, message, { pod: formatPod(pod) });
      // Upstream's GetPodDNS tells it on the node, then on the pod.
      opts.recorder?.nodeEvent?.('Warning', EventReason.MissingClusterDNS, message);
      opts.recorder?.event(
        pod,
        '',
        'Warning',
        EventReason.MissingClusterDNS,
        `pod: "${formatPod(pod)}". ${message}`,
      );
      type = 'host';
    }
  }
  if (type === 'host' && opts.hostDNS === undefined) {
    // No resolv.conf: point at the node itself, as resolvers do when no nameserver is given.
    config.servers =
      opts.nodeIPs.length > 0
        ? opts.nodeIPs.map((ip) => (ip.includes(':') ? '::1' : '127.0.0.1'))
        : ['127.0.0.1'];
    config.searches = ['.'];
  }
  if (pod.spec.dnsConfig) {
    const extra = pod.spec.dnsConfig;
    config.servers = omitDuplicates([...config.servers, ...(extra.nameservers ?? [])]);
    config.searches = omitDuplicates([...config.searches, ...(extra.searches ?? [])]);
    config.options = mergeDNSOptions(config.options, extra.options ?? []);
  }
  return fitLimits(config, pod, opts.recorder);
}

function searchesForClusterFirst(hostSearch: string[], pod: Pod, clusterDomain: string): string[] {
  if (clusterDomain === '') return hostSearch;
  const ns = pod.metadata.namespace ?? '';
  return omitDuplicates([`${ns}.svc.${clusterDomain}`, `svc.${clusterDomain}`, clusterDomain, ...hostSearch]);
}

function omitDuplicates(values: string[]): string[] {
  return [...new Set(values)];
}

/** The pod's options override the base ones of the same name; order is kept (upstream's is a map's). */
function mergeDNSOptions(base: string[], extra: { name?: string; value?: string }[]): string[] {
  const merged = new Map<string, string>();
  for (const op of base) {
    const i = op.indexOf(':');
    if (i >= 0) merged.set(op.slice(0, i), op.slice(i + 1));
    else merged.set(op, '');
  }
  for (const op of extra) merged.set(op.name ?? '', op.value ?? '');
  return [...merged].map(([name, value]) => (value !== '' ? `${name}:${value}` : name));
}

function fitLimits(config: DNSConfig, pod: Pod, recorder: EventRecorder | undefined): DNSConfig {
  const warn = (message: string): void => {
    log.error(message, { pod: formatPod(pod) });
    recorder?.event(pod, '', 'Warning', EventReason.DNSConfigForming, message);
  };
  let servers = config.servers;
  if (servers.length > MAX_DNS_NAMESERVERS) {
    servers = servers.slice(0, MAX_DNS_NAMESERVERS);
    warn(
      `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${servers.join(' ')}`,
    );
  }
  let exceeded = false;
  let searches = config.searches;
  if (searches.length > MAX_DNS_SEARCH_PATHS) {
    searches = searches.slice(0, MAX_DNS_SEARCH_PATHS);
    exceeded = true;
  }
  // Some resolvers (glibc 2.28) abort on a search path over 253 characters.
  const fitting = searches.filter((s) => s.length <= DNS1123_SUBDOMAIN_MAX_LENGTH);
  if (fitting.length !== searches.length) exceeded = true;
  searches = fitting;
  const lineLength = searches.join(' ').length;
  if (lineLength > MAX_DNS_SEARCH_LIST_CHARS) {
    let cut = 0;
    let cutLength = 0;
    for (let i = searches.length - 1; i >= 0; i--) {
      cutLength += (searches[i]?.length ?? 0) + 1;
      cut++;
      if (lineLength - cutLength <= MAX_DNS_SEARCH_LIST_CHARS) break;
    }
    searches = searches.slice(0, searches.length - cut);
    exceeded = true;
  }
  if (exceeded) {
    warn(
      `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${searches.join(' ')}`,
    );
  }
  return { servers, searches, options: config.options };
}
