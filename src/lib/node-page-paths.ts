/**
 * Where the node page's root-only socket and address live under a kubelet root dir: the kubelet
 * makes them (src/server/node-page-access.ts) and `tskubelet get/…/node-page-url` reads them
 * (src/cli), so both name them here.
 */
import path from 'node:path';

export const NODE_PAGE_DIR_NAME = 'node-page';
export const NODE_PAGE_SOCKET_NAME = 'kubelet.sock';
export const NODE_PAGE_URL_FILE_NAME = 'url';

export function nodePagePaths(rootDir: string): { dir: string; socket: string; urlFile: string } {
  const dir = path.join(rootDir, NODE_PAGE_DIR_NAME);
  return {
    dir,
    socket: path.join(dir, NODE_PAGE_SOCKET_NAME),
    urlFile: path.join(dir, NODE_PAGE_URL_FILE_NAME),
  };
}

/** The token a page address carries in its fragment (`…/node/#token=…`), or undefined. */
export function tokenFromNodePageUrl(url: string): string | undefined {
  return /#(?:.*&)?token=([A-Za-z0-9_-]+)/.exec(url.trim())?.[1];
}
