/**
 * The step a protobuf API client needs on top of a protobuf library: turning the messages that
 * ts-proto decodes from Kubernetes' generated.proto into the JSON-shaped objects the kubelet works on
 * (and back for what it sends). Written for bench/api-content-type.ts, to price that step honestly:
 * each message type gets a converter compiled from the proto descriptors (`buf build -o x.json`) into
 * straight-line JavaScript, as generated code would be, so the figure is the conversion's floor and
 * not the cost of a generic walker.
 *
 * What JSON and protobuf spell differently for the same Go value:
 * - metav1.Time is `{seconds, nanos}` on the wire and RFC 3339 to the second in JSON; MicroTime the
 *   same to the microsecond; a zero Time is written as an empty message and as `null`;
 * - resource.Quantity is a message with one string; intstr.IntOrString a message with a type tag;
 * - FieldsV1 (managedFields) and RawExtension carry JSON as bytes; `bytes` fields are base64 in JSON;
 * - an embedded Go struct (`json:",inline"`: a Volume's VolumeSource, a Probe's handler) is a field of
 *   its own in protobuf and its fields are the parent's in JSON;
 * - Go's `omitempty` is not in the .proto files, and gogo writes every non-pointer field even when
 *   empty: the decoder here drops empty strings, lists and maps (most are omitempty) and keeps zero
 *   numbers and false (many are not). A client for real would need a table of Go's tags besides.
 */

interface FieldDescriptor {
  name: string;
  number: number;
  label?: string;
  type: string;
  typeName?: string;
}

interface MessageDescriptor {
  name: string;
  field?: FieldDescriptor[];
  nestedType?: MessageDescriptor[];
  options?: { mapEntry?: boolean };
}

/** buf build's JSON FileDescriptorSet, the parts read here. */
export interface FileDescriptorSetJson {
  file: { package: string; messageType?: MessageDescriptor[] }[];
}

export type Converter = (message: unknown) => unknown;

export interface Converters {
  /** Protobuf message (as ts-proto decodes it) to the JSON shape, by full name: `k8s.io.api.core.v1.Pod`. */
  toJsonShape(fullName: string): Converter;
  /** JSON shape to the message ts-proto encodes. */
  fromJsonShape(fullName: string): Converter;
}

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
/** Types with a JSON spelling of their own, and the helper (below) that converts each. */
const SPECIAL: Record<string, { to: string; from: string }> = {
  [`${META}.Time`]: { to: 'h.timeToJson', from: 'h.timeFromJson' },
  [`${META}.MicroTime`]: { to: 'h.microTimeToJson', from: 'h.microTimeFromJson' },
  [`${META}.Duration`]: { to: 'h.durationToJson', from: 'h.durationFromJson' },
  [`${META}.FieldsV1`]: { to: 'h.fieldsV1ToJson', from: 'h.fieldsV1FromJson' },
  'k8s.io.apimachinery.pkg.runtime.RawExtension': { to: 'h.rawJsonToJson', from: 'h.rawExtensionFromJson' },
  'k8s.io.apimachinery.pkg.api.resource.Quantity': { to: 'h.quantityToJson', from: 'h.quantityFromJson' },
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': {
    to: 'h.intOrStringToJson',
    from: 'h.intOrStringFromJson',
  },
};

/**
 * The message fields Go embeds with `json:",inline"` (api/core/v1/types.go, v1.28): their JSON keys
 * are the parent's own.
 */
const INLINE_FIELDS = new Set([
  'volumeSource',
  'persistentVolumeSource',
  'localObjectReference',
  'handler',
  'ephemeralContainerCommon',
]);

/** RFC 3339 to the second, as Go's metav1.Time marshals: `2026-12-06T19:55:22Z`. */
function timeToJson(t: { seconds?: number; nanos?: number }): string | null {
  const seconds = t.seconds ?? 0;
  if (seconds === 0 && (t.nanos ?? 0) === 0) return null;
  return new Date(seconds * 1000).toISOString().slice(0, 19) + 'Z';
}

function timeFromJson(s: string | null): { seconds: number; nanos: number } {
  if (s === null) return { seconds: 0, nanos: 0 };
  return { seconds: Math.floor(Date.parse(s) / 1000), nanos: 0 };
}

/** RFC 3339 with six digits of fraction: `2026-12-06T19:56:11.123456Z`. */
function microTimeToJson(t: { seconds?: number; nanos?: number }): string | null {
  const seconds = t.seconds ?? 0;
  const nanos = t.nanos ?? 0;
  if (seconds === 0 && nanos === 0) return null;
  const micros = String(Math.floor(nanos / 1000)).padStart(6, '0');
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}.${micros}Z`;
}

function microTimeFromJson(s: string | null): { seconds: number; nanos: number } {
  if (s === null) return { seconds: 0, nanos: 0 };
  const dot = s.indexOf('.');
  const fraction = dot < 0 ? '' : s.slice(dot + 1, s.length - 1);
  return {
    seconds: Math.floor(Date.parse(dot < 0 ? s : `${s.slice(0, dot)}Z`) / 1000),
    nanos: Number(fraction.padEnd(9, '0').slice(0, 9)),
  };
}

/** Go's time.Duration.String() for whole seconds and below, enough for the few fields that use it. */
function durationToJson(d: { duration?: number }): string {
  const ns = d.duration ?? 0;
  if (ns === 0) return '0s';
  const s = ns / 1e9;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${rest}s`;
}

