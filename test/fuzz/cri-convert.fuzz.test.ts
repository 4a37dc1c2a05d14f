/**
 * Property-based fuzzing of the decoding of CRI answers: for every `*FromCri` function of
 * src/cri/convert.ts, messages decoded by the generated code from arbitrary bytes, and from arbitrary
 * objects encoded first (so every field may be set, deep and odd), convert without throwing. A bad
 * wire message may make the generated decoder fail (gRPC fails that call); what it decodes must not
 * break the conversion behind it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import * as convert from '../../src/cri/convert.js';
import * as generated from '../../src/cri/generated/runtime/v1/api.js';
import { fuzzRuns } from './fuzz-runs.js';

interface MessageFns {
  encode(m: unknown): { finish(): Uint8Array };
  decode(b: Uint8Array): unknown;
  fromPartial(o: unknown): unknown;
}

/** podSandboxFromCri reads a cri.PodSandbox, versionFromCri a cri.VersionResponse, and so on. */
function messageOf(decoder: string): MessageFns | undefined {
  const base = decoder.slice(0, -'FromCri'.length);
  const name = base === 'version' ? 'VersionResponse' : base[0]!.toUpperCase() + base.slice(1);
  const fns = (generated as Record<string, unknown>)[name];
  return fns && typeof (fns as MessageFns).decode === 'function' ? (fns as MessageFns) : undefined;
}

const decoders = Object.entries(convert as Record<string, unknown>)
  .filter(
    (e): e is [string, (m: unknown) => unknown] => e[0].endsWith('FromCri') && typeof e[1] === 'function',
  )
  .map(([name, fn]) => ({ name, fn, message: messageOf(name) }));

/** The field names CRI messages use, so that values land where the decoders look. */
const CRI_FIELDS = [
  'id', 'podSandboxId', 'metadata', 'name', 'uid', 'namespace', 'attempt', 'state', 'createdAt', 'startedAt',
  'finishedAt', 'exitCode', 'image', 'imageRef', 'imageId', 'reason', 'message', 'labels', 'annotations',
  'mounts', 'logPath', 'network', 'ip', 'additionalIps', 'linux', 'namespaces', 'options', 'resources',
  'status', 'conditions', 'type', 'stdout', 'stderr', 'cpu', 'memory', 'writableLayer', 'timestamp',
  'usageCoreNanoSeconds', 'workingSetBytes', 'value', 'usedBytes', 'inodesUsed', 'fsId', 'mountpoint',
  'attributes', 'repoTags', 'repoDigests', 'size', 'username', 'spec', 'pinned', 'version', 'runtimeName',
  'runtimeVersion', 'runtimeApiVersion', 'hostname', 'logDirectory', 'dnsConfig', 'portMappings',
  'securityContext', 'hostPath', 'containerPath', 'readonly', 'propagation', 'envs', 'command', 'args',
  'workingDir', 'devices', 'cpuShares', 'memoryLimitInBytes', 'hugepageLimits', 'unified', 'labelSelector',
  'containerPort', 'hostPort', 'protocol', 'hostIp', 'userImage', 'network', 'pid', 'ipc', 'targetId',
]; // prettier-ignore

const leaf = fc.oneof(
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 10 }),
  fc.constantFrom(0, -1, 7, 2 ** 53, 'CONTAINER_RUNNING', 'SANDBOX_READY', 'UNRECOGNIZED', 'POD', 'NODE'),
);
const { message } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('message'), fc.array(tie('value'), { maxLength: 3 })),
  message: fc.dictionary(fc.constantFrom(...CRI_FIELDS), tie('value'), { maxKeys: 8 }),
}));

/** Decodes, or undefined when the generated code refuses the input (gRPC would fail the call). */
function tryDecode(fns: MessageFns, make: () => Uint8Array): unknown {
  try {
    return fns.decode(make());
  } catch {
    return undefined;
  }
}

test('every CRI decoder is found, with its generated message', () => {
  assert.ok(decoders.length >= 15, decoders.map((d) => d.name).join(', '));
  assert.deepEqual(
    decoders.filter((d) => !d.message).map((d) => d.name),
    [],
  );
});

for (const { name, fn, message: fns } of decoders) {
  if (!fns) continue;
  test(`${name} never throws on what the generated decoder makes of any answer`, () => {
    fc.assert(
      fc.property(fc.oneof(message, fc.uint8Array({ maxLength: 200 })), (input) => {
        const decoded =
          input instanceof Uint8Array
            ? tryDecode(fns, () => input)
            : tryDecode(fns, () => fns.encode(fns.fromPartial(input)).finish());
        if (decoded !== undefined) fn(decoded);
      }),
      { numRuns: fuzzRuns() },
    );
  });
}
