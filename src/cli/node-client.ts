/**
 * The CLI's way to the local kubelet: the node page's JSON under /node/api/, over the kubelet's
 * root-only unix socket (`<root-dir>/node-page/kubelet.sock`), or over its loopback /healthz
 * listener with the page's token (--server).
 */
import http from 'node:http';
import type { Pod, PodList } from '../api/core-v1.js';
import type { CoreEvent } from '../events/event-types.js';
import { KubeletError } from '../lib/errors.js';

export const DEFAULT_SERVER = 'http://127.0.0.1:10248';
const REQUEST_TIMEOUT_MS = 10_000;

/** Where the kubelet answers: its socket, or an HTTP address with the page's token. */
export type NodeTarget = { socketPath: string } | { server: string; token?: string };

export class NodeClientError extends KubeletError {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super('NODE_API_ERROR', message);
  }
}

export class NodeClient {
  constructor(private readonly target: NodeTarget) {}

  private describe(): string {
    return 'socketPath' in this.target ? this.target.socketPath : new URL(this.target.server).origin;
  }

  private request(path: string): { url: URL; options: http.RequestOptions } {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if ('socketPath' in this.target)
      return {
        url: new URL(`/node/api/${path}`, 'http://localhost'),
        options: { socketPath: this.target.socketPath, headers },
      };
    if (this.target.token) headers.Authorization = `Bearer ${this.target.token}`;
    return { url: new URL(`/node/api/${path}`, this.target.server), options: { headers } };
  }

  /** Opens a GET and hands back the response once its status is 200. */
  private open(path: string, signal?: AbortSignal): Promise<http.IncomingMessage> {
    const { url, options } = this.request(path);
    const where = this.describe();
    return new Promise((resolve, reject) => {
      const req = http.get(url, { ...options, signal }, (res) => {
        if (res.statusCode === 200) return resolve(res);
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          reject(new NodeClientError(body.trim() || `HTTP ${res.statusCode}`, res.statusCode)),
        );
        res.on('error', reject);
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () =>
        req.destroy(new NodeClientError(`no answer from ${where} within ${REQUEST_TIMEOUT_MS / 1000}s`)),
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')
          reject(
            new NodeClientError(
              `the connection to the kubelet at ${where} was refused - is tskubelet running?`,
            ),
          );
        else if (err.code === 'EACCES')
          reject(
            new NodeClientError(
              `permission denied on ${where}: only root (or the kubelet's --node-page-group) may read the node`,
            ),
          );
        else reject(err);
      });
    });
  }

  private async json<T>(path: string): Promise<T> {
    const res = await this.open(path);
    let body = '';
    res.setEncoding('utf8');
    for await (const chunk of res) body += chunk as string;
    return JSON.parse(body) as T;
  }

  pods(): Promise<PodList> {
    return this.json<PodList>('pods');
  }

  pod(namespace: string, name: string): Promise<{ pod: Pod; events: CoreEvent[] }> {
    return this.json(`pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
  }

  events(namespace?: string): Promise<{ items: CoreEvent[] }> {
    return this.json(
      namespace === undefined ? 'events' : `events?namespace=${encodeURIComponent(namespace)}`,
    );
  }

  /** Streams the log to out; resolves when the kubelet ends it (at once unless following). */
  async logs(
    namespace: string,
    pod: string,
    container: string,
    query: URLSearchParams,
    out: NodeJS.WritableStream,
    signal?: AbortSignal,
  ): Promise<void> {
    const res = await this.open(
      `logs/${encodeURIComponent(namespace)}/${encodeURIComponent(pod)}/${encodeURIComponent(container)}?${query}`,
      signal,
    );
    for await (const chunk of res) {
      if (!out.write(chunk as Buffer)) await new Promise((r) => out.once('drain', r));
    }
  }
}
