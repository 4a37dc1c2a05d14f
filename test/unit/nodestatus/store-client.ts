/**
 * A NodeApiClient over the test API server's ObjectStore, in process: the same rules as the HTTP
 * API (optimistic concurrency, status subresource, strategic merge patch) without sockets, so loops
 * can run on a FakeClock. Outages and failures are injected per call; every call is recorded.
 */
import type { ApiResult, Status } from '../../../src/k8s/api-status.js';
import { expectedFailure, KubeApiError } from '../../../src/k8s/api-status.js';
import type { CallOptions, KubeObject, PatchType, ResourceRef } from '../../../src/k8s/rest-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import type { NodeApiClient } from '../../../src/nodestatus/node-client.js';
import { ApiError } from '../../apiserver/api-error.js';
import type { Json } from '../../apiserver/patch.js';
import { ObjectStore } from '../../apiserver/store.js';
import type { KubeObject as StoredObject } from '../../apiserver/resources.js';

export interface RecordedCall {
  verb: 'get' | 'create' | 'update' | 'patch';
  resource: string;
  name?: string;
  subresource?: string;
  body?: unknown;
  timeoutMs?: number;
  /** The fake clock's time of the call. */
  atMs: number;
}

export class StoreClient implements NodeApiClient {
  readonly calls: RecordedCall[] = [];
  /** While true every call fails as an unreachable server does. */
  down = false;
  /** Fails this many of the next calls (of the given verb, if set) with a 500. */
  private failures: { count: number; verb?: RecordedCall['verb'] } = { count: 0 };

  constructor(
    readonly store: ObjectStore,
    private readonly clock: FakeClock,
  ) {}

  static create(clock: FakeClock): StoreClient {
    return new StoreClient(
      new ObjectStore({
        clock,
        bookmarkIntervalMs: 60_000,
        historyLimit: 1000,
        rootCaPem: '',
        backfillPodQosClass: true,
      }),
      clock,
    );
  }

  failNext(count: number, verb?: RecordedCall['verb']): void {
    this.failures = { count, ...(verb ? { verb } : {}) };
  }

  callsOf(verb: RecordedCall['verb'], resource?: string): RecordedCall[] {
    return this.calls.filter((c) => c.verb === verb && (resource === undefined || c.resource === resource));
  }

  private run<T>(
    call: Omit<RecordedCall, 'atMs'>,
    options: CallOptions,
    fn: () => StoredObject,
  ): Promise<ApiResult<T>> {
    this.calls.push({
      ...call,
      atMs: this.clock.now(),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    if (options.timeoutMs === undefined)
      return Promise.reject(new Error(`${call.verb} ${call.resource} without a deadline`));
    if (this.down) {
      return Promise.reject(
        new KubeApiError(`${call.verb} ${call.resource}: connect ECONNREFUSED`, {
          httpStatus: 0,
          reason: 'Transport',
        }),
      );
    }
    if (this.failures.count > 0 && (this.failures.verb === undefined || this.failures.verb === call.verb)) {
      this.failures.count--;
      return Promise.reject(
        new KubeApiError(`${call.verb} ${call.resource}: injected failure`, {
          httpStatus: 500,
          reason: 'InternalError',
        }),
      );
    }
    try {
      return Promise.resolve({ ok: true, object: structuredClone(fn()) as T });
    } catch (err) {
      if (!(err instanceof ApiError)) return Promise.reject(err);
      const status = err.status as unknown as Status;
      const expected = expectedFailure(err.status.code ?? 0, status);
      if (expected) return Promise.resolve({ ok: false, reason: expected, status });
      return Promise.reject(
        new KubeApiError(err.message, {
          httpStatus: err.status.code ?? 0,
          reason: err.status.reason ?? 'Unknown',
          status,
        }),
      );
    }
  }

  get<T extends KubeObject>(ref: ResourceRef, options: CallOptions = {}): Promise<ApiResult<T>> {
    return this.run<T>({ verb: 'get', resource: ref.resource, name: ref.name }, options, () =>
      this.store.get(ref.resource, ref.name ?? '', ref.namespace),
    );
  }

  create<T extends KubeObject>(
    ref: ResourceRef,
    object: T,
    options: CallOptions = {},
  ): Promise<ApiResult<T>> {
    return this.run<T>(
      { verb: 'create', resource: ref.resource, body: structuredClone(object) },
      options,
      () =>
        this.store.create(ref.resource, structuredClone(object) as unknown as StoredObject, ref.namespace),
    );
  }

  update<T extends KubeObject>(
    ref: ResourceRef,
    object: T,
    options: CallOptions = {},
  ): Promise<ApiResult<T>> {
    return this.run<T>(
      { verb: 'update', resource: ref.resource, name: ref.name, body: structuredClone(object) },
      options,
      () =>
        this.store.update(ref.resource, structuredClone(object) as unknown as StoredObject, {
          ...(ref.subresource === 'status' ? { subresource: 'status' as const } : {}),
        }),
    );
  }

  patch<T extends KubeObject>(
    ref: ResourceRef,
    type: PatchType,
    patch: unknown,
    options: CallOptions = {},
  ): Promise<ApiResult<T>> {
    return this.run<T>(
      {
        verb: 'patch',
        resource: ref.resource,
        name: ref.name,
        ...(ref.subresource ? { subresource: ref.subresource } : {}),
        body: structuredClone(patch),
      },
      options,
      () =>
        this.store.patch(ref.resource, ref.name ?? '', ref.namespace, type, structuredClone(patch) as Json, {
          ...(ref.subresource === 'status' ? { subresource: 'status' as const } : {}),
        }),
    );
  }
}
