/**
 * The settings tskubelet parses, type-checks and validates (so a file written for the upstream kubelet
 * loads unchanged) but does not act on. None may be ignored quietly: every one set to something other
 * than upstream's default is named, with its value, in one warning line at start. docs/flags.md lists
 * the same table; a setting leaves it when its feature lands.
 */
import { defaultKubeletFlags, type KubeletFlags } from './flags.js';
import {
  applyV1beta1Defaults,
  resolveKubeletConfiguration,
  type ResolvedKubeletConfig,
} from './kubelet-configuration.js';

interface UnusedSetting {
  /** As the user writes it: a config field (`cpuManagerPolicy`) or a flag, with its dashes. */
  name: string;
  read(config: ResolvedKubeletConfig, flags: KubeletFlags): unknown;
  /** Durations are resolved to milliseconds; shown with their unit. */
  milliseconds?: boolean;
  /** Only named when this holds (a setting upstream reads only behind a gate). */
  when?(config: ResolvedKubeletConfig): boolean;
  /**
   * Named when this holds of its value, instead of when it differs from upstream's default: for a
   * setting whose default is the part tskubelet does not do.
   */
  notActedOn?(value: unknown): boolean;
}

const field = <K extends keyof ResolvedKubeletConfig>(name: string, key: K): UnusedSetting => ({
  name,
  read: (c) => c[key],
  milliseconds: key.endsWith('Ms'),
});

/** Parsed and validated, not acted on (yet). */
export const UNUSED_SETTINGS: readonly UnusedSetting[] = [
  field('enableContentionProfiling', 'enableContentionProfiling'),
  field('kernelMemcgNotification', 'kernelMemcgNotification'),
  // tskubelet makes no iptables chains, which is what false asks for: only true (the default) is not acted on.
  { ...field('makeIPTablesUtilChains', 'makeIPTablesUtilChains'), notActedOn: (v) => v === true },
  // Upstream reads it only for MemoryQoS (alpha, off by default), which is named itself when on.
  {
    ...field('memoryThrottlingFactor', 'memoryThrottlingFactor'),
    when: (c) => c.featureGates.MemoryQoS === true,
  },
  field('systemCgroups', 'systemCgroups'),
  field('volumePluginDir', 'volumePluginDir'),
];

/** The feature gates tskubelet reads; any other gate a user sets is named as not acted on. */
export const FEATURE_GATES_ACTED_ON: readonly string[] = [
  'CPUManagerPolicyAlphaOptions',
  'CPUManagerPolicyBetaOptions',
  'CPUManagerPolicyOptions',
  'EventedPLEG',
  'GracefulNodeShutdown',
  'GracefulNodeShutdownBasedOnPodPriority',
  'KubeletFineGrainedAuthz',
  'KubeletPodResourcesGet',
  'NodeLogQuery',
  'NodeSwap',
  'TopologyManagerPolicyBetaOptions',
  'TopologyManagerPolicyOptions',
];

/**
 * `name=value` for each unused setting whose value differs from upstream's default, in table order,
 * then `featureGates.<gate>=<value>` for each gate tskubelet does not read.
 */
export function unusedSettingsInEffect(config: ResolvedKubeletConfig, flags: KubeletFlags): string[] {
  const defaults = resolveKubeletConfiguration(applyV1beta1Defaults({}));
  const defaultFlags = defaultKubeletFlags();
  const out: string[] = [];
  for (const s of UNUSED_SETTINGS) {
    if (s.when && !s.when(config)) continue;
    const value = s.read(config, flags);
    if (
      s.notActedOn
        ? !s.notActedOn(value)
        : JSON.stringify(value) === JSON.stringify(s.read(defaults, defaultFlags))
    )
      continue;
    const unit = s.milliseconds && typeof value === 'number' ? 'ms' : '';
    out.push(`${s.name}=${JSON.stringify(value)}${unit}`);
  }
  for (const [gate, on] of Object.entries(config.featureGates)) {
    if (!FEATURE_GATES_ACTED_ON.includes(gate)) out.push(`featureGates.${gate}=${on}`);
  }
  return out;
}
