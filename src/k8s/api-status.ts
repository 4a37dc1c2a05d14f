/**
 * The API server's answers that are not the object asked for: metav1.Status, the outcomes a caller
 * expects and handles (not found, conflict, already exists, gone) as return values, and everything
 * else as a KubeApiError with the HTTP code and the Status reason.
 */
import { KubeletError } from '../lib/errors.js';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** metav1.Status as the server writes it. */
export interface Status {
  kind: 'Status';
  apiVersion?: string;
  metadata?: { resourceVersion?: string };
  status?: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code?: number;
}

/** The failures every caller of the API meets in normal operation, and handles. */
export type ExpectedFailure = 'NotFound' | 'Conflict' | 'AlreadyExists' | 'Gone';

export type ApiResult<T> = { ok: true; object: T } | { ok: false; reason: ExpectedFailure; status: Status };

/**
 * Why a call failed, when it was none of the expected outcomes:
 * a Status reason from the server (Forbidden, Invalid, InternalError, ServiceUnavailable, ...),
 * 'Transport' (no answer: refused, reset, TLS), 'DeadlineExceeded' (our own deadline), or 'Aborted'.
 */
export type FailureReason = string;

export class KubeApiError extends KubeletError {
  /** The HTTP code, or 0 when no response came. */
  readonly httpStatus: number;
  readonly reason: FailureReason;
  readonly status: Status | undefined;

  constructor(
    message: string,
    opts: { httpStatus: number; reason: FailureReason; status?: Status; cause?: unknown },
  ) {
    super('API_ERROR', message, opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.name = 'KubeApiError';
    this.httpStatus = opts.httpStatus;
    this.reason = opts.reason;
    this.status = opts.status;
  }

  /** Seconds the server asked to wait before trying again (429, 503, 504), if it said. */
  get retryAfterSeconds(): number | undefined {
    return this.status?.details?.retryAfterSeconds;
  }

  /** Worth retrying unchanged: no answer, our deadline, throttling, or a server-side failure. */
  get retriable(): boolean {
    return (
      this.httpStatus === 0 ||
      this.httpStatus === 429 ||
      this.httpStatus >= 500 ||
      this.reason === 'DeadlineExceeded'
    );
  }
}

export function isKubeApiError(err: unknown, reason?: FailureReason): err is KubeApiError {
  return err instanceof KubeApiError && (reason === undefined || err.reason === reason);
}

/** The Status a reply carries, or one made up from the HTTP code (as client-go's newUnstructuredResponseError). */
export function statusFrom(httpStatus: number, body: unknown, fallbackMessage: string): Status {
  if (typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'Status') {
    return body as Status;
  }
  return {
    kind: 'Status',
    status: 'Failure',
    code: httpStatus,
    reason: reasonForCode(httpStatus),
    message: fallbackMessage,
  };
}

/** apimachinery's reasonForCode: the reason a bare HTTP code stands for. */
export function reasonForCode(code: number): string {
  switch (code) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 405:
      return 'MethodNotAllowed';
    case 406:
      return 'NotAcceptable';
    case 409:
      return 'Conflict';
    case 410:
      return 'Gone';
    case 413:
      return 'RequestEntityTooLarge';
    case 415:
      return 'UnsupportedMediaType';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 500:
      return 'InternalError';
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'Timeout';
    default:
      return 'Unknown';
  }
}

/** Which expected outcome a failed reply is, if any (IsNotFound, IsConflict, IsAlreadyExists, IsGone/IsResourceExpired). */
export function expectedFailure(httpStatus: number, status: Status): ExpectedFailure | undefined {
  const code = status.code ?? httpStatus;
  if (status.reason === 'AlreadyExists') return 'AlreadyExists';
  if (status.reason === 'NotFound' || code === 404) return 'NotFound';
  if (status.reason === 'Expired' || status.reason === 'Gone' || code === 410) return 'Gone';
  if (status.reason === 'Conflict' || code === 409) return 'Conflict';
  return undefined;
}

/** The object of an ok result, or a KubeApiError for an expected failure (for callers that cannot handle it). */
export function mustSucceed<T>(result: ApiResult<T>, what: string): T {
  if (result.ok) return result.object;
  throw new KubeApiError(`${what}: ${result.status.message ?? result.reason}`, {
    httpStatus: result.status.code ?? 0,
    reason: result.reason,
    status: result.status,
  });
}
