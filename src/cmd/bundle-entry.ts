/**
 * The built kubelet's entry (dist/kubelet/main.js, which bin/tskubelet imports): loads the
 * kubelet's code, bundled as one CommonJS module beside it (kubelet.cjs, scripts/bundle.mjs),
 * through V8's code cache (src/lib/code-cached-script.ts), and exports its main.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCodeCachedScript, type CodeCacheOutcome } from '../lib/code-cached-script.js';
import type { main as kubeletMain } from './main.js';

interface KubeletModule {
  main: typeof kubeletMain;
}

/** What kubelet.cjs evaluates to outside Node's CommonJS loader: its module's body, as a function. */
type ModuleBody = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  __filename: string,
  __dirname: string,
) => void;

const scriptPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'kubelet.cjs');

function load(): { kubelet: KubeletModule; codeCache?: CodeCacheOutcome } {
  const require = createRequire(scriptPath);
  // Node maps stack traces (--enable-source-maps) through the source maps of the modules its own
  // loader compiled, not of a vm.Script's: then the module is loaded as Node loads any, uncached.
  if (process.sourceMapsEnabled) return { kubelet: require(scriptPath) as KubeletModule };
  const { result, outcome } = runCodeCachedScript(scriptPath, (body) => {
    // The arguments Node's CommonJS loader gives a module.
    const module = { exports: {} as KubeletModule };
    (body as ModuleBody)(module.exports, require, module, scriptPath, path.dirname(scriptPath));
    return module.exports;
  });
  return { kubelet: result, codeCache: outcome };
}

const { kubelet, codeCache } = load();

export function main(argv: string[]): Promise<void> {
  return kubelet.main(argv, codeCache);
}
