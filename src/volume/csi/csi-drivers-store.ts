/**
 * The CSI drivers registered on this node, by name (upstream: csi.DriversStore): what the
 * registration handler learnt from the plugin watcher, and what the mounter dials.
 */

export interface CsiDriver {
  /** The driver's socket, as its registration said (a path). */
  endpoint: string;
  /** The highest CSI version it speaks, `[major, minor, patch]`. */
  highestSupportedVersion: number[];
}

export class CsiDriversStore {
  private readonly drivers = new Map<string, CsiDriver>();

  get(name: string): CsiDriver | undefined {
    return this.drivers.get(name);
  }

  set(name: string, driver: CsiDriver): void {
    this.drivers.set(name, driver);
  }

  delete(name: string): void {
    this.drivers.delete(name);
  }

  names(): string[] {
    return [...this.drivers.keys()].sort();
  }
}

/** upstream: utilversion.ParseGeneric: `v1.2`, `1.2.3`, with anything after the numbers ignored. */
export function parseGenericVersion(v: string): number[] | undefined {
  const m = /^\s*v?([0-9]+(?:\.[0-9]+)+)/.exec(v);
  return m ? m[1]!.split('.').map(Number) : undefined;
}

export function versionLessThan(a: number[], b: number[]): boolean {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x < y;
  }
  return false;
}

export function formatVersion(v: number[]): string {
  return v.join('.');
}

/**
 * The highest of the versions a driver reports that this kubelet speaks: 2.x and later are skipped,
 * and the highest left must be 1.x (CSI 0.x went in Kubernetes 1.17). upstream: highestSupportedVersion.
 */
export function highestSupportedVersion(versions: string[]): number[] {
  if (versions.length === 0) throw new Error('CSI driver reporting empty array for supported versions');
  let highest: number[] | undefined;
  let lastErr = '';
  for (let i = versions.length - 1; i >= 0; i--) {
    const v = parseGenericVersion(versions[i]!);
    if (!v) {
      lastErr = `could not parse "${versions[i]}" in version string "${versions[i]}"`;
      continue;
    }
    if ((v[0] ?? 0) > 1) continue;
    if (!highest || versionLessThan(highest, v)) highest = v;
  }
  if (!highest) {
    throw new Error(
      `could not find a highest supported version from versions (${JSON.stringify(versions)}) reported by this driver: ${lastErr === '' ? '<nil>' : lastErr}`,
    );
  }
  if (highest[0] !== 1) {
    throw new Error(
      `highest supported version reported by driver is ${formatVersion(highest)}, must be v1.x`,
    );
  }
  return highest;
}
