/**
 * containerd's content store, narrowed to what pull progress needs: the ingests in progress
 * (`containerd.services.content.v1.Content/ListStatuses`, what `ctr content active` and `ctr pull`
 * read). A pull writes each blob it downloads (index, manifest, config, layers) as one ingest named
 * by a ref such as `layer-sha256:…`; the ingest's offset grows as bytes arrive, and the ingest is
 * gone once its blob is committed. The client is generated from ./proto (`npm run gen:cri`).
 */
import { grpcMethods } from '../../lib/grpc-definitions.js';
import { parseCriEndpoint } from '../cri-endpoint.js';
import { GrpcUnaryChannel } from '../grpc-unary-channel.js';
import { ContentDefinition, ListStatusesRequest, type Status } from './generated/content_statuses.js';

const CONTENT = grpcMethods(ContentDefinition);

/** The listing of a registry's worth of concurrent pulls is small; this bounds a broken answer. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

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
 * A client of one containerd socket and namespace, over the project's own gRPC channel (as the CRI
 * calls: no grpc-js); it dials at the first listing, so a kubelet that pulls nothing never does.
 */
export class ContentStatusClient {
  private readonly channel: GrpcUnaryChannel;

  /** socket: the runtime endpoint (`unix:///run/containerd/containerd.sock` or a path). */
  constructor(
    socket: string,
    private readonly namespace: string,
  ) {
    this.channel = new GrpcUnaryChannel(parseCriEndpoint(socket).socketPath, {
      maxReceiveMessageBytes: MAX_ANSWER_BYTES,
    });
  }

  /**
   * The ingests in progress in the namespace; rejects with the gRPC error (its `code` UNIMPLEMENTED
   * from a runtime that is not containerd), or with the signal's reason once it aborts.
   */
  async listStatuses(options: ListIngestStatusesOptions): Promise<IngestStatus[]> {
    const { signal } = options;
    if (signal?.aborted) throw signal.reason;
    const res = await this.channel
      .call(
        CONTENT.listStatuses,
        ListStatusesRequest.fromPartial({}),
        options.timeoutMs,
        signal,
        // containerd reads the namespace of a call from this header (its namespaces package).
        [['containerd-namespace', this.namespace]],
      )
      .catch((err: unknown) => {
        throw signal?.aborted ? signal.reason : err;
      });
    return res.statuses.map(toIngestStatus);
  }

  close(): void {
    this.channel.close();
  }
}
