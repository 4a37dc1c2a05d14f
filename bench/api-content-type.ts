/**
 * JSON or protobuf to the API server (`contentType`, `--kube-api-content-type`): the CPU a
 * kubelet spends decoding what it receives most and encoding what it sends most, each way, per object.
 *
 * - JSON: the bytes to a string and JSON.parse; JSON.stringify and the string to bytes.
 * - protobuf: ts-proto's code (over @bufbuild/protobuf's wire reader and writer, as the CRI client
 *   uses) generated from upstream's generated.proto at run time into a temporary folder, plus what a
 *   client must do besides: the `k8s\0` + runtime.Unknown envelope, the watch stream's length-prefixed
 *   metav1.WatchEvent frames whose object is itself an envelope, and the conversion between the
 *   messages and the JSON-shaped objects the kubelet works on (bench/api-content-type-convert.ts).
 *   "decode only" leaves the conversion out: no protobuf client can do less than that.
 *
 * The objects were recorded from a real kube-apiserver v1.28.7 (bench/fixtures/api-content-type: a
 * Deployment's pod bound and given a kubelet's status, its node after a kubelet's status patch, the
 * node's Lease and a kubelet Event, each fetched as JSON and as protobuf, and a protobuf pod watch);
 * the bench first checks that decoding the recorded protobuf gives the recorded JSON.
 *
 * Figures are CPU time (process.cpuUsage) per object, the median of BENCH_ROUNDS rounds of about
 * BENCH_ROUND_MS each after a warm-up, every case once in each round, so that a busy machine weighs
 * on all of them alike; pb/JSON is the median of the rounds' own ratios.
 *
 * Run: node --import tsx bench/api-content-type.ts  (or built: node dist/bench/api-content-type.js)
 * Env: KUBERNETES_SRC (a kubernetes git folder, bare or not; default the v1.28.7 mirror of the kit),
 *      BENCH_ROUNDS (default 161, quick 21), BENCH_ROUND_MS (default 5).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deepStrictEqual } from 'node:assert';
import { build } from 'esbuild';
import {
  compileConverters,
  type Converters,
  type FileDescriptorSetJson,
} from './api-content-type-convert.js';
import { emit, envNumber, median, quickMode, say } from './report.js';

const BENCH = 'api-content-type';
const here = dirname(fileURLToPath(import.meta.url));
/** Built, this file runs from dist/bench: the repository is two folders up either way. */
const repoRoot = resolve(here, here.includes(`${join('dist', 'bench')}`) ? '../..' : '..');
const fixtures = join(repoRoot, 'bench/fixtures/api-content-type');
const WARM_UP_MS = quickMode() ? 50 : 300;
const DEFAULT_KUBERNETES_SRC = '/work/.mirror/chengsir22+kubernetes-1.28.7/repo';

const PROTOS = [
  'k8s.io/api/core/v1/generated.proto',
  'k8s.io/api/coordination/v1/generated.proto',
  'k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto',
  'k8s.io/apimachinery/pkg/runtime/generated.proto',
  'k8s.io/apimachinery/pkg/runtime/schema/generated.proto',
  'k8s.io/apimachinery/pkg/util/intstr/generated.proto',
  'k8s.io/apimachinery/pkg/api/resource/generated.proto',
];

/** The prefix of every protobuf body the API server writes (runtime/serializer/protobuf). */
const K8S_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

interface Writer {
  finish(): Uint8Array;
}
interface MessageFns {
  encode(message: unknown): Writer;
  decode(bytes: Uint8Array): Record<string, unknown>;
}
interface Generated {
  Pod: MessageFns;
  Node: MessageFns;
  Event: MessageFns;
  Lease: MessageFns;
  WatchEvent: MessageFns;
  Unknown: MessageFns;
}

