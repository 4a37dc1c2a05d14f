/**
 * Whether this node can enforce the AppArmor profiles a pod asks for (upstream: apparmor.Validator
 * and lifecycle's appArmorAdmitHandler). The host is checked once, at start, as upstream does.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Pod } from '../api/core-v1.js';
import { isAppArmorRequired, validateAppArmorProfiles } from '../kuberuntime/apparmor.js';

export const APPARMOR_NOT_ADMITTED_REASON = 'AppArmor';

export interface AppArmorHostFiles {
  /** Default /sys/kernel/security/apparmor. */
  securityFsDir?: string;
  /** Default /sys/module/apparmor/parameters/enabled. */
  enabledParameter?: string;
}

/** runc's apparmor.IsEnabled: the securityfs folder exists and the module parameter reads Y. */
export function isAppArmorEnabled(files: AppArmorHostFiles = {}): boolean {
  if (!existsSync(files.securityFsDir ?? '/sys/kernel/security/apparmor')) return false;
  try {
    const value = readFileSync(files.enabledParameter ?? '/sys/module/apparmor/parameters/enabled', 'utf8');
    return value.length > 1 && value[0] === 'Y';
  } catch {
    return false;
  }
}

export type AppArmorVerdict = { admit: true } | { admit: false; reason: string; message: string };

export class AppArmorValidator {
  /** Why the host cannot enforce AppArmor; undefined when it can. */
  readonly hostError: string | undefined;

  constructor(enabled: boolean) {
    this.hostError = enabled ? undefined : 'AppArmor is not enabled on the host';
  }

  static forHost(files?: AppArmorHostFiles): AppArmorValidator {
    return new AppArmorValidator(isAppArmorEnabled(files));
  }

  /** Why the pod's profiles cannot be enforced here; undefined when they can or it asks for none. */
  validate(pod: Pod): string | undefined {
    if (!isAppArmorRequired(pod)) return undefined;
    if (this.hostError !== undefined) return this.hostError;
    return validateAppArmorProfiles(pod);
  }

  /** Pods already running or finished are not checked again. */
  admit(pod: Pod): AppArmorVerdict {
    const phase = pod.status?.phase;
    // A pod from a file has no status yet: it is as new as a Pending one.
    if (phase !== undefined && phase !== 'Pending') return { admit: true };
    const err = this.validate(pod);
    if (err === undefined) return { admit: true };
    return { admit: false, reason: APPARMOR_NOT_ADMITTED_REASON, message: `Cannot enforce AppArmor: ${err}` };
  }
}
