/**
 * From the two flags to the node's plugin providers (upstream RegisterCredentialProviderPlugins and
 * NewDockerKeyring): the bin folder and every provider's binary must exist and the config must
 * validate, or the kubelet does not start; the providers are asked in the order of their names.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../lib/clock.js';
import { errorMessage } from '../lib/errors.js';
import type { MetricsRegistry } from '../lib/metrics.js';
import { readSmallTextFile } from '../lib/read-small-file.js';
import { ExecPlugin, type PluginRunObserver } from './exec-plugin.js';
import { PluginProvider, type DockerConfigProvider } from './plugin-provider.js';
import {
  decodeCredentialProviderConfig,
  validateCredentialProviderConfig,
  type CredentialProvider,
} from './provider-config.js';

/** A config file is a few providers; anything near this is not one. */
const MAX_CONFIG_BYTES = 1 << 20;

/** The validated providers and where their binaries are. */
export interface CredentialProviderPlugins {
  binDir: string;
  /** Sorted by name: the order the keyring asks them in, as upstream's. */
  providers: (CredentialProvider & { defaultCacheDurationMs: number })[];
  /** Fields of the file that were not read, for the start-up warning. */
  unknownFields: string[];
}

/** Throws with upstream's words for a bin folder, file or binary that cannot be used. */
export async function loadCredentialProviderPlugins(
  configFile: string,
  binDir: string,
  signal?: AbortSignal,
): Promise<CredentialProviderPlugins> {
  await statOrExplain(
    binDir,
    `plugin binary directory ${binDir} did not exist`,
    `error inspecting binary directory ${binDir}`,
  );
  if (configFile === '') throw new Error('credential provider config path is empty');
  let text: string;
  try {
    text = await readSmallTextFile(configFile, { maxBytes: MAX_CONFIG_BYTES, signal });
  } catch (err) {
    throw new Error(
      `unable to read external registry credential provider configuration from ${JSON.stringify(configFile)}: ${errorMessage(err)}`,
    );
  }
  let decoded: ReturnType<typeof decodeCredentialProviderConfig>;
  try {
    decoded = decodeCredentialProviderConfig(text);
  } catch (err) {
    throw new Error(`error decoding config ${configFile}: ${errorMessage(err)}`);
  }
  const errs = validateCredentialProviderConfig(decoded.config);
  if (errs.length > 0)
    throw new Error(
      `failed to validate credential provider config: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`,
    );
  const seen = new Set<string>();
  for (const p of decoded.config.providers) {
    // Upstream's registry refuses a second provider of the same name (a fatal error there).
    if (seen.has(p.name))
      throw new Error(`Credential provider ${JSON.stringify(p.name)} was registered twice`);
    seen.add(p.name);
    const bin = path.join(binDir, p.name);
    await statOrExplain(
      bin,
      `plugin binary executable ${bin} did not exist`,
      `error inspecting binary executable ${bin}`,
    );
  }
  const providers = decoded.config.providers
    .map((p) => ({ ...p, defaultCacheDurationMs: p.defaultCacheDurationMs ?? 0 }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { binDir, providers, unknownFields: decoded.unknownFields };
}

async function statOrExplain(file: string, missing: string, other: string): Promise<void> {
  try {
    await stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(missing);
    throw new Error(`${other}: ${errorMessage(err)}`);
  }
}

/** upstream's kubelet_credential_provider_plugin_{duration,errors}, labelled by plugin name. */
export function pluginMetrics(metrics: MetricsRegistry): PluginRunObserver {
  const errors = metrics.counter(
    'kubelet_credential_provider_plugin_errors',
    '[ALPHA] Number of errors from credential provider plugin',
    ['plugin_name'],
  );
  const duration = metrics.histogram(
    'kubelet_credential_provider_plugin_duration',
    '[ALPHA] Duration of execution in seconds for credential provider plugin',
    ['plugin_name'],
  );
  return {
    ran: (name, seconds, failed) => {
      duration.observe({ plugin_name: name }, seconds);
      if (failed) errors.inc({ plugin_name: name });
    },
  };
}

/** One provider per configured plugin, in the loaded (name) order. */
export function createPluginProviders(
  plugins: CredentialProviderPlugins,
  opts: { clock: Pick<Clock, 'now'>; observer?: PluginRunObserver },
): DockerConfigProvider[] {
  return plugins.providers.map(
    (p) =>
      new PluginProvider({
        name: p.name,
        matchImages: p.matchImages,
        defaultCacheDurationMs: p.defaultCacheDurationMs,
        clock: opts.clock,
        plugin: new ExecPlugin({
          name: p.name,
          binDir: plugins.binDir,
          apiVersion: p.apiVersion,
          args: p.args,
          env: p.env,
          observer: opts.observer,
        }),
      }),
  );
}