/** ts-proto's TypeScript for upstream's protos, bundled into one module, and the descriptors. */
async function generate(work: string): Promise<{ gen: Generated; descriptors: FileDescriptorSetJson }> {
  const src = process.env.KUBERNETES_SRC || DEFAULT_KUBERNETES_SRC;
  for (const p of PROTOS) {
    const text = execFileSync('git', ['-C', src, 'show', `HEAD:staging/src/${p}`], { encoding: 'utf8' });
    mkdirSync(join(work, 'proto', dirname(p)), { recursive: true });
    writeFileSync(join(work, 'proto', p), text);
  }
  const plugin = join(repoRoot, 'node_modules/.bin/protoc-gen-ts_proto');
  // The CRI client's options (scripts/gen-cri.sh), except numbers for int64 (no k8s int64 here
  // exceeds 2^53) and presence kept, since a JSON shape must tell an absent field from a zero one.
  const options = [
    'esModuleInterop=true',
    'env=node',
    'importSuffix=.js',
    'forceLong=number',
    'outputJsonMethods=false',
    'outputPartialMethods=false',
    'useDate=false',
    'noDefaultsForOptionals=true',
  ];
  const template = { version: 'v2', plugins: [{ local: plugin, out: 'gen', opt: options }] };
  writeFileSync(join(work, 'buf.gen.yaml'), JSON.stringify(template));
  const buf = join(repoRoot, 'node_modules/.bin/buf');
  execFileSync(buf, ['generate', 'proto', '--template', 'buf.gen.yaml'], { cwd: work, stdio: 'inherit' });
  execFileSync(buf, ['build', 'proto', '-o', 'descriptors.json'], { cwd: work, stdio: 'inherit' });
  const g = (p: string) => `./gen/${p.replace(/\.proto$/, '.ts')}`;
  writeFileSync(
    join(work, 'entry.ts'),
    [
      `export { Pod, Node, Event } from '${g(PROTOS[0]!)}';`,
      `export { Lease } from '${g(PROTOS[1]!)}';`,
      `export { WatchEvent } from '${g(PROTOS[2]!)}';`,
      `export { Unknown } from '${g(PROTOS[3]!)}';`,
    ].join('\n'),
  );
  await build({
    entryPoints: [join(work, 'entry.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile: join(work, 'k8s-proto.mjs'),
    nodePaths: [join(repoRoot, 'node_modules')],
    logLevel: 'warning',
  });
  const gen = (await import(pathToFileURL(join(work, 'k8s-proto.mjs')).href)) as Generated;
  const descriptors = JSON.parse(
    readFileSync(join(work, 'descriptors.json'), 'utf8'),
  ) as FileDescriptorSetJson;
  return { gen, descriptors };
}

/** One protobuf body: `k8s\0` and a runtime.Unknown holding the type and the object's bytes. */
function unwrap(gen: Generated, body: Uint8Array): Uint8Array {
  for (let i = 0; i < 4; i++) if (body[i] !== K8S_MAGIC[i]) throw new Error('not a k8s protobuf body');
  const unknown = gen.Unknown.decode(body.subarray(4));
  return unknown.raw as Uint8Array;
}

function wrap(gen: Generated, apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const unknown = gen.Unknown.encode({
    typeMeta: { apiVersion, kind },
    raw,
    contentEncoding: '',
    contentType: '',
  });
  return Buffer.concat([K8S_MAGIC, unknown.finish()]);
}

/** The first frame of a protobuf watch: a 4-byte big-endian length, then a metav1.WatchEvent. */
function firstWatchFrame(stream: Buffer): Buffer {
  return stream.subarray(0, 4 + stream.readUInt32BE(0));
}

/** Zero values and empty strings, lists and maps removed: what Go's omitempty may or may not drop. */
function normalize(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalize);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const n = normalize(x);
    if (n === '' || n === 0 || n === false || n === null || n === undefined) continue;
    if (typeof n === 'object' && Object.keys(n).length === 0) continue;
    out[k] = n;
  }
  return out;
}

/**
 * What carrying the generated code costs, in a fresh process: the bundle of the messages used here
 * (esbuild keeps only those), the time to import it and to decode a first pod and node, and the
 * heap it then holds.
 */
function moduleCost(work: string): void {
  const bundle = join(work, 'k8s-proto.mjs');
  const script = `
    import { readFileSync } from 'node:fs';
    globalThis.gc();
    const before = process.memoryUsage().heapUsed;
    const start = performance.now();
    const m = await import(${JSON.stringify(pathToFileURL(bundle).href)});
    for (const [fns, file] of [[m.Pod, 'pod.pb'], [m.Node, 'node.pb']]) {
      const body = readFileSync(${JSON.stringify(fixtures)} + '/' + file);
      fns.decode(m.Unknown.decode(body.subarray(4)).raw);
    }
    const ms = performance.now() - start;
    globalThis.gc();
    console.log(JSON.stringify({ ms, heapBytes: process.memoryUsage().heapUsed - before }));`;
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  const { ms, heapBytes } = JSON.parse(out) as { ms: number; heapBytes: number };
  const bundleBytes = statSync(bundle).size;
  say(
    `generated code: bundle ${(bundleBytes / 1024).toFixed(0)} KiB; import + first pod and node decode ` +
      `${ms.toFixed(0)} ms, heap +${(heapBytes / 2 ** 20).toFixed(2)} MiB`,
  );
  emit({ bench: BENCH, n: 0, metric: 'generated_bundle_kib', value: bundleBytes / 1024 });
  emit({ bench: BENCH, n: 0, metric: 'generated_first_use_ms', value: ms });
  emit({ bench: BENCH, n: 0, metric: 'generated_heap_mib', value: heapBytes / 2 ** 20 });
}

