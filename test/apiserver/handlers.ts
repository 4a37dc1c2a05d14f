/**
 * The HTTP face of the test API server: request info parsing (the real server's RequestInfoFactory),
 * authentication, authorization, and the REST verbs over the store, including the newline-delimited
 * JSON watch stream.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../../src/lib/clock.js';
import {
  ApiError,
  badRequest,
  internalError,
  invalid,
  methodNotSupported,
  pathNotFound,
  successStatus,
  unauthorized,
  unsupportedMediaType,
  type FieldError,
} from './api-error.js';
import {
  decide,
  forbiddenError,
  reviewAccess,
  type AuthorizationAttributes,
  type AuthorizationPolicy,
  type Authenticator,
  type UserInfo,
} from './auth.js';
import { discoveryDocument, type VersionInfo } from './discovery.js';
import { patchTypeOf, type Json } from './patch.js';
import { apiVersionOf, findResource, type KubeObject, type ResourceDef } from './resources.js';
import { parseLabelSelector } from './selectors.js';
import { ObjectStore, type DeleteOptions } from './store.js';
import { tableContentType, tableRequest, toTable, type TableRequest } from './tables.js';
import type { ServiceAccountTokenIssuer } from './tokens.js';
import type { WatchEvent } from './watch-hub.js';

export interface RequestRecord {
  method: string;
  path: string;
  query: string;
  user: string;
  verb: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  contentType: string;
  code: number;
  /** A PATCH's body as sent, so tests can compare the exact patch. */
  patch?: string;
}

export interface HandlerContext {
  store: ObjectStore;
  authenticator: Authenticator;
  issuer: ServiceAccountTokenIssuer;
  policy(): AuthorizationPolicy;
  serverAddress(): string;
  version: VersionInfo;
  clock: Clock;
  /** The real server's --min-request-timeout: a watch without timeoutSeconds lasts 1 to 2 times this. */
  minRequestTimeoutSeconds: number;
  record(r: RequestRecord): void;
}

interface RequestInfo {
  resourceRequest: boolean;
  path: string;
  verb: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /** Who asked (set once authenticated): CSRs record their requester. */
  requester?: UserInfo;
}

const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** RequestInfoFactory.NewRequestInfo, for the /api and /apis prefixes. */
function requestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    resourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
  };
  const parts = path.split('/').filter((p) => p !== '');
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 2) {
    info.apiVersion = parts[1]!;
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    info.apiGroup = parts[1]!;
    info.apiVersion = parts[2]!;
    rest = parts.slice(3);
  } else {
    return info;
  }
  if (rest.length === 0) return info;
  info.resourceRequest = true;
  if (rest[0] === 'namespaces' && rest.length > 1) {
    info.namespace = rest[1]!;
    // namespaces/{name}/status and /finalize are subresources of the namespace itself.
    if (rest.length > 2 && rest[2] !== 'status' && rest[2] !== 'finalize') rest = rest.slice(2);
  }
  info.resource = rest[0] ?? '';
  info.name = rest[1] ?? '';
  info.subresource = rest[2] ?? '';
  const watch = query.get('watch') === 'true' || query.get('watch') === '1';
  switch (method) {
    case 'GET':
    case 'HEAD':
      info.verb = info.name ? 'get' : watch ? 'watch' : 'list';
      break;
    case 'POST':
      info.verb = 'create';
      break;
    case 'PUT':
      info.verb = 'update';
      break;
    case 'PATCH':
      info.verb = 'patch';
      break;
    case 'DELETE':
      info.verb = info.name ? 'delete' : 'deletecollection';
      break;
  }
  return info;
}

function sendJson(res: ServerResponse, code: number, body: unknown, contentType = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-cache, private',
  });
  res.end(text);
}

function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      throw new ApiError({ message: 'Request entity too large', reason: 'RequestEntityTooLarge', code: 413 });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function readJson(req: IncomingMessage): Promise<Json | undefined> {
  const body = await readBody(req);
  if (body.length === 0) return undefined;
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim();
  if (type !== 'application/json' && !type.endsWith('+json') && type !== '*/*') {
    throw unsupportedMediaType(
      `the body of the request was in an unknown format - accepted media types include: application/json`,
    );
  }
  try {
    return JSON.parse(body.toString('utf8')) as Json;
  } catch (err) {
    throw badRequest(`json parse error: ${(err as Error).message}`);
  }
}

function asObject(v: Json | undefined): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw badRequest('the request body must be a JSON object');
  return v as Record<string, unknown>;
}

/** Items in a list response carry no kind and apiVersion: the list's own says what they are. */
function listBody(def: ResourceDef, items: KubeObject[], meta: Record<string, unknown>): object {
  return {
    kind: `${def.kind}List`,
    apiVersion: apiVersionOf(def),
    metadata: meta,
    items: items.map((o) => {
      const { kind: _kind, apiVersion: _apiVersion, ...rest } = o;
      return rest;
    }),
  };
}

