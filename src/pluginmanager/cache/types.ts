/**
 * What a consumer of plugins implements to take the plugins of one type (upstream:
 * pkg/kubelet/pluginmanager/cache.PluginHandler). The plugin manager calls it in this order for each
 * plugin name, one call at a time: validate, then register; deregister once its socket is gone. A
 * socket re-created with the same name is deregistered and registered again.
 *
 * The handlers are keyed by the plugin's `PluginInfo.type`: `CSIPlugin` (the CSI volume plugin),
 * `DevicePlugin` (the device manager).
 */
export interface PluginHandler {
  /** Rejects (throws) when the plugin's information is unacceptable: unsupported versions, a name taken. */
  validatePlugin(pluginName: string, endpoint: string, versions: string[]): Promise<void> | void;
  /** Takes the plugin into use. A failure is reported to the plugin and retried with back-off. */
  registerPlugin(
    pluginName: string,
    endpoint: string,
    versions: string[],
    pluginClientTimeoutMs?: number,
  ): Promise<void> | void;
  /** The plugin's socket is gone (upstream v1.30 passes only the name; the endpoint is extra). */
  deRegisterPlugin(pluginName: string, endpoint: string): void;
}

/** upstream: registerapi.CSIPlugin, DevicePlugin. */
export const PluginType = {
  CSIPlugin: 'CSIPlugin',
  DevicePlugin: 'DevicePlugin',
} as const;

/** A socket the watcher found (desired state): the id changes each time it is (re-)created. */
export interface PluginToRegister {
  socketPath: string;
  /** upstream: Timestamp (later UUID): a socket re-created at the same path is a new plugin. */
  id: number;
}

/** A plugin registered through a socket (actual state). */
export interface RegisteredPlugin {
  socketPath: string;
  id: number;
  handler: PluginHandler;
  name: string;
  endpoint: string;
}
