/**
 * The CSI side of plugin registration (upstream: csi.RegistrationHandler): the plugin manager hands
 * it the sockets of type `CSIPlugin`. A driver is validated by its versions, recorded by name with
 * its endpoint, asked for its node ID (NodeGetInfo), and announced on the Node and CSINode; its
 * socket removed, it is forgotten and taken off them again.
 */
import { errorMessage } from '../../lib/errors.js';
import type { PluginHandler } from '../../pluginmanager/cache/types.js';
import { logger } from '../../lib/log.js';
import { CsiDriverClient } from './csi-client.js';
import {
  formatVersion,
  highestSupportedVersion,
  versionLessThan,
  type CsiDriversStore,
} from './csi-drivers-store.js';
import type { NodeInfoManager } from './node-info-manager.js';

const log = logger('csi');

/** upstream: csiTimeout. */
export const CSI_TIMEOUT_MS = 120_000;

/** upstream's log(): every message of the CSI plugin starts with its name. */
export function csiMsg(msg: string): string {
  return `kubernetes.io/csi: ${msg}`;
}

export class CsiRegistrationHandler implements PluginHandler {
  constructor(
    private readonly drivers: CsiDriversStore,
    private readonly nim: NodeInfoManager,
    private readonly callTimeoutMs = CSI_TIMEOUT_MS,
  ) {}

  validatePlugin(pluginName: string, endpoint: string, versions: string[]): void {
    log.info(csiMsg('Trying to validate a new CSI Driver'), {
      pluginName,
      endpoint,
      versions: versions.join(','),
    });
    try {
      this.validateVersions('ValidatePlugin', pluginName, versions);
    } catch (err) {
      throw new Error(
        `validation failed for CSI Driver ${pluginName} at endpoint ${endpoint}: ${errorMessage(err)}`,
      );
    }
  }

  async registerPlugin(pluginName: string, endpoint: string, versions: string[]): Promise<void> {
    log.info(csiMsg('Register new plugin'), { pluginName, endpoint });
    const highest = this.validateVersions('RegisterPlugin', pluginName, versions);
    this.drivers.set(pluginName, { endpoint, highestSupportedVersion: highest });
    try {
      const info = await new CsiDriverClient(pluginName, endpoint).nodeGetInfo(this.callTimeoutMs);
      await this.nim.installCSIDriver(
        pluginName,
        info.nodeId,
        info.maxVolumesPerNode,
        info.accessibleTopology,
      );
      log.info(csiMsg('Registered CSI driver'), { pluginName, nodeID: info.nodeId });
    } catch (err) {
      await this.unregisterDriver(pluginName).catch((unregErr: unknown) =>
        log.error(
          csiMsg(
            `registrationHandler.RegisterPlugin failed to unregister plugin due to previous error: ${errorMessage(unregErr)}`,
          ),
        ),
      );
      throw err;
    }
  }

  deRegisterPlugin(pluginName: string): void {
    log.info(csiMsg(`registrationHandler.DeRegisterPlugin request for plugin ${pluginName}`));
    this.unregisterDriver(pluginName).catch((err: unknown) =>
      log.error(csiMsg(`registrationHandler.DeRegisterPlugin failed: ${errorMessage(err)}`)),
    );
  }

  private async unregisterDriver(pluginName: string): Promise<void> {
    this.drivers.delete(pluginName);
    try {
      await this.nim.uninstallCSIDriver(pluginName);
    } catch (err) {
      throw new Error(csiMsg(`Error uninstalling CSI driver: ${errorMessage(err)}`));
    }
  }

  private validateVersions(callerName: string, pluginName: string, versions: string[]): number[] {
    if (versions.length === 0) {
      throw new Error(
        csiMsg(
          `${callerName} for CSI driver "${pluginName}" failed. Plugin returned an empty list for supported versions`,
        ),
      );
    }
    let highest: number[];
    try {
      highest = highestSupportedVersion(versions);
    } catch (err) {
      throw new Error(
        csiMsg(
          `${callerName} for CSI driver "${pluginName}" failed. None of the versions specified ${JSON.stringify(versions)} are supported. err=${errorMessage(err)}`,
        ),
      );
    }
    const existing = this.drivers.get(pluginName);
    if (existing && !versionLessThan(existing.highestSupportedVersion, highest)) {
      throw new Error(
        csiMsg(
          `${callerName} for CSI driver "${pluginName}" failed. Another driver with the same name is already registered with a higher supported version: "${formatVersion(existing.highestSupportedVersion)}"`,
        ),
      );
    }
    return highest;
  }
}
