/**
 * How long a large manifest stalls the event loop while a static pod source reads it (a
 * 9 MB file parsed in place held /healthz for seconds). Prints, for a 9 MB manifest of each kind,
 * the longest event-loop delay (perf_hooks.monitorEventLoopDelay) while:
 *   - in place: decodeManifestSync, what the file source did before;
 *   - file source: FileSource.rescan(), which reads asynchronously and decodes in a worker thread.
 *
 * Run built (the worker is dist's .js): npm run build && node dist/bench/manifest-parse.js
 * Env: BENCH_MANIFEST_MB (default 9).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';

import { FileSource } from '../src/config/file-source.js';
import { decodeManifestSync } from '../src/config/manifest-decoder.js';

const targetBytes = Number(process.env.BENCH_MANIFEST_MB ?? 9) * 1024 * 1024;

function header(name: string): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\n`;
}

/** A valid pod whose size is one long env list. */
function bigEnvManifest(): string {
  const lines = [header('big-env'), 'spec:\n  containers:\n  - name: c\n    image: busybox\n    env:\n'];
  let size = lines.join('').length;
  for (let i = 0; size < targetBytes; i++) {
    const line = `    - name: VAR_${i}\n      value: "${'v'.repeat(40)}"\n`;
    lines.push(line);
    size += line.length;
  }
  return lines.join('');
}

/** A pod refused for its 9 MB annotation (over the 256 KiB limit). */
function bigAnnotationManifest(): string {
  return `${header('big-annotation')}  annotations:\n    example.com/blob: "${'a'.repeat(targetBytes)}"\nspec:\n  containers:\n  - name: c\n    image: busybox\n`;
}

async function maxLoopDelayMs(
  work: () => Promise<unknown> | unknown,
): Promise<{ maxDelayMs: number; wallMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  // Let the histogram take a first sample before the work starts.
  await new Promise((r) => setTimeout(r, 50));
  const start = performance.now();
  await work();
  const wallMs = performance.now() - start;
  await new Promise((r) => setTimeout(r, 50));
  h.disable();
  return { maxDelayMs: h.max / 1e6, wallMs };
}

async function main(): Promise<void> {
  for (const [kind, text] of [
    ['env list (accepted)', bigEnvManifest()],
    ['annotation (refused)', bigAnnotationManifest()],
  ] as const) {
    const mb = (Buffer.byteLength(text) / 1024 / 1024).toFixed(1);
    // The in-place figure last, so its garbage does not land in the file source's measurement.
    const dir = mkdtempSync(join(tmpdir(), 'manifest-bench-'));
    writeFileSync(join(dir, 'big.yaml'), text);
    let pods = -1;
    const source = new FileSource({
      path: dir,
      nodeName: 'bench',
      periodMs: 3_600_000,
      watch: false,
      send: (u) => (pods = u.pods.length),
      log: {
        info: () => undefined,
        warn: () => undefined,
        error: () => undefined,
        v: () => undefined,
        enabled: () => false,
      },
    });
    const viaSource = await maxLoopDelayMs(() => source.rescan());
    source.stop();
    rmSync(dir, { recursive: true, force: true });
    const inPlace = await maxLoopDelayMs(() =>
      decodeManifestSync({
        text,
        origin: { source: 'file', location: '/bench.yaml', nodeName: 'bench' },
        what: '/bench.yaml',
        shape: 'pod',
      }),
    );
    const row = {
      bench: 'manifest-parse',
      manifest: kind,
      sizeMB: Number(mb),
      inPlaceMaxLoopDelayMs: Math.round(inPlace.maxDelayMs),
      fileSourceMaxLoopDelayMs: Math.round(viaSource.maxDelayMs),
      fileSourceWallMs: Math.round(viaSource.wallMs),
      podsSent: pods,
    };
    console.log(JSON.stringify(row));
  }
}

await main();
