/**
 * Runs one credential provider binary for one image (upstream execPlugin.ExecPlugin):
 * `ENV=value <bin-dir>/<name> args... <<< request`, its stdout decoded as the response.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { monotonicMs } from '../lib/clock.js';
import { decodeResponse, encodeRequest, type CredentialProviderResponse } from './plugin-api.js';

/** Upstream's catch-all for every exec plugin: room for a plugin's own retries, never forever. */
export const PLUGIN_TIMEOUT_MS = 60_000;

/**
 * More than any response holds (a few registries' tokens); a plugin that writes on past it is
 * stopped rather than read into memory without end.
 */
const MAX_OUTPUT_BYTES = 4 << 20;

export interface ExecPluginOptions {
  name: string;
  binDir: string;
  apiVersion: string;
  args?: readonly string[];
  /** From the provider's `env`: over the kubelet's own environment, as upstream appends them. */
  env?: readonly { name: string; value: string }[];
  /** The kubelet's environment; process.env by default. */
  environ?: () => NodeJS.ProcessEnv;
  timeoutMs?: number;
  observer?: PluginRunObserver;
}

/** Told of each run of a plugin binary: how long it took, and whether it failed to run or exit 0. */
export interface PluginRunObserver {
  ran(name: string, seconds: number, failed: boolean): void;
}

/** What runs a plugin for an image; the provider's tests pass their own. */
export interface Plugin {
  execPlugin(image: string): Promise<CredentialProviderResponse>;
}

export class ExecPlugin implements Plugin {
  constructor(private readonly opts: ExecPluginOptions) {}

  get name(): string {
    return this.opts.name;
  }

  async execPlugin(image: string): Promise<CredentialProviderResponse> {
    const { apiVersion } = this.opts;
    const startMs = monotonicMs();
    let stdout: string;
    try {
      stdout = await this.run(encodeRequest(apiVersion, image), image);
    } catch (err) {
      this.opts.observer?.ran(this.opts.name, (monotonicMs() - startMs) / 1000, true);
      throw err;
    }
    this.opts.observer?.ran(this.opts.name, (monotonicMs() - startMs) / 1000, false);
    return decodeResponse(stdout, apiVersion);
  }

  /** The plugin's stdout; rejects with upstream's wording and the plugin's stderr when it fails. */
  private run(request: string, image: string): Promise<string> {
    const { name, binDir } = this.opts;
    const env: NodeJS.ProcessEnv = { ...(this.opts.environ ?? (() => process.env))() };
    for (const v of this.opts.env ?? []) env[v.name] = v.value;
    const timeoutMs = this.opts.timeoutMs ?? PLUGIN_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const child = spawn(path.join(binDir, name), [...(this.opts.args ?? [])], {
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const out: Buffer[] = [];
      const errOut: Buffer[] = [];
      let outBytes = 0;
      let errBytes = 0;
      let stopReason: string | undefined;
      const stop = (reason: string) => {
        stopReason ??= reason;
        child.kill('SIGKILL');
      };
      const timer = setTimeout(() => stop('context deadline exceeded'), timeoutMs);
      child.stdout.on('data', (b: Buffer) => {
        outBytes += b.length;
        if (outBytes > MAX_OUTPUT_BYTES) stop(`its output passed ${MAX_OUTPUT_BYTES} bytes`);
        else out.push(b);
      });
      child.stderr.on('data', (b: Buffer) => {
        // Only the start of stderr goes into the error message.
        if (errBytes < 64 << 10) errOut.push(b);
        errBytes += b.length;
      });
      // A plugin that exits without reading its stdin must not fail the write.
      child.stdin.on('error', () => undefined);
      child.stdin.end(request);
      const fail = (reason: string) => {
        const stderr = Buffer.concat(errOut).toString('utf8');
        reject(
          new Error(
            `error execing credential provider plugin ${name} for image ${image}: ${reason}: ${stderr}`,
          ),
        );
      };
      child.on('error', (err) => {
        clearTimeout(timer);
        fail(err.message);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (stopReason !== undefined) return fail(stopReason);
        if (signal) return fail(`signal: ${goSignalName(signal)}`);
        if (code !== 0) return fail(`exit status ${code}`);
        resolve(Buffer.concat(out).toString('utf8'));
      });
    });
  }
}

/** Go's os.ProcessState prints a few signals by name; the rest by Node's name. */
function goSignalName(signal: NodeJS.Signals): string {
  const names: Partial<Record<NodeJS.Signals, string>> = {
    SIGKILL: 'killed',
    SIGTERM: 'terminated',
    SIGSEGV: 'segmentation fault',
    SIGABRT: 'aborted',
    SIGINT: 'interrupt',
  };
  return names[signal] ?? signal;
}