function intParam(query: URLSearchParams, name: string): number | undefined {
  const v = query.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw badRequest(`invalid ${name}: ${JSON.stringify(v)}`);
  return Number(v);
}

function deleteOptions(body: Json | undefined, query: URLSearchParams): DeleteOptions {
  const opts: DeleteOptions = {};
  const fromBody = body === undefined ? {} : asObject(body);
  const grace = intParam(query, 'gracePeriodSeconds') ?? (fromBody.gracePeriodSeconds as number | undefined);
  if (grace !== undefined && grace !== null) opts.gracePeriodSeconds = grace;
  const pre = fromBody.preconditions as { uid?: string; resourceVersion?: string } | undefined;
  if (pre && (pre.uid !== undefined || pre.resourceVersion !== undefined)) {
    opts.preconditions = {
      ...(pre.uid !== undefined ? { uid: pre.uid } : {}),
      ...(pre.resourceVersion !== undefined ? { resourceVersion: pre.resourceVersion } : {}),
    };
  }
  return opts;
}

/** The body of each PATCH request, for its RequestRecord. */
const patchBodies = new WeakMap<IncomingMessage, string>();

export function createRequestHandler(
  ctx: HandlerContext,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://test-api-server');
    const method = req.method ?? 'GET';
    const info = requestInfo(method, url.pathname, url.searchParams);
    let user: UserInfo | undefined;
    const done = (code: number) =>
      ctx.record({
        method,
        path: url.pathname,
        query: url.search,
        user: user?.username ?? '',
        verb: info.verb,
        resource: info.resource,
        subresource: info.subresource,
        namespace: info.namespace,
        name: info.name,
        contentType: req.headers['content-type'] ?? '',
        code,
        ...(patchBodies.has(req) ? { patch: patchBodies.get(req) } : {}),
      });
    const fail = (err: unknown) => {
      const e = err instanceof ApiError ? err : internalError(err);
      if (res.headersSent) {
        res.destroy();
      } else {
        sendJson(res, e.code, e.status);
      }
      done(e.code);
    };
    try {
      user = ctx.authenticator.authenticateRequest(req);
      if (!user) throw unauthorized();
      info.requester = user;
      const attrs: AuthorizationAttributes = { user, ...info };
      const decision = decide(ctx.policy(), attrs);
      if (!decision.allowed) throw forbiddenError(attrs, decision.reason);
      serve(ctx, req, res, url, info).then((code) => done(code), fail);
    } catch (err) {
      fail(err);
    }
  };
}

