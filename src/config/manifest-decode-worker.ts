/** The worker thread of decodeManifestOffThread: decodes one manifest and posts the outcome. */
import { parentPort, workerData } from 'node:worker_threads';

import { decodeManifestSync, type DecodeRequest } from './manifest-decoder.js';

parentPort?.postMessage(JSON.stringify(decodeManifestSync(workerData as DecodeRequest)));
