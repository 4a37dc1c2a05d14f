import { isAbsolute } from 'node:path';
import { KubeletError } from '../lib/errors.js';

export interface CriEndpoint {
  /** The target string grpc-js dials: always `unix:///abs/path`. */
  readonly grpcTarget: string;
  /** The socket's path on disk. */
  readonly socketPath: string;
}

/**
 * Parses a --container-runtime-endpoint value. Like upstream on Linux it accepts `unix:///path`
 * (and the equivalent `unix:/path`) and, as a deprecated fallback, a bare absolute path; TCP and
 * other schemes are refused because a runtime socket must not be reachable over the network.
 */
export function parseCriEndpoint(endpoint: string): CriEndpoint {
  const trimmed = endpoint.trim();
  let path: string;
  if (trimmed.startsWith('unix://')) path = trimmed.slice('unix://'.length);
  else if (trimmed.startsWith('unix:')) path = trimmed.slice('unix:'.length);
  else if (/^[a-z][a-z0-9+.-]*:/i.test(trimmed)) {
    throw new KubeletError(
      'INVALID_CONFIG',
      `container runtime endpoint ${JSON.stringify(endpoint)}: only unix sockets are supported`,
    );
  } else path = trimmed;
  if (!path || !isAbsolute(path)) {
    throw new KubeletError(
      'INVALID_CONFIG',
      `container runtime endpoint ${JSON.stringify(endpoint)}: expected unix:///absolute/path or /absolute/path`,
    );
  }
  return { grpcTarget: `unix://${path}`, socketPath: path };
}
