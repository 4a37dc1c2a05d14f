/**
 * containerd's content store, narrowed to what pull progress needs: the ingests in progress
 * (`containerd.services.content.v1.Content/ListStatuses`, what `ctr content active` and `ctr pull`
 * read). A pull writes each blob it downloads (index, manifest, config, layers) as one ingest named
 * by a ref such as `layer-sha256:…`; the ingest's offset grows as bytes arrive, and the ingest is
 * gone once its blob is committed. The client is generated from ./proto (`npm run gen:cri`).
 */
import type * as grpc from '@grpc/grpc-js';
import { grpcJsUnary, grpcMethods, loadGrpcJs } from '../../lib/grpc-definitions.js';
import { parseCriEndpoint } from '../cri-endpoint.js';
import { ContentDefinition, ListStatusesRequest, type Status } from './generated/content_statuses.js';

const CONTENT = grpcMethods(ContentDefinition);

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

/**
 * A client of one containerd socket and namespace; close() releases its channel. grpc-js is loaded
 * and the channel made at the first listing: a kubelet that pulls nothing never pays for them.
 */
export class ContentStatusClient {
  private client: Promise<{ grpcJs: typeof grpc; client: grpc.Client }> | undefined;
  private closed = false;

  /** socket: the runtime endpoint (`unix:///run/containerd/containerd.sock` or a path). */
  constructor(
    private readonly socket: string,
    private readonly namespace: string,
  ) {}

  private connect(): Promise<{ grpcJs: typeof grpc; client: grpc.Client }> {
    this.client ??= loadGrpcJs().then((grpcJs) => ({
      grpcJs,
      client: new grpcJs.Client(
        parseCriEndpoint(this.socket).grpcTarget,
        grpcJs.credentials.createInsecure(),
      ),
    }));
    return this.client;
  }

  /** The ingests in progress in the namespace; rejects with the gRPC error (UNIMPLEMENTED from a runtime that is not containerd). */
  async listStatuses(options: ListIngestStatusesOptions): Promise<IngestStatus[]> {
    if (options.signal?.aborted) throw options.signal.reason;
    if (this.closed) throw new Error('the content store client is closed');
    const { grpcJs, client } = await this.connect();
    const metadata = new grpcJs.Metadata();
    // containerd reads the namespace of a call from this header (its namespaces package).
    metadata.set('containerd-namespace', this.namespace);
    const res = await grpcJsUnary(
      client,
      CONTENT.listStatuses,
      ListStatusesRequest.fromPartial({}),
      metadata,
      { deadline: Date.now() + options.timeoutMs },
      options.signal,
    );
    return res.statuses.map(toIngestStatus);
  }

  close(): void {
    this.closed = true;
    void this.client?.then(({ client }) => client.close());
  }
}
