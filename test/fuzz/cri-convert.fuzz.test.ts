/**
 * Property-based fuzzing of the decoding of CRI answers: every `*FromWire` function of src/cri/convert.ts,
 * fed arbitrary objects (and objects shaped like CRI messages with wrong types inside), returns a value
 * and never throws, so a runtime that answers oddly cannot break the caller.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import * as convert from '../../src/cri/convert.js';
import { fuzzRuns } from './fuzz-runs.js';

const decoders = Object.entries(convert as Record<string, unknown>).filter(
  (e): e is [string, (m: unknown) => unknown] => e[0].endsWith('FromWire') && typeof e[1] === 'function',
);

/** The field names CRI messages use, so that wrong values land where the decoders look. */
const CRI_FIELDS = [
  'id', 'podSandboxId', 'metadata', 'name', 'uid', 'namespace', 'attempt', 'state', 'createdAt', 'startedAt',
  'finishedAt', 'exitCode', 'image', 'imageRef', 'imageId', 'reason', 'message', 'labels', 'annotations',
  'mounts', 'logPath', 'network', 'ip', 'additionalIps', 'linux', 'namespaces', 'options', 'resources',
  'status', 'conditions', 'type', 'stdout', 'stderr', 'cpu', 'memory', 'writableLayer', 'timestamp',
  'usageCoreNanoSeconds', 'workingSetBytes', 'value', 'usedBytes', 'inodesUsed', 'fsId', 'mountpoint',
  'attributes', 'repoTags', 'repoDigests', 'size', 'uid', 'username', 'spec', 'pinned', 'version',
  'runtimeName', 'runtimeVersion', 'runtimeApiVersion', 'hostname', 'logDirectory', 'dnsConfig',
  'portMappings', 'securityContext', 'hostPath', 'containerPath', 'readonly', 'propagation', 'envs',
  'command', 'args', 'workingDir', 'devices', 'cpuShares', 'memoryLimitInBytes', 'hugepageLimits',
  'unified', 'labelSelector', 'containerPort', 'hostPort', 'protocol', 'hostIp', 'userImage',
]; // prettier-ignore

const leaf = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.bigInt(),
  fc.string({ maxLength: 10 }),
  fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a)),
  fc.constantFrom('CONTAINER_RUNNING', 'SANDBOX_READY', 'NaN', '-1', '1e400', 7, -1, Number.NaN, Infinity),
);
const { message } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('message'), fc.array(tie('value'), { maxLength: 3 })),
  message: fc.dictionary(fc.constantFrom(...CRI_FIELDS), tie('value'), { maxKeys: 8 }),
}));
/** Decoders take a decoded message (an object); anything may be inside it. */
const wire = fc.oneof(message, fc.object({ maxDepth: 3 }));

test('every CRI decoder is found', () => {
  assert.ok(decoders.length >= 15, decoders.map(([n]) => n).join(', '));
});

for (const [name, decode] of decoders) {
  test(`${name} never throws on what a runtime may send`, () => {
    fc.assert(
      fc.property(wire, (m) => {
        decode(m);
      }),
      { numRuns: fuzzRuns() },
    );
  });
}
