/**
 * A real image registry on loopback for pull tests: Debian's docker-registry started by
 * scripts/registry.sh on a folder and port of the test's own, and a pusher that copies an image
 * from the offline OCI layouts (.stack/images/<name>/) into it with plain HTTP: blobs, then the
 * manifest (the distribution API's monolithic upload), so no docker client is needed.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const REGISTRY_SCRIPT = path.join(repoRoot, 'scripts/registry.sh');
const HTTP_TIMEOUT_MS = 30_000;

/** Where the runtime stack keeps its images' OCI layouts. */
export function stackImagesDir(): string {
  return path.join(process.env.TSKUBELET_STACK_DIR ?? path.join(repoRoot, '.stack'), 'images');
}

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

interface OciManifest {
  schemaVersion: 2;
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
}

/** Fields of the image config's `config` object (Entrypoint, Cmd, User, Env, …). */
export type ImageConfigOverrides = Record<string, unknown>;

export interface PushResult {
  /** The manifest digest, as the runtime reports it in imageID. */
  digest: string;
  /** `127.0.0.1:<port>/<repo>:<tag>` */
  ref: string;
}

export class TestRegistry {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly credentials: string | undefined,
  ) {}

  /** `127.0.0.1:<port>`: loopback registries are plain HTTP for containerd. */
  get host(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Installs the package when missing and starts a registry; credentials `user:pass` turn on basic auth. */
  static async start(port: number, credentials?: string): Promise<TestRegistry> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-registry-'));
    await run('bash', [REGISTRY_SCRIPT, 'install'], { timeout: 300_000 });
    const args = [REGISTRY_SCRIPT, 'start', dir, String(port)];
    if (credentials) args.push(credentials);
    await run('bash', args, { timeout: 60_000 });
    return new TestRegistry(dir, port, credentials);
  }

  async stop(): Promise<void> {
    await run('bash', [REGISTRY_SCRIPT, 'stop', this.dir], { timeout: 30_000 }).catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }

  /** The registry's own log (its access log names every request). */
  async log(): Promise<string> {
    return readFile(path.join(this.dir, 'registry.log'), 'utf8').catch(() => '');
  }

  /**
   * Copies the image named `fromRef` in the layout `<stack images>/<layout>` to `<repo>:<tag>`, with
   * its config's fields replaced by `overrides` and a label naming the copy (a new config blob, so
   * a new image).
   */
  async push(
    layout: string,
    fromRef: string,
    repo: string,
    tag: string,
    overrides?: ImageConfigOverrides,
    extraLayers: Buffer[] = [],
  ): Promise<PushResult> {
    const layoutDir = path.join(stackImagesDir(), layout);
    const index = JSON.parse(await readFile(path.join(layoutDir, 'index.json'), 'utf8')) as {
      manifests: Descriptor[];
    };
    const entry = index.manifests.find((m) => m.annotations?.['io.containerd.image.name'] === fromRef);
    if (!entry) throw new Error(`no ${fromRef} in ${layoutDir}/index.json`);
    const blob = (digest: string) => readFile(path.join(layoutDir, 'blobs', ...digest.split(':')));
    const manifest = JSON.parse((await blob(entry.digest)).toString('utf8')) as OciManifest;

    for (const layer of manifest.layers) await this.putBlob(repo, await blob(layer.digest));
    // Uncompressed tar layers: the digest is also the diff ID the config must list.
    const added: Descriptor[] = [];
    for (const tar of extraLayers) {
      const digest = await this.putBlob(repo, tar);
      added.push({ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest, size: tar.length });
    }
    // Always a config of its own: an image with the stack's image ID would be one image to the
    // runtime, and removing the test's copy (CRI RemoveImage works by ID) would remove the stack's.
    const parsed = JSON.parse((await blob(manifest.config.digest)).toString('utf8')) as {
      config?: Record<string, unknown> & { Labels?: Record<string, string> };
      rootfs?: { type: string; diff_ids: string[] };
    };
    if (added.length > 0)
      parsed.rootfs = {
        type: 'layers',
        diff_ids: [...(parsed.rootfs?.diff_ids ?? []), ...added.map((d) => d.digest)],
      };
    const labels = { ...(parsed.config?.Labels ?? {}), 'io.tskubelet.test.image': `${repo}:${tag}` };
    const extraLabels = (overrides?.Labels ?? {}) as Record<string, string>;
    parsed.config = { ...(parsed.config ?? {}), ...(overrides ?? {}), Labels: { ...labels, ...extraLabels } };
    const config = Buffer.from(JSON.stringify(parsed));
    const configDigest = await this.putBlob(repo, config);
    const out: OciManifest = {
      ...manifest,
      config: { ...manifest.config, digest: configDigest, size: config.length },
      layers: [...manifest.layers, ...added],
    };
    const body = Buffer.from(JSON.stringify(out));
    const res = await this.request('PUT', `/v2/${repo}/manifests/${tag}`, body, {
      'Content-Type': out.mediaType,
    });
    if (res.status !== 201) throw new Error(`PUT manifest ${repo}:${tag}: ${res.status} ${await res.text()}`);
    return { digest: sha256(body), ref: `${this.host}/${repo}:${tag}` };
  }

  /** Monolithic upload: POST for an upload URL, then one PUT with the digest. Existing blobs are skipped. */
  private async putBlob(repo: string, data: Buffer): Promise<string> {
    const digest = sha256(data);
    const head = await this.request('HEAD', `/v2/${repo}/blobs/${digest}`);
    if (head.status === 200) return digest;
    const start = await this.request('POST', `/v2/${repo}/blobs/uploads/`);
    await start.body?.cancel();
    if (start.status !== 202) throw new Error(`POST blob upload for ${repo}: ${start.status}`);
    const location = new URL(start.headers.get('location') ?? '', `http://${this.host}`);
    location.searchParams.set('digest', digest);
    const put = await this.request('PUT', location.pathname + location.search, data, {
      'Content-Type': 'application/octet-stream',
    });
    if (put.status !== 201) throw new Error(`PUT blob ${digest}: ${put.status} ${await put.text()}`);
    return digest;
  }

  private async request(
    method: string,
    pathAndQuery: string,
    body?: Buffer,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const h: Record<string, string> = { ...headers };
    if (this.credentials) h.Authorization = `Basic ${Buffer.from(this.credentials).toString('base64')}`;
    const res = await fetch(`http://${this.host}${pathAndQuery}`, {
      method,
      headers: h,
      body: body ? new Uint8Array(body) : undefined,
      signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
    });
    if (method === 'HEAD') await res.body?.cancel();
    return res;
  }
}

