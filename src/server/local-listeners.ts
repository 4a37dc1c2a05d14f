/**
 * The kubelet's listeners on this machine, as components: the node page's root-only socket first
 * (its private folder made, its group resolved), then the loopback /healthz listener, whose node
 * page data asks for a token made at this start and written, as the page's address, beside the
 * socket (node-page-access.ts).
 */
import { asComponent, type Component } from '../lib/component.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { startLocalServer, type LocalServer, type ServerHost } from './local-server.js';
import {
  newNodePageToken,
  nodePagePaths,
  nodePageUrl,
  prepareNodePageDir,
  removeNodePageUrl,
  resolveGroup,
  writeNodePageUrl,
} from './node-page-access.js';
import { startNodePageSocket, type NodePageSocket } from './node-page-socket.js';

const log = logger('server');

export interface LocalListenersOptions {
  rootDir: string;
  /** --node-page-group: a group name or number whose members may read the node page too; '' for root only. */
  nodePageGroup: string;
  /** The /healthz listener; undefined when healthzPort is 0. */
  healthz?: { address: string; port: number };
}

export function localListenerComponents(host: ServerHost, opts: LocalListenersOptions): Component[] {
  const token = newNodePageToken();
  const paths = nodePagePaths(opts.rootDir);
  let gid: number | undefined;
  let socket: NodePageSocket | undefined;
  let healthz: LocalServer | undefined;
  const nodePage = host.nodePage;
  const components: Component[] = [];
  if (nodePage)
    components.push(
      asComponent('nodepagesocket', {
        start: async () => {
          gid = opts.nodePageGroup === '' ? undefined : await resolveGroup(opts.nodePageGroup);
          await prepareNodePageDir(opts.rootDir, gid);
          socket = await startNodePageSocket({ ...host, nodePage }, opts.rootDir, gid);
        },
        stop: () => socket?.close(),
        detail: () => (socket ? { path: socket.path } : undefined),
      }),
    );
  const address = opts.healthz;
  if (address)
    components.push(
      asComponent('healthz', {
        start: async () => {
          healthz = await startLocalServer(host, {
            ...address,
            readOnly: false,
            nodePageToken: token,
            nodePageAccess: { socket: paths.socket, urlFile: paths.urlFile },
          });
          if (!nodePage) return;
          // The page's address is a convenience: /healthz is served even when it cannot be written.
          await writeNodePageUrl(opts.rootDir, nodePageUrl(address.address, healthz.port, token), gid).catch(
            (err: unknown) =>
              log.error("Unable to write the node page's address", {
                path: paths.urlFile,
                err: errorMessage(err),
              }),
          );
        },
        stop: async () => {
          if (nodePage) await removeNodePageUrl(opts.rootDir).catch(() => undefined);
          await healthz?.close();
        },
        detail: () => (healthz ? { port: healthz.port } : undefined),
      }),
    );
  return components;
}
