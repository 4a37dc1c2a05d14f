/**
 * Cgroup names as upstream's cm package keeps them (CgroupName): a list of components, independent
 * of the cgroup driver, converted to the driver's literal form only at the edge (ToCgroupfs,
 * ToSystemd, ParseCgroupfsToCgroupName, ParseSystemdToCgroupName in cgroup_manager_linux.go).
 */

/** ['kubepods', 'burstable', 'pod<uid>']; [] is the root. */
export type CgroupName = readonly string[];

export type CgroupDriver = 'cgroupfs' | 'systemd';

const SYSTEMD_SUFFIX = '.slice';

export const ROOT_CGROUP_NAME: CgroupName = [];

export function newCgroupName(parent: CgroupName, ...components: string[]): CgroupName {
  for (const c of components) {
    // A '/' would silently add a level; upstream panics on it for the same reason.
    if (c.includes('/')) throw new Error(`invalid cgroup name component ${JSON.stringify(c)}`);
  }
  return [...parent, ...components];
}

/** '/kubepods/burstable/pod<uid>'; '/' for the root. */
export function toCgroupfs(name: CgroupName): string {
  return '/' + name.join('/');
}

export function parseCgroupfsToCgroupName(literal: string): CgroupName {
  const trimmed = literal.replace(/^\/+/, '');
  if (trimmed === '') return [];
  return trimmed.split('/');
}

// systemd reads '-' in a slice name as a level separator, so a component's own dashes (a pod UID's)
// must not appear as dashes.
function escapeSystemdComponent(part: string): string {
  return part.replaceAll('-', '_');
}

function unescapeSystemdComponent(part: string): string {
  return part.replaceAll('_', '-');
}

/**
 * 'a-b-c.slice' → '/a.slice/a-b.slice/a-b-c.slice', as libcontainer's systemd.ExpandSlice: the path
 * systemd gives a nested slice under its cgroup mount.
 */
export function expandSlice(slice: string): string {
  if (!slice.endsWith(SYSTEMD_SUFFIX) || slice.includes('/')) throw new Error(`invalid slice name: ${slice}`);
  const sliceName = slice.slice(0, -SYSTEMD_SUFFIX.length);
  if (sliceName === '-') return '/';
  let out = '';
  let prefix = '';
  for (const component of sliceName.split('-')) {
    // 'a--b.slice' and '-a.slice' are not valid slices.
    if (component === '') throw new Error(`invalid slice name: ${slice}`);
    out += `/${prefix}${component}${SYSTEMD_SUFFIX}`;
    prefix += `${component}-`;
  }
  return out;
}

/** '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice'; '/' for the root. */
export function toSystemd(name: CgroupName): string {
  if (name.length === 0 || (name.length === 1 && name[0] === '')) return '/';
  return expandSlice(name.map(escapeSystemdComponent).join('-') + SYSTEMD_SUFFIX);
}

/** The inverse of toSystemd: only the last path element is read, as upstream does. */
export function parseSystemdToCgroupName(literal: string): CgroupName {
  const base = literal.slice(literal.lastIndexOf('/') + 1);
  const driverName = base.endsWith(SYSTEMD_SUFFIX) ? base.slice(0, -SYSTEMD_SUFFIX.length) : base;
  if (driverName === '') return [];
  return driverName.split('-').map(unescapeSystemdComponent);
}

/** The literal form the driver uses: what the runtime gets as cgroup_parent, and the path under each mount. */
export function cgroupNameToDriverPath(name: CgroupName, driver: CgroupDriver): string {
  return driver === 'systemd' ? toSystemd(name) : toCgroupfs(name);
}

export function driverPathToCgroupName(literal: string, driver: CgroupDriver): CgroupName {
  return driver === 'systemd' ? parseSystemdToCgroupName(literal) : parseCgroupfsToCgroupName(literal);
}
