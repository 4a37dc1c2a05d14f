// The kubelet as it runs (bin/tskubelet): the compiled modules of dist/src bundled into a few
// files under dist/kubelet, whitespace and syntax minified, names kept.
//
// Why: V8 keeps each module's source text for lazy compilation, and each ES module costs a module
// record and its namespace. Bundled, an idle kubelet holds about 3 MiB less heap and starts in
// about two thirds of the time (docs/benchmarks.md, "One bundle"). Identifiers are not mangled, so
// a stack trace still names its functions; `node --enable-source-maps` maps its lines back to the
// TypeScript through the linked source map.
//
// npm packages stay outside the bundle, loaded from node_modules as before (lazily where the code
// says so). Run by `npm run build`, after tsc.
import { build } from 'esbuild';
import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist/kubelet');

rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: {
    main: 'dist/src/cmd/main.js',
    // A worker thread's entry: manifest-decoder.ts starts it by its name, beside itself.
    'manifest-decode-worker': 'dist/src/config/manifest-decode-worker.js',
  },
  outdir,
  // Every file at the top of outdir: code that finds a file beside itself (the worker, the node
  // page's assets) finds it there, whichever file of the bundle that code ended up in.
  entryNames: '[name]',
  chunkNames: '[name]-[hash]',
  bundle: true,
  // Shared code of the two entries, and the modules loaded with import() on first use, as chunks.
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
});
cpSync(path.join(root, 'src/nodepage/assets'), path.join(outdir, 'assets'), { recursive: true });

for (const file of ['main.js', 'manifest-decode-worker.js', 'assets'])
  if (!existsSync(path.join(outdir, file))) throw new Error(`bundle: ${file} is missing from ${outdir}`);
