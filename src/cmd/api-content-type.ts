/**
 * `contentType` (--kube-api-content-type): upstream's kubelet asks the API server for protobuf by
 * default. tskubelet speaks JSON whatever the setting says, on measurement (bench/api-content-type.ts,
 * docs/benchmarks.md): in V8, decoding protobuf and turning it into the JSON-shaped objects the
 * kubelet works on costs more CPU than JSON.parse for nodes, leases and events; for pods it saves
 * only what leaving managedFields undecoded saves, which JSON can have too by cutting them from the
 * text. Status patches are JSON for upstream too. The setting is accepted, so upstream's files load
 * unchanged, and named here whenever it asks for something else than what is spoken.
 */

export const API_CONTENT_TYPE_SPOKEN = 'application/json';

export interface ApiContentTypeNotice {
  /** A warning when the user set the value; one info line when it is only upstream's default. */
  level: 'warn' | 'info';
  message: string;
}

/** undefined when there is nothing to say: JSON asked for, or no API server (standalone). */
export function apiContentTypeNotice(
  contentType: string,
  context: { standalone: boolean; setByUser: boolean },
): ApiContentTypeNotice | undefined {
  if (context.standalone || contentType === API_CONTENT_TYPE_SPOKEN) return undefined;
  const why =
    'protobuf decoded into the API objects costs Node.js as much CPU as JSON or more (see docs/flags.md)';
  return {
    level: context.setByUser ? 'warn' : 'info',
    message: `contentType ${JSON.stringify(contentType)} is not used: tskubelet speaks JSON to the API server; ${why}`,
  };
}
