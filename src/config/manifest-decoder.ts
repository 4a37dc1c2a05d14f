/**
 * Turns a manifest's bytes into pods without stalling the event loop. A large manifest (a 9 MB file
 * takes seconds to parse as YAML) is decoded in a worker thread, so /healthz, the sync loop and the
 * PLEG go on meanwhile; a small one is decoded in place, which is cheaper than starting a thread.
 * Either way the outcome is the same: the pods, or an INVALID_MANIFEST error naming the problem.
 */
import type * as WorkerThreads from 'node:worker_threads';

import type { Pod } from '../api/core-v1.js';
import { KubeletError, errorMessage } from '../lib/errors.js';
import { lazyBuiltin } from '../lib/lazy-builtin.js';
import {
  parseManifestDocument,
  staticPodFromObject,
  staticPodsFromObject,
  type StaticPodOrigin,
} from './static-pod-defaults.js';

/** Manifests larger than this are decoded off the main thread (about 10 ms of parsing in place). */
export const OFF_THREAD_DECODE_MIN_BYTES = 64 * 1024;
/**
 * A decode that takes longer than this is given up (the worker is stopped) and the file refused.
 * Generous: the YAML parser needs tens of seconds for a 10 MB manifest of small nodes on a busy
 * machine, and the time passes off the main thread.
 */
export const DECODE_TIMEOUT_MS = 120_000;
// Enough for a 10 MB manifest's parse tree; a worker that needs more is stopped, not the kubelet.
const WORKER_MAX_OLD_GENERATION_MB = 512;
// Loaded by the first large manifest.
const workerThreads = lazyBuiltin<typeof WorkerThreads>('node:worker_threads');

/** What a file holds (one Pod) or a URL serves (a Pod or a PodList). */
export type ManifestShape = 'pod' | 'podOrList';

export interface DecodeRequest {
  text: string;
  origin: StaticPodOrigin;
  /** Names the manifest in messages (its path or URL). */
  what: string;
  shape: ManifestShape;
}

export type DecodeResult = { pods: Pod[] } | { error: string };

/** Decodes in the calling thread; never throws. */
export function decodeManifestSync(req: DecodeRequest): DecodeResult {
  try {
    const obj = parseManifestDocument(req.text, req.what);
    const pods =
      req.shape === 'pod'
        ? [staticPodFromObject(obj, req.origin, req.what)]
        : staticPodsFromObject(obj, req.origin, req.what);
    return { pods };
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

// The worker is this module's sibling: .js once built. Under tsx (tests, `node --import tsx`) it is
// .ts, and Node 20 does not pass tsx's loader on to a worker's entry module, so a two-line entry
// registers tsx in the worker first (tsx is a devDependency: this path never runs built).
const RUNNING_FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(`./manifest-decode-worker${RUNNING_FROM_SOURCE ? '.ts' : '.js'}`, import.meta.url);

function startWorker(options: {
  workerData: unknown;
  resourceLimits: { maxOldGenerationSizeMb: number };
}): WorkerThreads.Worker {
  const { Worker } = workerThreads();
  if (!RUNNING_FROM_SOURCE) return new Worker(WORKER_URL, options);
  const entry = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(WORKER_URL.href)}); })`;
  return new Worker(entry, { ...options, eval: true, execArgv: [] });
}

/** Decodes in a worker thread, bounded by a deadline and a heap limit. */
export function decodeManifestOffThread(
  req: DecodeRequest,
  timeoutMs = DECODE_TIMEOUT_MS,
): Promise<DecodeResult> {
  return new Promise((resolve) => {
    let settled = false;
    const worker = startWorker({
      workerData: req,
      resourceLimits: { maxOldGenerationSizeMb: WORKER_MAX_OLD_GENERATION_MB },
    });
    const finish = (result: DecodeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      resolve(result);
    };
    const timer = setTimeout(
      () => finish({ error: `${req.what}: decoding took longer than ${timeoutMs} ms; refused` }),
      timeoutMs,
    );
    // The result comes as JSON text: one string crosses threads far faster than a large object graph.
    worker.once('message', (json: string) => finish(JSON.parse(json) as DecodeResult));
    worker.once('error', (err) => finish({ error: `${req.what}: decoding failed: ${errorMessage(err)}` }));
    worker.once('exit', (code) => finish({ error: `${req.what}: decoding stopped (exit code ${code})` }));
  });
}

/** Decodes off the main thread when the text is large, in place otherwise. */
export function decodeManifest(req: DecodeRequest): Promise<DecodeResult> {
  if (req.text.length >= OFF_THREAD_DECODE_MIN_BYTES) return decodeManifestOffThread(req);
  return Promise.resolve(decodeManifestSync(req));
}

/** The pods of a result, or the INVALID_MANIFEST error it stands for. */
export function podsOrThrow(result: DecodeResult): Pod[] {
  if ('error' in result) throw new KubeletError('INVALID_MANIFEST', result.error);
  return result.pods;
}
