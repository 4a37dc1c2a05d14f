/**
 * The container spec hash stored in `io.kubernetes.container.hash`; a running container whose
 * stored hash differs from its spec's is killed and started again.
 *
 * Like upstream since 1.31 (kubecontainer.HashContainer with pickFieldsToHash), only `name` and
 * `image` go into the hash: they are the only container fields the API lets change on a live
 * pod, and any other field would make a kubelet upgrade that adds a defaulted field restart every
 * container on the node. A static pod whose manifest changes gets a new UID from its source, so it
 * is replaced as a whole rather than through this hash.
 *
 * The value is FNV-1a 32 of the picked fields' JSON (keys sorted, as Go marshals a map), as
 * lowercase hex without leading zeros (Go's strconv.FormatUint(h, 16)). It is not numerically
 * upstream's (which hashes a spew dump of that JSON), so a container created by an upstream kubelet
 * reads as changed once, and is restarted, when this kubelet takes the node over.
 */
import type { Container } from '../api/core-v1.js';
import { fnv32a } from '../lib/fnv32a.js';

export function hashContainer(container: Container): string {
  const picked = JSON.stringify({ image: container.image ?? '', name: container.name });
  return fnv32a(Buffer.from(picked, 'utf8')).toString(16);
}

/** FNV-1a 32 (src/lib/fnv32a.ts), under the name this module's callers know. */
export const fnv1a32 = fnv32a;