async function serve(
  ctx: HandlerContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  info: RequestInfo,
): Promise<number> {
  if (!info.resourceRequest) return serveNonResource(ctx, req, res, url.pathname);
  const def = findResource(info.apiGroup, info.apiVersion, info.resource);
  if (!def || (info.namespace && !def.namespaced && info.resource !== 'namespaces')) throw pathNotFound();
  const namespace = def.namespaced ? info.namespace : undefined;
  const query = url.searchParams;
  const store = ctx.store;
  const method = req.method ?? 'GET';

  if (info.subresource && !def.subresources.includes(info.subresource)) throw pathNotFound();
  if (def.virtual) {
    if (method !== 'POST' || info.name) throw methodNotSupported(def, info.verb);
    const body = asObject(await readJson(req));
    const review =
      def.resource === 'tokenreviews'
        ? ctx.authenticator.reviewToken(body)
        : reviewAccess(ctx.policy(), body);
    sendJson(res, 201, review);
    return 201;
  }

  switch (method) {
    case 'GET':
    case 'HEAD': {
      const table = tableRequest(req.headers.accept, def.resource, query.get('includeObject'));
      if (info.name) {
        if (
          info.subresource &&
          info.subresource !== 'status' &&
          info.subresource !== 'approval' &&
          info.subresource !== 'ephemeralcontainers'
        )
          throw methodNotSupported(def, 'get');
        const o = store.get(def.resource, info.name, namespace);
        if (table) {
          const meta = { resourceVersion: o.metadata.resourceVersion };
          sendJson(
            res,
            200,
            toTable(def.resource, [o], table, meta, ctx.clock.now()),
            tableContentType(table),
          );
        } else {
          sendJson(res, 200, o);
        }
        return 200;
      }
      if (info.verb === 'watch') return serveWatch(ctx, res, def, namespace, query, table);
      const list = store.list(def.resource, {
        ...(namespace ? { namespace } : {}),
        labelSelector: query.get('labelSelector') ?? '',
        fieldSelector: query.get('fieldSelector') ?? '',
        limit: intParam(query, 'limit') ?? 0,
        ...(query.get('continue') ? { continue: query.get('continue')! } : {}),
        ...(query.get('resourceVersion') !== null ? { resourceVersion: query.get('resourceVersion')! } : {}),
      });
      const meta = {
        resourceVersion: list.resourceVersion,
        ...(list.continue ? { continue: list.continue } : {}),
        ...(list.remainingItemCount !== undefined ? { remainingItemCount: list.remainingItemCount } : {}),
      };
      if (table) {
        sendJson(
          res,
          200,
          toTable(def.resource, list.items, table, meta, ctx.clock.now()),
          tableContentType(table),
        );
      } else {
        sendJson(res, 200, listBody(def, list.items, meta));
      }
      return 200;
    }
    case 'POST': {
      const body = asObject(await readJson(req));
      if (info.subresource === 'token') {
        sendJson(res, 201, ctx.issuer.createTokenRequest(store, namespace ?? '', info.name, body));
        return 201;
      }
      if (info.subresource === 'binding') {
        const target = (body.target as { name?: string } | undefined)?.name;
        if (!target) {
          throw invalid({ group: '', kind: 'Binding' }, info.name, [
            { type: 'FieldValueRequired', field: 'target.name', body: 'Required value' },
          ]);
        }
        store.bindPod(info.name, namespace ?? '', target);
        sendJson(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
        return 201;
      }
      if (info.name) throw methodNotSupported(def, 'create');
      if (def.resource === 'certificatesigningrequests')
        prepareCsrForCreate(body as KubeObject, info.requester);
      sendJson(res, 201, store.create(def.resource, body as KubeObject, namespace));
      return 201;
    }
    case 'PUT': {
      if (!info.name) throw methodNotSupported(def, 'update');
      const body = asObject(await readJson(req)) as KubeObject;
      const meta = (body.metadata ??= {});
      if (meta.name !== info.name) {
        throw badRequest(
          `the name of the object (${String(meta.name ?? '')}) does not match the name on the URL (${info.name})`,
        );
      }
      if (namespace !== undefined) {
        if (meta.namespace && meta.namespace !== namespace) {
          throw badRequest(
            'the namespace of the provided object does not match the namespace sent on the request',
          );
        }
        meta.namespace = namespace;
      }
      const existed = store.tryGet(def.resource, info.name, namespace) !== undefined;
      const out = store.update(def.resource, body, subresourceOption(info.subresource));
      const code = existed ? 200 : 201;
      sendJson(res, code, out);
      return code;
    }
    case 'PATCH': {
      if (!info.name) throw methodNotSupported(def, 'patch');
      const type = patchTypeOf(req.headers['content-type']);
      if (!type) {
        throw unsupportedMediaType(
          'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json',
        );
      }
      const body = await readBody(req);
      patchBodies.set(req, body.toString('utf8'));
      let patch: Json;
      try {
        patch = JSON.parse(body.toString('utf8')) as Json;
      } catch (err) {
        throw badRequest(`error decoding patch: ${(err as Error).message}`);
      }
      const out = store.patch(
        def.resource,
        info.name,
        namespace,
        type,
        patch,
        subresourceOption(info.subresource),
      );
      sendJson(res, 200, out);
      return 200;
    }
    case 'DELETE': {
      const body = await readJson(req);
      const opts = deleteOptions(body, query);
      if (!info.name) {
        const items = store.deleteCollection(
          def.resource,
          {
            ...(namespace ? { namespace } : {}),
            labelSelector: query.get('labelSelector') ?? '',
            fieldSelector: query.get('fieldSelector') ?? '',
          },
          opts,
        );
        sendJson(res, 200, listBody(def, items, {}));
        return 200;
      }
      const result = store.delete(def.resource, info.name, namespace, opts);
      if (result.deleted && !def.returnDeletedObject) {
        const o = result.object.metadata;
        sendJson(
          res,
          200,
          successStatus({
            name: o.name ?? '',
            ...(def.group ? { group: def.group } : {}),
            kind: def.resource,
            uid: o.uid ?? '',
          }),
        );
      } else {
        sendJson(res, 200, result.object);
      }
      return 200;
    }
    default:
      throw methodNotSupported(def, method.toLowerCase());
  }
}

function serveNonResource(
  ctx: HandlerContext,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): number {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendText(res, 404, '404 page not found\n');
    return 404;
  }
  if (['/healthz', '/livez', '/readyz'].includes(path)) {
    sendText(res, 200, 'ok');
    return 200;
  }
  const doc = discoveryDocument(path, ctx.serverAddress(), ctx.version);
  if (doc) {
    sendJson(res, 200, doc);
    return 200;
  }
  if (path.startsWith('/api/') || path.startsWith('/apis/')) {
    const e = pathNotFound();
    sendJson(res, 404, e.status);
    return 404;
  }
  sendText(res, 404, '404 page not found\n');
  return 404;
}

