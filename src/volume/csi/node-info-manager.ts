/**
 * What the node tells the cluster about its CSI drivers (upstream: csi/nodeinfomanager): the
 * `csi.volume.kubernetes.io/nodeid` annotation on the Node (a JSON map of driver name to the
 * driver's node ID), the driver's topology keys as Node labels, and the driver's entry in the
 * node's CSINode object (storage.k8s.io/v1), created with the Node as its owner when missing.
 * Each change is a read-modify-write with the object's resourceVersion, retried on conflict.
 */
import type { RestClient } from '../../k8s/rest-client.js';
import { errorMessage } from '../../lib/errors.js';
import { logger } from '../../lib/log.js';
import { compareStrings } from '../../lib/compare.js';

const log = logger('csi');

/** upstream: annotationKeyNodeID. */
export const ANNOTATION_KEY_NODE_ID = 'csi.volume.kubernetes.io/nodeid';
const CALL_TIMEOUT_MS = 10_000;
const CONFLICT_RETRIES = 5;

export interface NodeInfoManager {
  installCSIDriver(
    driverName: string,
    driverNodeId: string,
    maxAttachLimit: number,
    topology: Record<string, string> | undefined,
  ): Promise<void>;
  uninstallCSIDriver(driverName: string): Promise<void>;
}

/** Standalone mode: there is no Node object to tell. */
export const standaloneNodeInfoManager: NodeInfoManager = {
  installCSIDriver: () => Promise.resolve(),
  uninstallCSIDriver: () => Promise.resolve(),
};

interface NodeObject {
  metadata: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
}

interface CSINodeDriver {
  name: string;
  nodeID: string;
  topologyKeys?: string[] | null;
  allocatable?: { count?: number };
}

interface CSINodeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    resourceVersion?: string;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec: { drivers: CSINodeDriver[] | null };
}

export class ApiNodeInfoManager implements NodeInfoManager {
  constructor(
    private readonly client: RestClient,
    private readonly nodeName: string,
  ) {}

  async installCSIDriver(
    driverName: string,
    driverNodeId: string,
    maxAttachLimit: number,
    topology: Record<string, string> | undefined,
  ): Promise<void> {
    if (driverNodeId === '')
      throw new Error('error adding CSI driver node info: driverNodeID must not be empty');
    await this.updateNode((node) => {
      const ids = nodeIds(node);
      const labels = node.metadata.labels ?? {};
      let changed = ids[driverName] !== driverNodeId;
      ids[driverName] = driverNodeId;
      for (const [k, v] of Object.entries(topology ?? {})) {
        if (labels[k] !== undefined && labels[k] !== v) {
          throw new Error(
            `topology label ${k} is already set to a different value: existing ${labels[k]}, new ${v}`,
          );
        }
        if (labels[k] === undefined) changed = true;
        labels[k] = v;
      }
      if (!changed) return undefined;
      return {
        annotations: { [ANNOTATION_KEY_NODE_ID]: JSON.stringify(sortKeys(ids)) },
        ...(topology && Object.keys(topology).length > 0 ? { labels: topology } : {}),
      };
    });
    await this.updateCSINode((drivers) => {
      const entry: CSINodeDriver = {
        name: driverName,
        nodeID: driverNodeId,
        topologyKeys: Object.keys(topology ?? {}).sort(),
        ...(maxAttachLimit > 0 ? { allocatable: { count: maxAttachLimit } } : {}),
      };
      return [...drivers.filter((d) => d.name !== driverName), entry];
    });
  }

  async uninstallCSIDriver(driverName: string): Promise<void> {
    await this.updateCSINode((drivers) => drivers.filter((d) => d.name !== driverName), false);
    await this.updateNode((node) => {
      const ids = nodeIds(node);
      if (!(driverName in ids)) return undefined;
      delete ids[driverName];
      return {
        annotations: {
          [ANNOTATION_KEY_NODE_ID]: Object.keys(ids).length > 0 ? JSON.stringify(sortKeys(ids)) : null,
        },
      };
    });
  }

  /** Applies change to the Node's metadata as a merge patch carrying its resourceVersion (conflicts retried). */
  private async updateNode(
    change: (
      node: NodeObject,
    ) => { annotations?: Record<string, string | null>; labels?: Record<string, string> } | undefined,
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const got = await this.client.get<NodeObject>(
        { resource: 'nodes', name: this.nodeName },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      if (!got.ok)
        throw new Error(`error getting node ${this.nodeName}: ${got.status.message ?? got.reason}`);
      const patch = change(got.object);
      if (!patch) return;
      const res = await this.client.patch(
        { resource: 'nodes', name: this.nodeName },
        'merge',
        { metadata: { resourceVersion: got.object.metadata.resourceVersion, ...patch } },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      if (res.ok) return;
      if (res.reason !== 'Conflict' || attempt >= CONFLICT_RETRIES) {
        throw new Error(`error updating node ${this.nodeName}: ${res.status.message ?? res.reason}`);
      }
    }
  }

  private async updateCSINode(
    change: (drivers: CSINodeDriver[]) => CSINodeDriver[],
    createIfMissing = true,
  ): Promise<void> {
    const ref = { apiVersion: 'storage.k8s.io/v1', resource: 'csinodes', name: this.nodeName };
    for (let attempt = 0; ; attempt++) {
      const got = await this.client.get<CSINodeObject>(ref, { timeoutMs: CALL_TIMEOUT_MS });
      let res;
      if (!got.ok && got.reason === 'NotFound') {
        if (!createIfMissing) return;
        const node = await this.client.get<NodeObject>(
          { resource: 'nodes', name: this.nodeName },
          { timeoutMs: CALL_TIMEOUT_MS },
        );
        if (!node.ok)
          throw new Error(`error getting node ${this.nodeName}: ${node.status.message ?? node.reason}`);
        res = await this.client.create<CSINodeObject>(
          ref,
          {
            apiVersion: 'storage.k8s.io/v1',
            kind: 'CSINode',
            metadata: {
              name: this.nodeName,
              ownerReferences: [
                { apiVersion: 'v1', kind: 'Node', name: this.nodeName, uid: node.object.metadata.uid ?? '' },
              ],
            },
            spec: { drivers: change([]) },
          },
          { timeoutMs: CALL_TIMEOUT_MS },
        );
      } else if (!got.ok) {
        throw new Error(`error getting CSINode ${this.nodeName}: ${got.status.message ?? got.reason}`);
      } else {
        const csiNode = got.object;
        csiNode.spec.drivers = change(csiNode.spec.drivers ?? []);
        res = await this.client.update<CSINodeObject>(ref, csiNode, { timeoutMs: CALL_TIMEOUT_MS });
      }
      if (res.ok) return;
      if ((res.reason !== 'Conflict' && res.reason !== 'AlreadyExists') || attempt >= CONFLICT_RETRIES) {
        throw new Error(`error updating CSINode ${this.nodeName}: ${res.status.message ?? res.reason}`);
      }
      log.v(4, 'Retrying CSINode update after a conflict', {
        node: this.nodeName,
        err: errorMessage(res.status.message),
      });
    }
  }
}

function nodeIds(node: NodeObject): Record<string, string> {
  const raw = node.metadata.annotations?.[ANNOTATION_KEY_NODE_ID];
  if (!raw) return {};
  try {
    const parsed = JSON.parse(raw) as unknown;
    return parsed && typeof parsed === 'object' ? { ...(parsed as Record<string, string>) } : {};
  } catch {
    return {};
  }
}

function sortKeys(m: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(m).sort(([a], [b]) => compareStrings(a, b)));
}
