// What import.meta.url is in the kubelet's CommonJS bundle (scripts/bundle.mjs injects this file
// there): the bundle's own URL, so that code finding a file beside itself (the manifest decoder's
// worker, the node page's assets) finds it in dist/kubelet.
import { pathToFileURL } from 'node:url';

/* global __filename */
export const importMetaUrl = pathToFileURL(__filename).href;
