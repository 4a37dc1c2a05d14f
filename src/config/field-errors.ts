/**
 * Field errors in the API server's words (k8s.io/apimachinery/pkg/util/validation/field), so a
 * refused manifest reads as `kubectl apply` would print it:
 * `spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0`.
 */

export interface FieldError {
  /** The field's path in upstream's form: `spec.containers[0].ports[1].containerPort`. */
  field: string;
  /** What the rule says, with the value when there is one. */
  detail: string;
}

export function fieldErrorText(e: FieldError): string {
  return `${e.field}: ${e.detail}`;
}

/** Go's %#v of a value, as field.Invalid prints it (strings quoted, others as JSON). */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  const json = JSON.stringify(value);
  // Long values (a 10 MB annotation) are cut so the one log line stays readable.
  return json === undefined ? String(value) : json.length > 200 ? `${json.slice(0, 200)}...` : json;
}

/** Collects the errors of one object; each helper reads as the upstream constructor of that name. */
export class FieldErrors {
  readonly list: FieldError[] = [];

  required(field: string, detail = ''): void {
    this.list.push({ field, detail: detail ? `Required value: ${detail}` : 'Required value' });
  }

  invalid(field: string, value: unknown, detail: string): void {
    this.list.push({ field, detail: `Invalid value: ${shown(value)}: ${detail}` });
  }

  notSupported(field: string, value: unknown, supported: readonly string[]): void {
    const allowed = supported.map((s) => JSON.stringify(s)).join(', ');
    this.list.push({ field, detail: `Unsupported value: ${shown(value)}: supported values: ${allowed}` });
  }

  duplicate(field: string, value: unknown): void {
    this.list.push({ field, detail: `Duplicate value: ${shown(value)}` });
  }

  notFound(field: string, value: unknown): void {
    this.list.push({ field, detail: `Not found: ${shown(value)}` });
  }

  forbidden(field: string, detail: string): void {
    this.list.push({ field, detail: `Forbidden: ${detail}` });
  }

  tooLong(field: string, maxLength: number): void {
    this.list.push({ field, detail: `Too long: must have at most ${maxLength} bytes` });
  }

  tooMany(field: string, actual: number, max: number): void {
    this.list.push({ field, detail: `Too many: ${actual}: must have at most ${max} items` });
  }

  /** A value of the wrong JSON type: what Go's decoder refuses before validation runs. */
  wrongType(field: string, value: unknown, expected: string): void {
    this.list.push({ field, detail: `Invalid type: expected ${expected}, got ${jsonTypeOf(value)}` });
  }
}

export function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (typeof v === 'object') return 'object';
  return typeof v;
}
