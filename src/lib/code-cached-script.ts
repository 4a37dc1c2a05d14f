/**
 * A script run through V8's code cache (node:vm), as the built kubelet runs its code
 * (dist/kubelet/kubelet.cjs, scripts/bundle.mjs). A fresh process otherwise parses the whole
 * script and compiles each function it calls from source; from the cache V8 takes the bytecode of
 * every function the cache's writer had compiled (docs/benchmarks.md, "A V8 code cache"). Node 20
 * has no cache for ES modules (module.enableCompileCache is Node 22), hence a script.
 *
 * The cache sits beside the script, `<script>.cache`: the SHA-256 of the script's text, then V8's
 * data. The digest is ours: V8 checks its own version, its flags and the source's length, not its
 * text, so a rebuilt script of the same length would take bytecode compiled from another. A cache
 * that is missing or of another text leaves the script compiled from source, and is written anew
 * where the folder is writable; a read-only install runs without one. One that V8 refuses
 * (another node, other V8 flags) leaves it compiled from source too, but stays: a process started
 * with a V8 flag of its own (a bench's, a profiler's) would otherwise replace the cache that every
 * other start of the same build uses.
 */
import { createHash } from 'node:crypto';
import { accessSync, constants, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';

const DIGEST_BYTES = 32;

/** What became of the cache: `used`, or why the script was compiled from source, and whether a new one was written. */
export interface CodeCacheOutcome {
  cache: 'used' | 'missing' | 'stale' | 'rejected';
  /** After a compile from source of a missing or stale cache: the new one's path, or why none was written. */
  written?: string;
  notWritten?: string;
}

/**
 * Compiles the script at `scriptPath` through its code cache, runs it, and passes what it evaluates
 * to (its last expression) to `start`, whose result is returned. A new cache is written after
 * `start`: the functions it called are compiled by then, and the cache holds their bytecode too.
 * The script has no import(): node:vm gives it one only through an experimental option.
 */
export function runCodeCachedScript<T>(
  scriptPath: string,
  start: (completion: unknown) => T,
): { result: T; outcome: CodeCacheOutcome } {
  // Read as a string: no Buffer of the text stays behind as garbage (it would until a full GC).
  const text = readFileSync(scriptPath, 'utf8');
  const digest = createHash('sha256').update(text).digest();
  const cachePath = `${scriptPath}.cache`;
  const { script, cache } = compile(scriptPath, text, cachePath, digest);
  const result = start(script.runInThisContext());
  if (cache === 'used' || cache === 'rejected') return { result, outcome: { cache } };
  return { result, outcome: { cache, ...writeCache(cachePath, digest, script) } };
}

/** The cache's data is read here, and is garbage once this returns. */
function compile(
  scriptPath: string,
  text: string,
  cachePath: string,
  digest: Buffer,
): { script: vm.Script; cache: CodeCacheOutcome['cache'] } {
  let cachedData: Buffer | undefined;
  let cache: CodeCacheOutcome['cache'] = 'missing';
  try {
    const file = readFileSync(cachePath);
    if (file.length > DIGEST_BYTES && file.subarray(0, DIGEST_BYTES).equals(digest))
      cachedData = file.subarray(DIGEST_BYTES);
    else cache = 'stale';
  } catch {
    // No cache (or none readable): compiled from source.
  }
  const script = new vm.Script(text, { filename: pathToFileURL(scriptPath).href, cachedData });
  if (cachedData) cache = script.cachedDataRejected ? 'rejected' : 'used';
  return { script, cache };
}

function writeCache(
  cachePath: string,
  digest: Buffer,
  script: vm.Script,
): Pick<CodeCacheOutcome, 'written' | 'notWritten'> {
  // Checked first: on a read-only install, making the cache (a few ms) would be wasted.
  try {
    accessSync(path.dirname(cachePath), constants.W_OK);
  } catch {
    return { notWritten: `${path.dirname(cachePath)} is not writable` };
  }
  // Renamed into place, so that a kubelet starting meanwhile reads a whole cache or none.
  const partial = `${cachePath}.${process.pid}.partial`;
  try {
    writeFileSync(partial, Buffer.concat([digest, script.createCachedData()]));
    renameSync(partial, cachePath);
    return { written: cachePath };
  } catch (err) {
    rmSync(partial, { force: true });
    return { notWritten: (err as Error).message };
  }
}
