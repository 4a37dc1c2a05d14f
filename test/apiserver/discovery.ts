/**
 * The legacy (unaggregated) discovery documents a client walks before it can map a kind to a URL:
 * /api, /api/v1, /apis, /apis/<group> and /apis/<group>/<version>, plus /version. A client that asks
 * for aggregated discovery (apidiscovery.k8s.io) falls back to these when the answer is plain JSON.
 */
import { RESOURCES, type ResourceDef } from './resources.js';

export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
}

function groups(): string[] {
  return [...new Set(RESOURCES.filter((r) => r.group !== '').map((r) => r.group))];
}

function groupVersion(group: string): { groupVersion: string; version: string } {
  return { groupVersion: `${group}/v1`, version: 'v1' };
}

/** The resource list entries of one group/version: each resource, then its subresources. */
function resourceEntries(defs: ResourceDef[]): object[] {
  const out: object[] = [];
  for (const d of defs) {
    out.push({
      name: d.resource,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: d.verbs,
      ...(d.shortNames ? { shortNames: d.shortNames } : {}),
      ...(d.resource === 'pods' || d.resource === 'services' ? { categories: ['all'] } : {}),
    });
    for (const sub of d.subresources) {
      if (sub === 'status') {
        out.push({
          name: `${d.resource}/status`,
          singularName: '',
          namespaced: d.namespaced,
          kind: d.kind,
          verbs: ['get', 'patch', 'update'],
        });
      } else if (sub === 'binding') {
        out.push({
          name: `${d.resource}/binding`,
          singularName: '',
          namespaced: d.namespaced,
          kind: 'Binding',
          verbs: ['create'],
        });
      } else if (sub === 'token') {
        out.push({
          name: `${d.resource}/token`,
          singularName: '',
          namespaced: d.namespaced,
          group: 'authentication.k8s.io',
          version: 'v1',
          kind: 'TokenRequest',
          verbs: ['create'],
        });
      }
    }
  }
  return out;
}

/** The discovery document at path, or undefined when path is not one. */
export function discoveryDocument(
  path: string,
  serverAddress: string,
  version: VersionInfo,
): object | undefined {
  const p = path.replace(/\/+$/, '') || '/';
  if (p === '/version') {
    return {
      major: version.major,
      minor: version.minor,
      gitVersion: version.gitVersion,
      gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean',
      buildDate: '2024-01-01T00:00:00Z',
      goVersion: 'go1.23.0',
      compiler: 'gc',
      platform: 'linux/amd64',
    };
  }
  if (p === '/api') {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
    };
  }
  if (p === '/api/v1') {
    return {
      kind: 'APIResourceList',
      groupVersion: 'v1',
      resources: resourceEntries(RESOURCES.filter((r) => r.group === '')),
    };
  }
  if (p === '/apis') {
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: groups().map((name) => ({
        name,
        versions: [groupVersion(name)],
        preferredVersion: groupVersion(name),
      })),
    };
  }
  const m = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(p);
  if (m && groups().includes(m[1]!)) {
    const group = m[1]!;
    if (m[2] === undefined) {
      return {
        kind: 'APIGroup',
        apiVersion: 'v1',
        name: group,
        versions: [groupVersion(group)],
        preferredVersion: groupVersion(group),
      };
    }
    if (m[2] === 'v1') {
      return {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: `${group}/v1`,
        resources: resourceEntries(RESOURCES.filter((r) => r.group === group)),
      };
    }
  }
  return undefined;
}
