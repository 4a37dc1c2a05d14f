/**
 * Safe by default on a node without an API server. Upstream keeps its old, open flag defaults
 * when no --config file is given (anonymous requests, AlwaysAllow, the read-only port 10255): on a
 * cluster node the API server's own checks sit in front of them, but standalone nothing does, and
 * loopback is not authorization: every local user and every hostNetwork pod could run commands in
 * every container as root. So standalone without a config file takes upstream's config-file
 * defaults for who may ask (anonymous off, read-only port off) and serves on loopback; the kubelet
 * API is then open to holders of a client certificate (--client-ca-file, AlwaysAllow: no API server
 * to ask), and opened to everyone only on purpose (--anonymous-auth=true), with a warning.
 */
import type { KubeletConfiguration, ResolvedKubeletConfig } from './kubelet-configuration.js';

export interface StandaloneDefaultsInput {
  /** The merged --config-dir drop-ins: what they set stays theirs. */
  fromFiles: KubeletConfiguration;
  /** Whether `address` came from a file or a flag. */
  addressGiven: boolean;
}

/** Applied after the legacy flag defaults and before the flags, which still win. */
export function applyStandaloneDefaults(c: KubeletConfiguration, input: StandaloneDefaultsInput): void {
  if (!input.addressGiven) c.address = '127.0.0.1';
  if (input.fromFiles.authentication?.anonymous?.enabled === undefined)
    c.authentication = { ...c.authentication, anonymous: { enabled: false } };
  if (input.fromFiles.readOnlyPort === undefined) c.readOnlyPort = 0;
}

/** The kubelet API open to anyone who can reach it, loopback included: anonymous requests and AlwaysAllow. */
export function openAccessWarning(config: ResolvedKubeletConfig): string | undefined {
  if (!config.enableServer) return undefined;
  if (!config.authentication.anonymous.enabled || config.authorization.mode !== 'AlwaysAllow')
    return undefined;
  const who = isLoopbackAddress(config.address)
    ? 'every user and process on this machine (hostNetwork pods included)'
    : 'anyone who can reach this address';
  return (
    `The kubelet API on ${config.address}:${config.port} lets anonymous requests do anything ` +
    `(authentication.anonymous.enabled=true, authorization.mode=AlwaysAllow): ${who} can run ` +
    'commands in every container as root. Use x509 (--client-ca-file) or webhook authentication ' +
    'with authorization.mode Webhook instead'
  );
}

/**
 * Standalone without a config file (`ourDefaults`), with nothing to authenticate a request with: upstream refuses to serve the API then
 * ("No authentication method configured"), and so does tskubelet; this says why and how to open it.
 */
export function unservedApiNotice(config: ResolvedKubeletConfig, ourDefaults: boolean): string | undefined {
  if (!ourDefaults || !config.enableServer) return undefined;
  const a = config.authentication;
  if (a.anonymous.enabled || a.x509.clientCAFile !== '') return undefined;
  return (
    `The kubelet API (${config.address}:${config.port}) is not served: standalone, it has no way to ` +
    'authenticate a request (no --client-ca-file; no API server for webhook authentication; anonymous ' +
    'requests are off). Root reads the node with `tskubelet get/describe/logs/events`; to serve the API, ' +
    'give --client-ca-file, or --anonymous-auth=true to open it to every local user on purpose'
  );
}

function isLoopbackAddress(address: string): boolean {
  return address === '::1' || /^127\./.test(address);
}