interface Case {
  name: string;
  run: () => unknown;
}

/** CPU µs per call of each case: rounds interleaved, each about roundMs long; the median round. */
function measure(cases: Case[], rounds: number, roundMs: number): Map<string, number[]> {
  const iterations = new Map<string, number>();
  let sink = 0;
  for (const c of cases) {
    // Warm up (the optimizing compiler gets to every path), then size a round.
    for (const ms of [WARM_UP_MS, roundMs]) {
      const start = performance.now();
      let n = 0;
      while (performance.now() - start < ms) {
        sink += c.run() === undefined ? 0 : 1;
        n++;
      }
      iterations.set(c.name, Math.max(10, n));
    }
  }
  const out = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      const n = iterations.get(c.name)!;
      const before = process.cpuUsage();
      for (let i = 0; i < n; i++) sink += c.run() === undefined ? 0 : 1;
      const used = process.cpuUsage(before);
      out.get(c.name)!.push((used.user + used.system) / n);
    }
  }
  if (sink < 0) say('unreachable');
  return out;
}

async function main(): Promise<void> {
  const rounds = envNumber('BENCH_ROUNDS', quickMode() ? 21 : 161);
  const roundMs = envNumber('BENCH_ROUND_MS', 5);
  const work = mkdtempSync(join(tmpdir(), 'tskubelet-bench-proto-'));
  try {
    const { gen, descriptors } = await generate(work);
    const conv: ConverterPair = {
      exact: compileConverters(descriptors, { fieldsV1: 'parse' }),
      fast: compileConverters(descriptors, { fieldsV1: 'bytes' }),
    };
    moduleCost(work);
    await run(gen, conv, rounds, roundMs);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** `exact` gives the JSON shape to the letter; `fast` leaves managedFields as bytes. */
interface ConverterPair {
  exact: Converters;
  fast: Converters;
}

interface ObjectKind {
  label: string;
  file: string;
  fns: MessageFns;
  apiVersion: string;
  kind: string;
  fullName: string;
}

async function run(gen: Generated, conv: ConverterPair, rounds: number, roundMs: number): Promise<void> {
  const core = 'k8s.io.api.core.v1';
  const kinds: ObjectKind[] = [
    { label: 'pod', file: 'pod', fns: gen.Pod, apiVersion: 'v1', kind: 'Pod', fullName: `${core}.Pod` },
    { label: 'node', file: 'node', fns: gen.Node, apiVersion: 'v1', kind: 'Node', fullName: `${core}.Node` },
    {
      label: 'lease',
      file: 'lease',
      fns: gen.Lease,
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      fullName: 'k8s.io.api.coordination.v1.Lease',
    },
    {
      label: 'event',
      file: 'event',
      fns: gen.Event,
      apiVersion: 'v1',
      kind: 'Event',
      fullName: `${core}.Event`,
    },
  ];
  const read = (f: string) => readFileSync(join(fixtures, f));
  const cases: Case[] = [];
  const sizes = new Map<string, { json: number; pb: number }>();

  for (const k of kinds) {
    const jsonBytes = read(`${k.file}.json`);
    const pbBytes = read(`${k.file}.pb`);
    const fromJson = conv.exact.fromJsonShape(k.fullName);
    const object = JSON.parse(jsonBytes.toString('utf8')) as Record<string, unknown>;
    const decoder = (c: Converters) => {
      const toJson = c.toJsonShape(k.fullName);
      return (body: Uint8Array) => {
        const shaped = toJson(k.fns.decode(unwrap(gen, body))) as Record<string, unknown>;
        return { apiVersion: k.apiVersion, kind: k.kind, ...shaped };
      };
    };
    const decodeExact = decoder(conv.exact);
    const decodeFast = decoder(conv.fast);
    deepStrictEqual(normalize(decodeExact(pbBytes)), normalize(object), `${k.label}: protobuf ≠ JSON`);
    const encodePb = (o: unknown) => wrap(gen, k.apiVersion, k.kind, k.fns.encode(fromJson(o)).finish());
    deepStrictEqual(normalize(decodeExact(encodePb(object))), normalize(object), `${k.label}: round trip`);
    sizes.set(k.label, { json: jsonBytes.length, pb: pbBytes.length });
    cases.push(
      { name: `${k.label} decode json`, run: () => JSON.parse(jsonBytes.toString('utf8')) },
      { name: `${k.label} decode protobuf`, run: () => decodeFast(pbBytes) },
      { name: `${k.label} decode protobuf, exact shape`, run: () => decodeExact(pbBytes) },
      { name: `${k.label} decode protobuf, no conversion`, run: () => k.fns.decode(unwrap(gen, pbBytes)) },
      { name: `${k.label} encode json`, run: () => Buffer.from(JSON.stringify(object)) },
      { name: `${k.label} encode protobuf`, run: () => encodePb(object) },
      { name: `${k.label} encode protobuf, no conversion`, run: () => encodePbNoConv(k, fromJson(object)) },
    );
  }
  cases.push(...watchCases(gen, conv, sizes));
  cases.push(...patchCases(sizes));

  const figures = measure(cases, rounds, roundMs);
  report(figures, sizes, rounds, roundMs);

  function encodePbNoConv(k: ObjectKind, message: unknown): Buffer {
    return wrap(gen, k.apiVersion, k.kind, k.fns.encode(message).finish());
  }
}

/** A pod's watch event as it arrives: one JSON line, or one length-prefixed protobuf frame. */
function watchCases(
  gen: Generated,
  conv: ConverterPair,
  sizes: Map<string, { json: number; pb: number }>,
): Case[] {
  const fromPod = conv.exact.fromJsonShape('k8s.io.api.core.v1.Pod');
  const pod = JSON.parse(readFileSync(join(fixtures, 'pod.json'), 'utf8')) as Record<string, unknown>;
  const frame = firstWatchFrame(readFileSync(join(fixtures, 'watch-pods.pb')));
  const frameDecoder = (c: Converters) => {
    const toPod = c.toJsonShape('k8s.io.api.core.v1.Pod');
    return (f: Buffer) => {
      const event = gen.WatchEvent.decode(f.subarray(4, 4 + f.readUInt32BE(0)));
      const raw = (event.object as { raw: Uint8Array }).raw;
      const object = toPod(gen.Pod.decode(unwrap(gen, raw))) as Record<string, unknown>;
      return { type: event.type as string, object: { apiVersion: 'v1', kind: 'Pod', ...object } };
    };
  };
  const decodeExact = frameDecoder(conv.exact);
  const decodeFast = frameDecoder(conv.fast);
  const recorded = decodeExact(frame);
  deepStrictEqual(normalize(recorded.object), normalize(pod), 'watch frame: protobuf ≠ JSON');
  const encodeFrame = (type: string, object: unknown) => {
    const raw = wrap(gen, 'v1', 'Pod', gen.Pod.encode(fromPod(object)).finish());
    const body = gen.WatchEvent.encode({ type, object: { raw } }).finish();
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32BE(body.length);
    return Buffer.concat([prefix, body]);
  };
  // The same pod as the brief's 3-5 KB one: without its managedFields (which the kubelet never reads).
  const { managedFields: _dropped, ...slimMeta } = pod.metadata as Record<string, unknown>;
  const slim = { ...pod, metadata: slimMeta };
  const variants: [string, Buffer, Buffer][] = [
    ['pod watch event', Buffer.from(`${JSON.stringify({ type: 'ADDED', object: pod })}\n`), frame],
    [
      'pod watch event, no managedFields',
      Buffer.from(`${JSON.stringify({ type: 'MODIFIED', object: slim })}\n`),
      encodeFrame('MODIFIED', slim),
    ],
  ];
  const cases: Case[] = [];
  // What protobuf's best case saves, open to JSON too: managedFields cut out of the text unparsed.
  const cutLabel = 'pod watch event, managedFields cut';
  const fullLine = variants[0]![1];
  deepStrictEqual(
    JSON.parse(withoutManagedFields(fullLine.toString('utf8'))),
    JSON.parse(JSON.stringify({ type: 'ADDED', object: slim })),
    cutLabel,
  );
  cases.push({
    name: `${cutLabel} decode json`,
    run: () => JSON.parse(withoutManagedFields(fullLine.toString('utf8'))),
  });
  for (const [label, line, pbFrame] of variants) {
    deepStrictEqual(normalize(decodeExact(pbFrame)), normalize(JSON.parse(line.toString('utf8'))), label);
    sizes.set(label, { json: line.length, pb: pbFrame.length });
    cases.push(
      { name: `${label} decode json`, run: () => JSON.parse(line.toString('utf8')) },
      { name: `${label} decode protobuf`, run: () => decodeFast(pbFrame) },
      { name: `${label} decode protobuf, exact shape`, run: () => decodeExact(pbFrame) },
      {
        name: `${label} decode protobuf, no conversion`,
        run: () => {
          const event = gen.WatchEvent.decode(pbFrame.subarray(4));
          return gen.Pod.decode(unwrap(gen, (event.object as { raw: Uint8Array }).raw));
        },
      },
    );
  }
  sizes.set(cutLabel, { json: fullLine.length, pb: NaN });
  return cases;
}

/**
 * The text of a watch line or object without its `"managedFields":[…]` member. Go writes the key
 * once, in metadata after labels and annotations; as a key it is the only place the text can be
 * followed by `[` (inside a string value its quotes would be escaped).
 */
function withoutManagedFields(text: string): string {
  const key = '"managedFields":[';
  const start = text.indexOf(key);
  if (start < 0) return text;
  let depth = 0;
  let inString = false;
  for (let i = start + key.length - 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) depth++;
    else if ((c === 0x5d || c === 0x7d) && --depth === 0) {
      // Drop the member and the comma on one side of it.
      const before = text.charCodeAt(start - 1) === 0x2c ? start - 1 : start;
      const after = before === start && text.charCodeAt(i + 1) === 0x2c ? i + 2 : i + 1;
      return text.slice(0, before) + text.slice(after);
    }
  }
  return text;
}

/** Status patches are JSON whatever contentType says (upstream sends them so too): one way only. */
function patchCases(sizes: Map<string, { json: number; pb: number }>): Case[] {
  const cases: Case[] = [];
  for (const [label, file] of [
    ['node status patch', 'nodestatus-patch.json'],
    ['pod status patch', 'podstatus-patch.json'],
  ] as const) {
    const text = readFileSync(join(fixtures, file));
    const patch = JSON.parse(text.toString('utf8')) as unknown;
    sizes.set(label, { json: text.length, pb: NaN });
    cases.push({ name: `${label} encode json`, run: () => Buffer.from(JSON.stringify(patch)) });
  }
  return cases;
}

function report(
  figures: Map<string, number[]>,
  sizes: Map<string, { json: number; pb: number }>,
  rounds: number,
  roundMs: number,
): void {
  const fmt = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '—' : v.toFixed(1));
  const med = (name: string) => {
    const v = figures.get(name);
    return v ? median(v) : undefined;
  };
  const ratio = (a: string, b: string) => {
    const x = figures.get(a);
    const y = figures.get(b);
    return x && y ? median(x.map((v, i) => v / y[i]!)) : undefined;
  };
  const rows: string[][] = [];
  for (const [label, size] of sizes) {
    for (const way of ['decode', 'encode'] as const) {
      const json = med(`${label} ${way} json`);
      if (json === undefined) continue;
      const pb = med(`${label} ${way} protobuf`);
      const pbOverJson = ratio(`${label} ${way} protobuf`, `${label} ${way} json`);
      const exact = med(`${label} ${way} protobuf, exact shape`);
      const bare = med(`${label} ${way} protobuf, no conversion`);
      rows.push([
        `${label} ${way}`,
        String(size.json),
        Number.isNaN(size.pb) ? '—' : String(size.pb),
        fmt(json),
        fmt(pb),
        fmt(exact),
        fmt(bare),
        pbOverJson === undefined ? '—' : `${pbOverJson.toFixed(2)}×`,
      ]);
    }
  }
  const header = ['object', 'JSON B', 'pb B', 'JSON µs', 'pb µs', 'pb exact µs', 'pb no-conv µs', 'pb/JSON'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  say(`CPU µs per object, median of ${rounds} rounds of ~${roundMs} ms (node ${process.version})`);
  say([line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n'));
  for (const [name, values] of figures) {
    emit({
      bench: BENCH,
      n: 0,
      metric: `${name.replace(/[ ,]+/g, '_')}_cpu_us`,
      value: median(values),
      min: Math.min(...values),
      max: Math.max(...values),
      rounds,
    });
  }
}

await main();
