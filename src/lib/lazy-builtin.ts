/**
 * A Node built-in module loaded on its first use instead of at start-up. Each built-in costs its
 * compiled code in the heap and its source's pages of the node binary in RSS: an idle kubelet that
 * never compresses, decodes a large manifest or opens a SPDY stream has no use for node:zlib or
 * node:worker_threads (docs/benchmarks.md, "Node built-ins on first use"). `require` rather than
 * `import()`, so that the first use stays synchronous.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** A getter for the built-in `name` ('node:zlib'), which loads it the first time it is called. */
export function lazyBuiltin<T>(name: `node:${string}`): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
