import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';

/** One RPC of runtime.v1 as the client and the test server need it: its path and its codecs. */
export interface CriMethod {
  readonly path: string;
  serializeRequest(value: object): Buffer;
  deserializeRequest(bytes: Buffer): Record<string, unknown>;
  serializeResponse(value: object): Buffer;
  deserializeResponse(bytes: Buffer): Record<string, unknown>;
}

export interface CriProto {
  /** Methods of runtime.v1.RuntimeService and runtime.v1.ImageService, keyed by their proto names (`Version`, `PullImage`, …). */
  readonly methods: ReadonlyMap<string, CriMethod>;
  readonly runtimeService: protoLoader.ServiceDefinition;
  readonly imageService: protoLoader.ServiceDefinition;
}

// Decoded messages use the proto's camelCase names, enum names as strings, int64 as numbers
// (nanosecond timestamps fit a double to within ~256 ns), bytes as Buffer, and every scalar,
// list and map filled with its default, so the converters see one shape whatever the runtime sent.
const LOAD_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  bytes: Buffer,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: true,
};

/**
 * Where api.proto lives: beside this file when run from source (tsx), and under the package root's
 * src/cri/proto when run from the compiled dist/src/cri, which has no copy of its own.
 */
export function criProtoPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const beside = join(here, 'proto', 'api.proto');
  if (existsSync(beside)) return beside;
  for (let dir = here; ;) {
    if (existsSync(join(dir, 'package.json'))) {
      const candidate = join(dir, 'src', 'cri', 'proto', 'api.proto');
      if (existsSync(candidate)) return candidate;
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`cannot find src/cri/proto/api.proto above ${here}`);
}

let loaded: CriProto | undefined;

/** Parses api.proto on first use (a synchronous read of a small file, once per process). */
export function loadCriProto(): CriProto {
  if (loaded) return loaded;
  const definition = protoLoader.loadSync(criProtoPath(), LOAD_OPTIONS);
  const runtimeService = serviceOf(definition, 'runtime.v1.RuntimeService');
  const imageService = serviceOf(definition, 'runtime.v1.ImageService');
  const methods = new Map<string, CriMethod>();
  for (const service of [runtimeService, imageService]) {
    for (const [name, m] of Object.entries(service)) {
      methods.set(name, {
        path: m.path,
        serializeRequest: m.requestSerialize as (v: object) => Buffer,
        deserializeRequest: m.requestDeserialize as (b: Buffer) => Record<string, unknown>,
        serializeResponse: m.responseSerialize as (v: object) => Buffer,
        deserializeResponse: m.responseDeserialize as (b: Buffer) => Record<string, unknown>,
      });
    }
  }
  loaded = { methods, runtimeService, imageService };
  return loaded;
}

function serviceOf(definition: protoLoader.PackageDefinition, name: string): protoLoader.ServiceDefinition {
  const service = definition[name];
  // Message and enum definitions carry a `format`; service definitions are plain method maps.
  if (!service || 'format' in service) {
    throw new Error(`api.proto does not define ${name}`);
  }
  return service as protoLoader.ServiceDefinition;
}

/** The method named in the proto, or an error naming it: a typo here is a programming error. */
export function criMethod(name: string): CriMethod {
  const m = loadCriProto().methods.get(name);
  if (!m) throw new Error(`api.proto has no method ${name}`);
  return m;
}