function durationFromJson(s: string): { duration: number } {
  let ns = 0;
  for (const [, n, unit] of s.matchAll(/([\d.]+)(h|ms|m|s|us|µs|ns)/g)) {
    const scale = { h: 3600e9, m: 60e9, s: 1e9, ms: 1e6, us: 1e3, µs: 1e3, ns: 1 }[unit!]!;
    ns += Number(n) * scale;
  }
  return { duration: Math.round(ns) };
}

function rawJsonToJson(r: { raw?: Uint8Array; Raw?: Uint8Array }): unknown {
  const bytes = r.raw ?? r.Raw;
  if (bytes === undefined || bytes.length === 0) return undefined;
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8'));
}

function fieldsV1Bytes(r: { Raw?: Uint8Array }): Uint8Array | undefined {
  return r.Raw;
}

function fieldsV1FromJson(v: unknown): { Raw: Uint8Array } {
  return { Raw: v instanceof Uint8Array ? v : Buffer.from(JSON.stringify(v)) };
}

function rawExtensionFromJson(v: unknown): { raw: Buffer } {
  return { raw: Buffer.from(JSON.stringify(v)) };
}

function quantityToJson(q: { string?: string }): string {
  return q.string ?? '0';
}

function quantityFromJson(s: string): { string: string } {
  return { string: s };
}

function intOrStringToJson(v: { type?: number; intVal?: number; strVal?: string }): number | string {
  return v.type === 1 ? (v.strVal ?? '') : (v.intVal ?? 0);
}

function intOrStringFromJson(v: number | string): { type: number; intVal?: number; strVal?: string } {
  return typeof v === 'string' ? { type: 1, strVal: v } : { type: 0, intVal: v };
}

function bytesToJson(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.length).toString('base64');
}

function bytesFromJson(s: string): Buffer {
  return Buffer.from(s, 'base64');
}

const helpers = {
  timeToJson,
  timeFromJson,
  microTimeToJson,
  microTimeFromJson,
  durationToJson,
  durationFromJson,
  rawJsonToJson,
  fieldsV1FromJson,
  rawExtensionFromJson,
  quantityToJson,
  quantityFromJson,
  intOrStringToJson,
  intOrStringFromJson,
  bytesToJson,
  bytesFromJson,
};

/** A JavaScript identifier for a message's full name. */
function ident(direction: 'to' | 'from', fullName: string): string {
  return `${direction}_${fullName.replace(/[^A-Za-z0-9]/g, '_')}`;
}

export interface ConverterOptions {
  /**
   * managedFields' FieldsV1 JSON: parsed (the JSON shape exactly), or left as its bytes, which a
   * protobuf client may do since the kubelet never reads managedFields (protobuf's best case).
   */
  fieldsV1: 'parse' | 'bytes';
}

/** Compiles a converter for every message of the descriptor set, in both directions. */
export function compileConverters(set: FileDescriptorSetJson, options: ConverterOptions): Converters {
  const messages = new Map<string, MessageDescriptor>();
  const visit = (prefix: string, m: MessageDescriptor) => {
    const full = `${prefix}.${m.name}`;
    messages.set(full, m);
    for (const n of m.nestedType ?? []) visit(full, n);
  };
  for (const file of set.file) for (const m of file.messageType ?? []) visit(file.package, m);

  const source: string[] = [];
  for (const [full, m] of messages) {
    if (m.options?.mapEntry || SPECIAL[full]) continue;
    source.push(toFunction(full, m, messages), fromFunction(full, m, messages));
  }
  const names = [...messages.keys()].filter((n) => !messages.get(n)!.options?.mapEntry && !SPECIAL[n]);
  const table = names.map((n) => `${JSON.stringify(n)}: [${ident('to', n)}, ${ident('from', n)}]`);
  const body = `${source.join('\n')}\nreturn {${table.join(',\n')}};`;
  const h = { ...helpers, fieldsV1ToJson: options.fieldsV1 === 'parse' ? rawJsonToJson : fieldsV1Bytes };
  const built = new Function('h', body)(h) as Record<string, [Converter, Converter]>;
  const pick = (name: string, i: 0 | 1): Converter => {
    const pair = built[name];
    if (!pair) throw new Error(`no message ${name} in the descriptors`);
    return pair[i];
  };
  return { toJsonShape: (n) => pick(n, 0), fromJsonShape: (n) => pick(n, 1) };
}

interface FieldPlan {
  prop: string;
  repeated: boolean;
  /** For a map field: its value's field. */
  mapValue?: FieldDescriptor;
  /** Embedded in Go: flattened into the parent in JSON. */
  inline: boolean;
  field: FieldDescriptor;
}

