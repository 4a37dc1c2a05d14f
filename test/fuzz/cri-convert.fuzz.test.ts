/**
 * Property-based fuzzing of the decoding of CRI answers: arbitrary bytes (and mutated valid
 * answers) as the response of each method the kubelet reads, through the generated decoder and then
 * the facade's `*FromCri` conversion. The decoder may refuse the bytes (grpc-js then fails the call
 * with an error); whatever it accepts, the conversion turns into the project's types without
 * throwing, so a runtime that answers oddly cannot break the caller.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import * as convert from '../../src/cri/convert.js';
import * as cri from '../../src/cri/generated/runtime/v1/api.js';
import { grpcMethods } from '../../src/lib/grpc-definitions.js';
import { fuzzRuns } from './fuzz-runs.js';

const RS = grpcMethods(cri.RuntimeServiceDefinition);
const IS = grpcMethods(cri.ImageServiceDefinition);

/** Each response the facade reads, with what it does to it. */
const readers: [string, (bytes: Buffer) => unknown][] = [
  ['Version', (b) => convert.versionFromCri(RS.version.responseDeserialize(b))],
  ['ListPodSandbox', (b) => RS.listPodSandbox.responseDeserialize(b).items.map(convert.podSandboxFromCri)],
  ['PodSandboxStatus', (b) => optional(RS.podSandboxStatus.responseDeserialize(b).status, convert.podSandboxStatusFromCri)],
  ['ListContainers', (b) => RS.listContainers.responseDeserialize(b).containers.map(convert.containerFromCri)],
  ['ContainerStatus', (b) => optional(RS.containerStatus.responseDeserialize(b).status, convert.containerStatusFromCri)],
  ['ExecSync', (b) => convert.execSyncResponseFromCri(RS.execSync.responseDeserialize(b))],
  ['ContainerStats', (b) => optional(RS.containerStats.responseDeserialize(b).stats, convert.containerStatsFromCri)],
  ['ListContainerStats', (b) => RS.listContainerStats.responseDeserialize(b).stats.map(convert.containerStatsFromCri)],
  ['Status', (b) => convert.runtimeStatusFromCri(RS.status.responseDeserialize(b).status)],
  ['ListImages', (b) => IS.listImages.responseDeserialize(b).images.map(convert.imageFromCri)],
  ['ImageStatus', (b) => optional(IS.imageStatus.responseDeserialize(b).image, convert.imageFromCri)],
  ['ImageFsInfo', (b) => IS.imageFsInfo.responseDeserialize(b).imageFilesystems.map(convert.filesystemUsageFromCri)],
]; // prettier-ignore

function optional<M, T>(m: M | undefined, f: (m: M) => T): T | undefined {
  return m === undefined ? undefined : f(m);
}

/** A valid ListContainers answer to mutate: a decoder meets more plausible bytes this way. */
const validAnswer = RS.listContainers.responseSerialize(
  cri.ListContainersResponse.fromPartial({
    containers: [
      { id: 'c', podSandboxId: 's', state: 'CONTAINER_RUNNING', createdAt: 1n, labels: { a: 'b' }, metadata: { name: 'n' } },
    ],
  }),
); // prettier-ignore

const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  fc
    .array(fc.tuple(fc.nat(validAnswer.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 4 })
    .map((edits) => {
      const b = Buffer.from(validAnswer);
      for (const [at, v] of edits) b[at] = v;
      return b;
    }),
);

/** What the generated decoder throws for bytes that are not a message of its type. */
function isDecodeError(err: unknown): boolean {
  return err instanceof Error && /premature EOF|invalid wire type|cant skip|illegal tag|invalid|out of range|overflow|EOF/i.test(err.message);
} // prettier-ignore

test('every CRI answer the facade reads is fuzzed', () => {
  assert.equal(readers.length, 12);
});

for (const [name, read] of readers) {
  test(`${name}: any bytes are refused by the decoder or converted without throwing`, () => {
    fc.assert(
      fc.property(bytes, (b) => {
        try {
          read(b);
        } catch (err) {
          if (!isDecodeError(err)) throw err;
        }
      }),
      { numRuns: fuzzRuns() },
    );
  });
}
