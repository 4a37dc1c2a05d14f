// The kubelet as it runs (bin/tskubelet): the compiled modules of dist/src bundled into a few
// files under dist/kubelet, whitespace, syntax and identifiers minified.
//
// Why: V8 keeps each module's source text for lazy compilation, and each ES module costs a module
// record and its namespace. Bundled, an idle kubelet holds about 3 MiB less heap and starts in
// about two thirds of the time (docs/benchmarks.md, "One bundle"). Short identifiers take the text
// from 1.66 to 1.19 MB, which V8 holds for as long as the kubelet runs (docs/benchmarks.md,
// "Memory"). Nothing reads a function's or class's name (errors set theirs, and logs print no
// stack); a stack trace names functions as minified, and `node --enable-source-maps` maps it back
// to the TypeScript's names and lines through the linked source map.
//
// The kubelet's code is one CommonJS-style script, kubelet.cjs, which main.js (src/cmd/bundle-entry.ts)
// runs through V8's code cache, kubelet.cjs.cache: Node 20 caches no ES module's compiled code
// (docs/benchmarks.md, "A V8 code cache"). The build writes that cache last, by running the kubelet
// once (`bin/tskubelet --version`), so that it is made under the V8 flags bin/tskubelet sets.
//
// npm packages stay outside the bundle, loaded from node_modules as before (lazily where the code
// says so), but for @bufbuild/protobuf (see BUNDLED). Run by `npm run build`, after tsc.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist/kubelet');

// Packages whose code goes into the bundle. @bufbuild/protobuf: the generated gRPC code uses only
// its wire reader and writer, and the package's `wire` entry point loads its whole reflection API
// with them (about 20 modules, 0.5 MiB of heap in an idle kubelet); bundled, only what is used is
// kept. Every other dependency stays a package of its own.
const BUNDLED = ['@bufbuild/protobuf'];
const { dependencies = {} } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const EXTERNAL = Object.keys(dependencies).filter((name) => !BUNDLED.includes(name));

const common = {
  metafile: true,
  absWorkingDir: root,
  outdir,
  bundle: true,
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: true,
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
};

const MODULE_ARGS = 'exports, require, module, __filename, __dirname';

rmSync(outdir, { recursive: true, force: true });
const results = [
  // The kubelet's code, modules loaded with import() on first use included, as a CommonJS module.
  await build({
    ...common,
    entryPoints: { kubelet: 'dist/src/cmd/main.js' },
    outExtension: { '.js': '.cjs' },
    format: 'cjs',
    inject: [path.join(root, 'scripts/bundle-import-meta-url.mjs')],
    define: { 'import.meta.url': 'importMetaUrl' },
    // A package loaded on first use (grpc-js) is required, not imported: a script run through
    // node:vm has import() only with an experimental option that warns on stderr.
    supported: { 'dynamic-import': false },
    // A module to Node's CommonJS loader (which --enable-source-maps needs), and outside it, run
    // through node:vm, the module's body as a function (the script's value), without a copy of
    // the text wrapped in one: bundle-entry.ts gives it the arguments Node's loader would.
    banner: {
      js: `(typeof module == "object" ? (body) => body(${MODULE_ARGS}) : (body) => body)(function (${MODULE_ARGS}) {`,
    },
    footer: { js: '})' },
  }),
  await build({
    ...common,
    entryPoints: {
      main: 'dist/src/cmd/bundle-entry.js',
      // A worker thread's entry: manifest-decoder.ts starts it by its name, beside itself.
      'manifest-decode-worker': 'dist/src/config/manifest-decode-worker.js',
    },
    // Every file at the top of outdir, beside kubelet.cjs.
    entryNames: '[name]',
    chunkNames: '[name]-[hash]',
    // Code the two entries share, as a chunk.
    splitting: true,
    format: 'esm',
  }),
];
cpSync(path.join(root, 'src/nodepage/assets'), path.join(outdir, 'assets'), { recursive: true });

for (const file of ['main.js', 'kubelet.cjs', 'manifest-decode-worker.js', 'assets'])
  if (!existsSync(path.join(outdir, file))) throw new Error(`bundle: ${file} is missing from ${outdir}`);

// An installed kubelet has its dependencies only (`npm install --omit=dev`, scripts/install.sh):
// every package the bundle loads must be one. Packages loaded through createRequire are calls, not
// imports, to esbuild: they are found in the output's text.
const packageOf = (spec) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');
const loaded = new Set();
for (const [file, output] of results.flatMap((r) => Object.entries(r.metafile.outputs))) {
  for (const imported of output.imports)
    if (imported.external && !imported.path.startsWith('node:')) loaded.add(packageOf(imported.path));
  if (!/\.c?js$/.test(file)) continue;
  for (const m of readFileSync(path.join(root, file), 'utf8').matchAll(/\brequire\d*\("([^"]+)"\)/g))
    if (!m[1].startsWith('node:') && !m[1].startsWith('.')) loaded.add(packageOf(m[1]));
}
// A package that is neither external nor in BUNDLED (a devDependency, or one that a dependency
// brings) would be bundled without a word: refused.
for (const input of results.flatMap((r) => Object.keys(r.metafile.inputs))) {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) continue;
  const name = packageOf(input.slice(at + 'node_modules/'.length));
  if (!BUNDLED.includes(name))
    throw new Error(`bundle: ${name} (${input}) was bundled; it is not in BUNDLED`);
}
const missing = [...loaded].filter((name) => !(name in dependencies));
if (missing.length > 0)
  throw new Error(`bundle: loaded at run time but not in package.json's dependencies: ${missing.join(', ')}`);

// The code cache, made by the kubelet's own start (bin/tskubelet's V8 flags are part of what V8
// checks), without the builder's NODE_OPTIONS.
execFileSync(process.execPath, [path.join(root, 'bin/tskubelet'), '--version'], {
  env: { ...process.env, NODE_OPTIONS: '' },
  stdio: 'ignore',
});
if (!existsSync(path.join(outdir, 'kubelet.cjs.cache')))
  throw new Error(`bundle: the code cache kubelet.cjs.cache was not written to ${outdir}`);