/**
 * A tar archive (ustar) holding one regular file, for an image layer of a chosen size: random
 * contents do not compress, so a pull moves every byte.
 */
export function tarWithOneFile(name: string, data: Buffer): Buffer {
  const header = Buffer.alloc(512);
  const field = (offset: number, length: number, value: string) =>
    header.write(value, offset, length, 'ascii');
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
  field(0, 100, name);
  field(100, 8, octal(0o644, 8));
  field(108, 8, octal(0, 8));
  field(116, 8, octal(0, 8));
  field(124, 12, octal(data.length, 12));
  field(136, 12, octal(0, 12));
  field(148, 8, '        '); // blanks while the checksum is summed
  field(156, 1, '0');
  field(257, 6, 'ustar');
  field(263, 2, '00');
  let sum = 0;
  for (const b of header) sum += b;
  field(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  const padding = Buffer.alloc((512 - (data.length % 512)) % 512);
  return Buffer.concat([header, data, padding, Buffer.alloc(1024)]);
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** One request the recorder passed on. */
export interface RecordedRequest {
  method: string;
  /** The repository named in a /v2/<repo>/(manifests|blobs)/… path; '' for others. */
  repo: string;
  path: string;
  status: number;
  startMs: number;
  endMs: number;
}

/**
 * A plain HTTP proxy in front of a registry that holds each manifest request for delayMs and
 * records every request, so a test sees when each pull ran and whether pulls overlapped. Loopback
 * registries are plain HTTP for containerd whatever their port, so the proxy is one too.
 */
export class PullRecorder {
  private constructor(
    private readonly server: http.Server,
    readonly port: number,
    readonly requests: RecordedRequest[],
  ) {}

  get host(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** bytesPerSecond: blob downloads are slowed to about this rate, so a large pull takes seconds. */
  static async start(target: TestRegistry, delayMs: number, bytesPerSecond = 0): Promise<PullRecorder> {
    const requests: RecordedRequest[] = [];
    const server = http.createServer((req, res) => {
      const startMs = Date.now();
      const url = req.url ?? '/';
      const m = /^\/v2\/(.+)\/(manifests|blobs)\//.exec(url);
      const forward = () => {
        const upstream = http.request(
          { host: '127.0.0.1', port: target.port, method: req.method, path: url, headers: req.headers },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            if (bytesPerSecond > 0 && m?.[2] === 'blobs') throttle(up, res, bytesPerSecond);
            else up.pipe(res);
            up.on('end', () =>
              requests.push({
                method: req.method ?? '',
                repo: m?.[1] ?? '',
                path: url,
                status: up.statusCode ?? 0,
                startMs,
                endMs: Date.now(),
              }),
            );
          },
        );
        upstream.on('error', () => res.destroy());
        req.pipe(upstream);
      };
      if (m?.[2] === 'manifests') setTimeout(forward, delayMs);
      else forward();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new PullRecorder(server, (server.address() as AddressInfo).port, requests);
  }

  /** When each repository was being pulled: from its first request's start to its last one's end. */
  spans(): Map<string, { startMs: number; endMs: number }> {
    const out = new Map<string, { startMs: number; endMs: number }>();
    for (const r of this.requests) {
      if (r.repo === '') continue;
      const s = out.get(r.repo);
      if (!s) out.set(r.repo, { startMs: r.startMs, endMs: r.endMs });
      else {
        s.startMs = Math.min(s.startMs, r.startMs);
        s.endMs = Math.max(s.endMs, r.endMs);
      }
    }
    return out;
  }

  /** The most repositories being pulled at one moment. */
  maxConcurrentPulls(): number {
    const spans = [...this.spans().values()];
    let max = 0;
    for (const s of spans) {
      const at = s.startMs;
      max = Math.max(max, spans.filter((o) => o.startMs <= at && at < o.endMs).length);
    }
    return max;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Copies from into to, pausing from whenever more than bytesPerSecond has gone out since the start. */
function throttle(from: http.IncomingMessage, to: http.ServerResponse, bytesPerSecond: number): void {
  const startMs = Date.now();
  let sent = 0;
  from.on('data', (chunk: Buffer) => {
    sent += chunk.length;
    to.write(chunk);
    const aheadMs = (sent / bytesPerSecond) * 1000 - (Date.now() - startMs);
    if (aheadMs > 5) {
      from.pause();
      setTimeout(() => from.resume(), aheadMs);
    }
  });
  from.on('end', () => to.end());
  from.on('error', () => to.destroy());
  to.on('close', () => from.destroy());
}
