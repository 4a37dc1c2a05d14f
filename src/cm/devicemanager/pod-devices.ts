/**
 * Which devices each container holds, and what its plugin's Allocate answered for them (upstream:
 * podDevices in pkg/kubelet/cm/devicemanager/pod_devices.go). Keyed pod UID → container → resource.
 */
import type { CDIDevice, Device as DeviceSpec, Mount } from '../../cri/types.js';
import { ContainerAllocateResponse } from './generated/deviceplugin/v1beta1/deviceplugin.js';
import type { PodDevicesEntry } from './checkpoint.js';
import { logger } from '../../lib/log.js';

const log = logger('devicemanager');

/** Device IDs per NUMA node; NODE_WITHOUT_TOPOLOGY for devices without one. */
export type DevicesPerNuma = Map<number, string[]>;

export interface DeviceAllocateInfo {
  deviceIds: DevicesPerNuma;
  allocResp: ContainerAllocateResponse;
}

/** What a container gets from its devices (upstream: DeviceRunContainerOptions). */
export interface DeviceRunContainerOptions {
  envs: { name: string; value: string }[];
  mounts: Mount[];
  devices: DeviceSpec[];
  annotations: { name: string; value: string }[];
  cdiDevices: CDIDevice[];
}

function allIds(d: DevicesPerNuma): string[] {
  const out = new Set<string>();
  for (const ids of d.values()) for (const id of ids) out.add(id);
  return [...out];
}

export class PodDevices {
  private readonly devs = new Map<string, Map<string, Map<string, DeviceAllocateInfo>>>();

  pods(): Set<string> {
    return new Set(this.devs.keys());
  }

  hasPod(podUid: string): boolean {
    return this.devs.has(podUid);
  }

  insert(
    podUid: string,
    container: string,
    resource: string,
    deviceIds: DevicesPerNuma,
    allocResp: ContainerAllocateResponse,
  ): void {
    let byContainer = this.devs.get(podUid);
    if (!byContainer) this.devs.set(podUid, (byContainer = new Map()));
    let byResource = byContainer.get(container);
    if (!byResource) byContainer.set(container, (byResource = new Map()));
    byResource.set(resource, { deviceIds, allocResp });
  }

  delete(podUids: Iterable<string>): void {
    for (const uid of podUids) this.devs.delete(uid);
  }

  /** The devices of resource that container holds; undefined when it holds none. */
  containerDevices(podUid: string, container: string, resource: string): Set<string> | undefined {
    const info = this.devs.get(podUid)?.get(container)?.get(resource);
    return info ? new Set(allIds(info.deviceIds)) : undefined;
  }

  /** The devices of resource that any container of the pod holds. */
  podDevices(podUid: string, resource: string): Set<string> {
    const out = new Set<string>();
    for (const byResource of this.devs.get(podUid)?.values() ?? [])
      for (const id of allIds(byResource.get(resource)?.deviceIds ?? new Map())) out.add(id);
    return out;
  }

  /** Per resource, the devices of one container (podresources' view). */
  containerResources(podUid: string, container: string): Map<string, DevicesPerNuma> {
    const out = new Map<string, DevicesPerNuma>();
    for (const [resource, info] of this.devs.get(podUid)?.get(container) ?? [])
      out.set(resource, info.deviceIds);
    return out;
  }

  /** Adds the devices container holds to reusable (an init container's, for the containers after it). */
  addContainerAllocatedResources(
    podUid: string,
    container: string,
    reusable: Map<string, Set<string>>,
  ): void {
    for (const [resource, info] of this.devs.get(podUid)?.get(container) ?? []) {
      let set = reusable.get(resource);
      if (!set) reusable.set(resource, (set = new Set()));
      for (const id of allIds(info.deviceIds)) set.add(id);
    }
  }

  /** Takes the devices container holds out of reusable. */
  removeContainerAllocatedResources(
    podUid: string,
    container: string,
    reusable: Map<string, Set<string>>,
  ): void {
    for (const [resource, info] of this.devs.get(podUid)?.get(container) ?? []) {
      const set = reusable.get(resource);
      if (set) for (const id of allIds(info.deviceIds)) set.delete(id);
    }
  }