function plan(f: FieldDescriptor, messages: Map<string, MessageDescriptor>): FieldPlan {
  const target = f.typeName ? messages.get(f.typeName.slice(1)) : undefined;
  const mapValue = target?.options?.mapEntry ? target.field?.find((x) => x.number === 2) : undefined;
  return {
    prop: JSON.stringify(f.name),
    repeated: f.label === 'LABEL_REPEATED' && mapValue === undefined,
    inline: f.type === 'TYPE_MESSAGE' && f.label !== 'LABEL_REPEATED' && INLINE_FIELDS.has(f.name),
    ...(mapValue ? { mapValue } : {}),
    field: f,
  };
}

/** The expression converting one value v of field f to its JSON spelling. */
function toExpr(f: FieldDescriptor, v: string): string {
  if (f.type === 'TYPE_BYTES') return `h.bytesToJson(${v})`;
  if (f.type !== 'TYPE_MESSAGE') return v;
  const name = f.typeName!.slice(1);
  return SPECIAL[name] ? `${SPECIAL[name].to}(${v})` : `${ident('to', name)}(${v})`;
}

function fromExpr(f: FieldDescriptor, v: string): string {
  if (f.type === 'TYPE_BYTES') return `h.bytesFromJson(${v})`;
  if (f.type !== 'TYPE_MESSAGE') return v;
  const name = f.typeName!.slice(1);
  return SPECIAL[name] ? `${SPECIAL[name].from}(${v})` : `${ident('from', name)}(${v})`;
}

function toFunction(full: string, m: MessageDescriptor, messages: Map<string, MessageDescriptor>): string {
  const lines = [`function ${ident('to', full)}(m) {`, 'const o = {}; let v;'];
  for (const f of m.field ?? []) {
    const p = plan(f, messages);
    lines.push(`v = m[${p.prop}];`);
    if (p.inline) {
      lines.push(`if (v !== undefined) Object.assign(o, ${toExpr(f, 'v')});`);
    } else if (p.mapValue) {
      if (p.mapValue.type === 'TYPE_MESSAGE' || p.mapValue.type === 'TYPE_BYTES') {
        lines.push(
          `if (v !== undefined) { let r; for (const k in v) (r ??= {})[k] = ${toExpr(p.mapValue, 'v[k]')}; if (r !== undefined) o[${p.prop}] = r; }`,
        );
      } else {
        lines.push(`if (v !== undefined) for (const k in v) { o[${p.prop}] = v; break; }`);
      }
    } else if (p.repeated) {
      if (f.type === 'TYPE_MESSAGE' || f.type === 'TYPE_BYTES') {
        lines.push(
          `if (v !== undefined && v.length !== 0) { const a = new Array(v.length); for (let i = 0; i < v.length; i++) a[i] = ${toExpr(f, 'v[i]')}; o[${p.prop}] = a; }`,
        );
      } else {
        lines.push(`if (v !== undefined && v.length !== 0) o[${p.prop}] = v;`);
      }
    } else if (f.type === 'TYPE_STRING') {
      lines.push(`if (v !== undefined && v !== '') o[${p.prop}] = v;`);
    } else {
      lines.push(`if (v !== undefined) o[${p.prop}] = ${toExpr(f, 'v')};`);
    }
  }
  lines.push('return o;', '}');
  return lines.join('\n');
}

/** ts-proto's encoders iterate lists and maps without a check: absent ones become empty. */
function fromFunction(full: string, m: MessageDescriptor, messages: Map<string, MessageDescriptor>): string {
  const lines = [`function ${ident('from', full)}(o) {`, 'const m = {}; let v;'];
  for (const f of m.field ?? []) {
    const p = plan(f, messages);
    if (p.inline) {
      lines.push(`m[${p.prop}] = ${fromExpr(f, 'o')};`);
      continue;
    }
    lines.push(`v = o[${p.prop}];`);
    if (p.mapValue) {
      if (p.mapValue.type === 'TYPE_MESSAGE' || p.mapValue.type === 'TYPE_BYTES') {
        lines.push(
          `{ const r = {}; if (v != null) for (const k in v) r[k] = ${fromExpr(p.mapValue, 'v[k]')}; m[${p.prop}] = r; }`,
        );
      } else {
        lines.push(`m[${p.prop}] = v ?? {};`);
      }
    } else if (p.repeated) {
      if (f.type === 'TYPE_MESSAGE' || f.type === 'TYPE_BYTES') {
        lines.push(
          `if (v == null) m[${p.prop}] = []; else { const a = new Array(v.length); for (let i = 0; i < v.length; i++) a[i] = ${fromExpr(f, 'v[i]')}; m[${p.prop}] = a; }`,
        );
      } else {
        lines.push(`m[${p.prop}] = v ?? [];`);
      }
    } else {
      lines.push(`if (v !== undefined && v !== null) m[${p.prop}] = ${fromExpr(f, 'v')};`);
    }
  }
  lines.push('return m;', '}');
  return lines.join('\n');
}
