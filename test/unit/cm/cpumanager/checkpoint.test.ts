import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import {
  checkpointChecksum,
  marshalCheckpoint,
  readCPUManagerCheckpoint,
  spewOf,
  unmarshalCheckpoint,
  writeCPUManagerCheckpoint,
} from '../../../../src/cm/cpumanager/checkpoint.js';
import { fnv32a } from '../../../../src/lib/fnv32a.js';

test("the checksum hashes go-spew's %#v of the checkpoint, as upstream's dump.ForHash prints it", () => {
  const cp = { policyName: 'static', defaultCpuSet: '0-1', entries: { uid1: { c1: '2-3' } } };
  const spew =
    '(*state.CPUManagerCheckpoint){PolicyName:(string)static DefaultCPUSet:(string)0-1 ' +
    'Entries:(map[string]map[string]string)map[uid1:map[c1:2-3]] Checksum:(checksum.Checksum)0}';
  assert.equal(spewOf(cp), spew);
  assert.equal(checkpointChecksum(cp), fnv32a(Buffer.from(spew)));
  assert.equal(
    spewOf({ policyName: 'none', defaultCpuSet: '', entries: {} }),
    '(*state.CPUManagerCheckpoint){PolicyName:(string)none DefaultCPUSet:(string) Entries:(map[string]map[string]string)map[] Checksum:(checksum.Checksum)0}',
  );
  // Keys sorted by bytes at both levels, entries separated by spaces.
  assert.equal(
    spewOf({ policyName: 'static', defaultCpuSet: '0', entries: { b: { y: '3', x: '2' }, a: { z: '1' } } }),
    '(*state.CPUManagerCheckpoint){PolicyName:(string)static DefaultCPUSet:(string)0 Entries:(map[string]map[string]string)map[a:map[z:1] b:map[x:2 y:3]] Checksum:(checksum.Checksum)0}',
  );
});

test("the file is written in upstream's JSON shape and read back byte for byte", async () => {
  const cp = { policyName: 'static', defaultCpuSet: '0,3', entries: { 'uid-2': { b: '2', a: '1' } } };
  const sum = checkpointChecksum(cp);
  const text = `{"policyName":"static","defaultCpuSet":"0,3","entries":{"uid-2":{"a":"1","b":"2"}},"checksum":${sum}}`;
  assert.equal(marshalCheckpoint(cp), text);
  assert.deepEqual(unmarshalCheckpoint(text), { ...cp, entries: { 'uid-2': { a: '1', b: '2' } } });
  // No entries: the key is left out (omitempty).
  const empty = { policyName: 'none', defaultCpuSet: '', entries: {} };
  assert.equal(
    marshalCheckpoint(empty),
    `{"policyName":"none","defaultCpuSet":"","checksum":${checkpointChecksum(empty)}}`,
  );
  const dir = await mkdtemp(path.join(tmpdir(), 'cpu-ckpt-'));
  try {
    assert.equal(await readCPUManagerCheckpoint(dir), undefined);
    await writeFile(path.join(dir, 'cpu_manager_state'), text);
    const read = await readCPUManagerCheckpoint(dir);
    assert.ok(read);
    await writeCPUManagerCheckpoint(dir, read);
    assert.equal(await readFile(path.join(dir, 'cpu_manager_state'), 'utf8'), text);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// Written by the upstream kubelet v1.28.7 (cpuManagerPolicy static, reservedSystemCPUs "0", 2 CPUs):
// at start, and with a Guaranteed static pod of cpu 1 running.
const UPSTREAM_FILES = [
  '{"policyName":"static","defaultCpuSet":"0-1","checksum":1636926438}',
  '{"policyName":"static","defaultCpuSet":"0","entries":{"a8958713f95087a40e7afcfe6e788db6":{"main":"1"}},"checksum":2133429941}',
];

test('files the upstream kubelet wrote are read, and written again byte for byte', () => {
  for (const text of UPSTREAM_FILES) assert.equal(marshalCheckpoint(unmarshalCheckpoint(text)), text);
  assert.deepEqual(unmarshalCheckpoint(UPSTREAM_FILES[1] as string).entries, {
    a8958713f95087a40e7afcfe6e788db6: { main: '1' },
  });
});

test('a tampered file is refused; a zero checksum is accepted as upstream does', () => {
  const cp = { policyName: 'static', defaultCpuSet: '0-1', entries: {} };
  const text = marshalCheckpoint(cp);
  assert.throws(() => unmarshalCheckpoint(text.replace('0-1', '0-2')), /checkpoint is corrupted/);
  assert.throws(() => unmarshalCheckpoint('{'), /not JSON/);
  assert.throws(() => unmarshalCheckpoint('{"entries":{"u":"1"}}'), /entries\[u\] is not an object/);
  assert.deepEqual(unmarshalCheckpoint('{"policyName":"static","defaultCpuSet":"0-1","checksum":0}'), cp);
});

// upstream's state_checkpoint_test.go (TestCheckpointStateRestore): its files, keys in another case
// ("defaultCPUSet", read case-insensitively as Go's encoding/json does) and checksums included.
test("upstream's checkpoint test files for the none policy are read, their checksums agree", () => {
  assert.deepEqual(
    unmarshalCheckpoint(
      '{"policyName": "none", "defaultCPUSet": "4-6", "entries": {}, "checksum": 354655845}',
    ),
    { policyName: 'none', defaultCpuSet: '4-6', entries: {} },
  );
  assert.deepEqual(
    unmarshalCheckpoint(
      '{"policyName": "none", "defaultCPUSet": "1-3", "entries": {"pod": {"container1": "4-6", "container2": "1-3"}}, "checksum": 3610638499}',
    ),
    { policyName: 'none', defaultCpuSet: '1-3', entries: { pod: { container1: '4-6', container2: '1-3' } } },
  );
  assert.equal(
    unmarshalCheckpoint(
      '{"policyName": "other", "defaultCPUSet": "1-3", "entries": {}, "checksum": 1394507217}',
    ).policyName,
    'other',
  );
  assert.throws(
    () =>
      unmarshalCheckpoint('{"policyName": "none", "defaultCPUSet": "4-6", "entries": {}, "checksum": 1337}'),
    /checkpoint is corrupted/,
  );
});
