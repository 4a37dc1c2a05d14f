/**
 * metav1.Status errors, built the way apimachinery's api/errors package builds them, so a client's
 * checks on reason, code and details (IsNotFound, IsConflict, IsResourceExpired, ...) see the same
 * values as against a real API server. Field order follows the Go struct order of the real output.
 */

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

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  /** Absent on a Success status: the real server leaves Code at zero there, and Go omits it. */
  code?: number;
}

/** A group and a resource (or a kind, where upstream passes one in its place). */
export interface GroupResource {
  group: string;
  resource: string;
}

/** "pods" for the core group, "leases.coordination.k8s.io" otherwise: schema.GroupResource.String(). */
export function qualifiedName(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

export class ApiError extends Error {
  readonly status: Status;

  constructor(
    status: Omit<Status, 'kind' | 'apiVersion' | 'metadata' | 'status' | 'code'> & { code: number },
  ) {
    super(status.message ?? status.reason ?? `HTTP ${status.code}`);
    this.name = 'ApiError';
    this.status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      ...(status.message !== undefined ? { message: status.message } : {}),
      ...(status.reason !== undefined ? { reason: status.reason } : {}),
      ...(status.details !== undefined ? { details: status.details } : {}),
      code: status.code,
    };
  }

  get code(): number {
    return this.status.code ?? 500;
  }

  get reason(): string | undefined {
    return this.status.reason;
  }
}

function details(gr: GroupResource, name: string): StatusDetails {
  // Go drops empty strings (omitempty), so a core resource has no "group" key at all.
  return { ...(name ? { name } : {}), ...(gr.group ? { group: gr.group } : {}), kind: gr.resource };
}

export function notFound(gr: GroupResource, name: string): ApiError {
  return new ApiError({
    message: `${qualifiedName(gr)} "${name}" not found`,
    reason: 'NotFound',
    details: details(gr, name),
    code: 404,
  });
}

export function alreadyExists(gr: GroupResource, name: string): ApiError {
  return new ApiError({
    message: `${qualifiedName(gr)} "${name}" already exists`,
    reason: 'AlreadyExists',
    details: details(gr, name),
    code: 409,
  });
}

export function conflict(gr: GroupResource, name: string, why: string): ApiError {
  return new ApiError({
    message: `Operation cannot be fulfilled on ${qualifiedName(gr)} "${name}": ${why}`,
    reason: 'Conflict',
    details: details(gr, name),
    code: 409,
  });
}

/** storage.OptimisticLockErrorMsg: the text of every stale-resourceVersion 409. */
export const OPTIMISTIC_LOCK_MESSAGE =
  'the object has been modified; please apply your changes to the latest version and try again';

export interface FieldError {
  type:
    | 'FieldValueInvalid'
    | 'FieldValueRequired'
    | 'FieldValueForbidden'
    | 'FieldValueNotSupported'
    | 'FieldValueNotFound'
    | 'FieldValueDuplicate';
  field: string;
  /** What follows the field in the message, e.g. `Invalid value: "x": field is immutable`. */
  body: string;
}

/** errors.NewInvalid: 422 with one cause per field error; the kind is a Kind, qualified by group. */
export function invalid(kind: { group: string; kind: string }, name: string, errs: FieldError[]): ApiError {
  const qualified = kind.group ? `${kind.kind}.${kind.group}` : kind.kind;
  const joined = errs.map((e) => `${e.field}: ${e.body}`);
  // utilerrors.NewAggregate prints one error bare and several as "[a, b]".
  const aggregate = joined.length === 1 ? joined[0] : `[${joined.join(', ')}]`;
  return new ApiError({
    message: `${qualified} "${name}" is invalid: ${aggregate}`,
    reason: 'Invalid',
    details: {
      ...(name ? { name } : {}),
      ...(kind.group ? { group: kind.group } : {}),
      kind: kind.kind,
      causes: errs.map((e) => ({ reason: e.type, message: e.body, field: e.field })),
    },
    code: 422,
  });
}

export function badRequest(message: string): ApiError {
  return new ApiError({ message, reason: 'BadRequest', code: 400 });
}

export function unauthorized(): ApiError {
  return new ApiError({ message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
}

export function forbidden(gr: GroupResource | undefined, name: string, why: string): ApiError {
  let message: string;
  if (!gr || (!gr.group && !gr.resource)) message = `forbidden: ${why}`;
  else if (!name) message = `${qualifiedName(gr)} is forbidden: ${why}`;
  else message = `${qualifiedName(gr)} "${name}" is forbidden: ${why}`;
  return new ApiError({
    message,
    reason: 'Forbidden',
    details: gr ? details(gr, name) : {},
    code: 403,
  });
}

export function resourceExpired(message: string): ApiError {
  return new ApiError({ message, reason: 'Expired', code: 410 });
}

export function methodNotSupported(gr: GroupResource, action: string): ApiError {
  return new ApiError({
    message: `${action} is not supported on resources of kind "${qualifiedName(gr)}"`,
    reason: 'MethodNotAllowed',
    details: details(gr, ''),
    code: 405,
  });
}

/** What a generic 404 looks like for a path the server has no handler for under /api or /apis. */
export function pathNotFound(): ApiError {
  return new ApiError({
    message: 'the server could not find the requested resource',
    reason: 'NotFound',
    details: {},
    code: 404,
  });
}

/** errors.NewGenericServerResponse(422, ...): what a JSON patch that fails to apply gets. */
export function unprocessable(): ApiError {
  return new ApiError({
    message: 'the server rejected our request due to an error in our request',
    reason: 'Invalid',
    details: {},
    code: 422,
  });
}

export function unsupportedMediaType(message: string): ApiError {
  return new ApiError({ message, reason: 'UnsupportedMediaType', code: 415 });
}

export function internalError(err: unknown): ApiError {
  const text = err instanceof Error ? err.message : String(err);
  return new ApiError({
    message: `Internal error occurred: ${text}`,
    reason: 'InternalError',
    details: { causes: [{ message: text }] },
    code: 500,
  });
}

/** metav1.Status with status Success: what a delete of a resource without ReturnDeletedObject answers. */
export function successStatus(d: StatusDetails): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: d };
}