function boolParam(query: URLSearchParams, name: string): boolean | undefined {
  const v = query.get(name);
  if (v === null) return undefined;
  return v === 'true' || v === '1';
}

function serveWatch(
  ctx: HandlerContext,
  res: ServerResponse,
  def: ResourceDef,
  namespace: string | undefined,
  query: URLSearchParams,
  table: TableRequest | undefined,
): number {
  const labelSelector = parseLabelSelector(query.get('labelSelector'));
  const fieldSelector = ObjectStore.fieldSelectorFor(def, query.get('fieldSelector') ?? '');
  const rvText = query.get('resourceVersion') ?? '';
  if (rvText !== '' && !/^\d+$/.test(rvText))
    throw badRequest(`invalid resource version: ${JSON.stringify(rvText)}`);
  const rv = rvText === '' ? undefined : Number(rvText);
  const allowWatchBookmarks = boolParam(query, 'allowWatchBookmarks') ?? false;
  const sendInitialEventsParam = boolParam(query, 'sendInitialEvents');
  if (sendInitialEventsParam !== undefined) {
    const errs: FieldError[] = [];
    if (query.get('resourceVersionMatch') !== 'NotOlderThan') {
      errs.push({
        type: 'FieldValueForbidden',
        field: 'resourceVersionMatch',
        body: 'Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
      });
    }
    if (sendInitialEventsParam && !allowWatchBookmarks) {
      errs.push({
        type: 'FieldValueForbidden',
        field: 'allowWatchBookmarks',
        body: 'Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true',
      });
    }
    if (errs.length > 0) throw invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', errs);
  }
  // Legacy semantics: no resourceVersion, or "0", means "start with the current state".
  const sendInitialEvents = sendInitialEventsParam ?? (rv === undefined || rv === 0);
  const timeoutSeconds = intParam(query, 'timeoutSeconds');
  const timeoutMs =
    timeoutSeconds !== undefined && timeoutSeconds > 0
      ? timeoutSeconds * 1000
      : ctx.minRequestTimeoutSeconds * 1000 * (1 + Math.random());

  res.writeHead(200, {
    'Content-Type': table ? tableContentType(table) : 'application/json',
    'Cache-Control': 'no-cache, private',
    'Transfer-Encoding': 'chunked',
  });
  res.flushHeaders();
  let ended = false;
  let headersSent = false;
  // kubectl get -w asks for Tables: each change goes out as a one-row Table, headers only on the first.
  const render = (event: WatchEvent): WatchEvent | object => {
    if (!table || event.type === 'BOOKMARK' || event.type === 'ERROR') return event;
    const o = event.object as KubeObject;
    const out = {
      type: event.type,
      object: toTable(
        def.resource,
        [o],
        table,
        { resourceVersion: o.metadata.resourceVersion },
        ctx.clock.now(),
        !headersSent,
      ),
    };
    headersSent = true;
    return out;
  };
  const handle = ctx.store.hub.watch(
    {
      def,
      ...(namespace ? { namespace } : {}),
      labelSelector,
      fieldSelector,
      ...(rv !== undefined ? { resourceVersion: rv } : {}),
      sendInitialEvents,
      markInitialEventsEnd: sendInitialEventsParam === true,
      allowWatchBookmarks,
      timeoutMs,
    },
    {
      send: (event) => {
        if (!ended) res.write(JSON.stringify(render(event)) + '\n');
      },
      end: () => {
        if (ended) return;
        ended = true;
        res.end();
      },
    },
  );
  // The response, not the request: a request's 'close' fires once its (empty) body has been read.
  res.on('close', () => {
    ended = true;
    handle.stop();
  });
  return 200;
}

/** PUT and PATCH on `status`, `approval` or `ephemeralcontainers` change only that part of the object. */
function subresourceOption(subresource: string): {
  subresource?: 'status' | 'approval' | 'ephemeralcontainers';
} {
  return subresource === 'status' || subresource === 'approval' || subresource === 'ephemeralcontainers'
    ? { subresource }
    : {};
}

/** The CSR strategy's PrepareForCreate: the requester is recorded, any status sent is dropped. */
function prepareCsrForCreate(obj: KubeObject, user: UserInfo | undefined): void {
  const spec = ((obj as { spec?: Record<string, unknown> }).spec ??= {});
  spec.username = user?.username ?? '';
  spec.groups = user?.groups ?? [];
  if (user?.uid) spec.uid = user.uid;
  else delete spec.uid;
  delete (obj as { status?: unknown }).status;
}
