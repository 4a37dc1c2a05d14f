/**
 * containerd's content store, narrowed to what pull progress needs: the ingests in progress
 * (`containerd.services.content.v1.Content/ListStatuses`, what `ctr content active` and `ctr pull`
 * read). A pull writes each blob it downloads (index, manifest, config, layers) as one ingest named
 * by a ref such as `layer-sha256:…`; the ingest's offset grows as bytes arrive, and the ingest is
 * gone once its blob is committed. The client is generated from ./proto (`npm run gen:cri`).
 */
import * as grpc from '@grpc/grpc-js';
import { parseCriEndpoint } from '../cri-endpoint.js';
import { ContentClient, ListStatusesRequest, type Status } from './generated/content_statuses.js';

/** One download in progress in the content store. */
export interface IngestStatus {
  /** The ingest's name, e.g. `layer-sha256:<hex>` (containerd's remotes.MakeRefKey). */
  ref: string;
  /** Bytes written so far. */
  offset: number;
  /** The blob's size when known, else 0. */
  total: number;
  /** The digest the blob will have (`sha256:…`), '' when unknown. */
  expected: string;
  startedAtMs: number;
  updatedAtMs: number;
}

export interface ListIngestStatusesOptions {
  timeoutMs: number;
  signal?: AbortSignal;
}

function toIngestStatus(s: Status): IngestStatus {
  return {
    ref: s.ref,
    offset: s.offset,
    total: s.total,
    expected: s.expected,
    startedAtMs: s.startedAt?.getTime() ?? 0,
    updatedAtMs: s.updatedAt?.getTime() ?? 0,
  };
}

/** A client of one containerd socket and namespace; close() releases its channel. */
export class ContentStatusClient {
  private readonly client: ContentClient;

  /** socket: the runtime endpoint (`unix:///run/containerd/containerd.sock` or a path). */
  constructor(
    socket: string,
    private readonly namespace: string,
  ) {
    this.client = new ContentClient(parseCriEndpoint(socket).grpcTarget, grpc.credentials.createInsecure());
  }

  /** The ingests in progress in the namespace; rejects with the gRPC error (UNIMPLEMENTED from a runtime that is not containerd). */
  listStatuses(options: ListIngestStatusesOptions): Promise<IngestStatus[]> {
    const metadata = new grpc.Metadata();
    // containerd reads the namespace of a call from this header (its namespaces package).
    metadata.set('containerd-namespace', this.namespace);
    return new Promise((resolve, reject) => {
      if (options.signal?.aborted) return reject(options.signal.reason);
      const call = this.client.listStatuses(
        ListStatusesRequest.fromPartial({}),
        metadata,
        { deadline: Date.now() + options.timeoutMs },
        (err, res) => {
          options.signal?.removeEventListener('abort', onAbort);
          if (err) reject(err);
          else resolve(res.statuses.map(toIngestStatus));
        },
      );
      const onAbort = (): void => call.cancel();
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): void {
    this.client.close();
  }
}