  /** Every allocated device, per resource (upstream: podDevices.devices()). */
  devices(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const byContainer of this.devs.values())
      for (const byResource of byContainer.values())
        for (const [resource, info] of byResource) {
          let set = out.get(resource);
          if (!set) out.set(resource, (set = new Set()));
          for (const id of allIds(info.deviceIds)) set.add(id);
        }
    return out;
  }

  toCheckpointData(): PodDevicesEntry[] | null {
    const out: PodDevicesEntry[] = [];
    for (const [podUid, byContainer] of this.devs)
      for (const [container, byResource] of byContainer)
        for (const [resource, info] of byResource) {
          const deviceIds: Record<string, string[]> = {};
          for (const [numa, ids] of info.deviceIds) deviceIds[String(numa)] = ids;
          out.push({
            PodUID: podUid,
            ContainerName: container,
            ResourceName: resource,
            DeviceIDs: deviceIds,
            AllocResp: ContainerAllocateResponse.encode(info.allocResp).finish(),
          });
        }
    // Go's podDevices starts from a nil slice: no entries is nil, written as null.
    return out.length > 0 ? out : null;
  }

  fromCheckpointData(entries: readonly PodDevicesEntry[]): void {
    for (const e of entries) {
      const deviceIds: DevicesPerNuma = new Map();
      for (const [numa, ids] of Object.entries(e.DeviceIDs ?? {})) deviceIds.set(Number(numa), ids ?? []);
      let allocResp: ContainerAllocateResponse;
      try {
        allocResp = ContainerAllocateResponse.decode(e.AllocResp ?? new Uint8Array());
      } catch (err) {
        log.error('Cannot decode an allocation response in the checkpoint', {
          podUID: e.PodUID,
          containerName: e.ContainerName,
          resourceName: e.ResourceName,
          err: (err as Error).message,
        });
        continue;
      }
      this.insert(e.PodUID, e.ContainerName, e.ResourceName, deviceIds, allocResp);
    }
  }

  /**
   * Everything the container's devices bring, merged over its resources as upstream merges them:
   * the first value of an env var or annotation wins (a conflict is logged), mounts and device nodes
   * are deduplicated by their path in the container.
   */
  deviceRunContainerOptions(podUid: string, container: string): DeviceRunContainerOptions | undefined {
    const byResource = this.devs.get(podUid)?.get(container);
    if (!byResource) return undefined;
    const envs = new Map<string, string>();
    const annotations = new Map<string, string>();
    const mounts = new Map<string, Mount>();
    const devices = new Map<string, DeviceSpec>();
    const cdi = new Map<string, CDIDevice>();
    const merge = (kind: string, into: Map<string, string>, from: Record<string, string>): void => {
      for (const [k, v] of Object.entries(from)) {
        const had = into.get(k);
        if (had === undefined) into.set(k, v);
        else if (had !== v)
          log.error(`Environment variable or annotation has conflicting values`, {
            kind,
            key: k,
            value: v,
            existing: had,
          });
      }
    };
    for (const info of byResource.values()) {
      const r = info.allocResp;
      merge('env', envs, r.envs);
      merge('annotation', annotations, r.annotations);
      for (const m of r.mounts) {
        if (mounts.has(m.containerPath)) continue;
        mounts.set(m.containerPath, {
          containerPath: m.containerPath,
          hostPath: m.hostPath,
          readonly: m.readOnly,
          selinuxRelabel: false,
          propagation: 'PROPAGATION_PRIVATE',
        });
      }
      for (const d of r.devices) {
        if (devices.has(d.containerPath)) continue;
        devices.set(d.containerPath, {
          containerPath: d.containerPath,
          hostPath: d.hostPath,
          permissions: d.permissions,
        });
      }
      for (const c of r.cdiDevices) if (!cdi.has(c.name)) cdi.set(c.name, { name: c.name });
    }
    return {
      envs: [...envs].map(([name, value]) => ({ name, value })),
      mounts: [...mounts.values()],
      devices: [...devices.values()],
      annotations: [...annotations].map(([name, value]) => ({ name, value })),
      cdiDevices: [...cdi.values()],
    };
  }
}
