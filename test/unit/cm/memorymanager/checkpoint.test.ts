import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import {
  checkpointChecksum,
  marshalCheckpoint,
  MEMORY_MANAGER_CHECKPOINT,
  readMemoryManagerCheckpoint,
  spewOf,
  unmarshalCheckpoint,
  writeMemoryManagerCheckpoint,
  type MemoryManagerCheckpoint,
} from '../../../../src/cm/memorymanager/checkpoint.js';
import { fnv32a } from '../../../../src/lib/fnv32a.js';

const GB = 1024 ** 3;

// Upstream's own test vector: state_checkpoint_test.go ("Restore valid checkpoint") in the v1.28.7
// source, whose checksum 4215593881 upstream's checksum.New computed; copied unchanged, whitespace and all.
const UPSTREAM_VALID = `{
				"policyName":"static",
				"machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
				"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
				"checksum": 4215593881
			}`;

test('reads upstream test vector: its checksum is what upstream computed', () => {
  const cp = unmarshalCheckpoint(UPSTREAM_VALID);
  assert.equal(cp.policyName, 'static');
  assert.deepEqual(cp.machineState?.get(0), {
    numberOfAssignments: 0,
    memoryMap: new Map([
      ['memory', { total: 2048, systemReserved: 512, allocatable: 1536, reserved: 512, free: 1024 }],
    ]),
    cells: [],
  });
  assert.deepEqual(cp.entries?.get('pod')?.get('container1'), [
    { numaAffinity: [0], type: 'memory', size: 512 },
  ]);
  assert.equal(checkpointChecksum(cp), 4215593881);
});

test("refuses upstream's corrupted vector and text that is not JSON", () => {
  const corrupt = UPSTREAM_VALID.replace('4215593881', '101010');
  assert.throws(() => unmarshalCheckpoint(corrupt), /checkpoint is corrupted/);
  assert.throws(() => unmarshalCheckpoint('{'), /not JSON/);
  // Upstream's memory manager has no old format whose 0 would be let through.
  assert.throws(
    () => unmarshalCheckpoint(UPSTREAM_VALID.replace('4215593881', '0')),
    /checkpoint is corrupted/,
  );
});

// A 2-node Static file written by hand from upstream's struct definitions (state/checkpoint.go,
// state/state.go: field order and JSON names, "entries" omitempty, map keys sorted as strings) with
// the checksum worked out from upstream's checksum code: FNV-32a over go-spew's %#v of the struct with
// Checksum 0, spew's text written out below by hand (ints sorted by value, `<*>` for pointers met as
// map values) and hashed here with fnv32a alone, not with the code under test.
const HAND_SPEW =
  '(*state.MemoryManagerCheckpoint){PolicyName:(string)Static MachineState:(state.NUMANodeMap)map[' +
  '0:<*>{NumberOfAssignments:(int)2 MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[' +
  'hugepages-2Mi:<*>{TotalMemSize:(uint64)1073741824 SystemReserved:(uint64)0 Allocatable:(uint64)1073741824 Reserved:(uint64)4194304 Free:(uint64)1069547520} ' +
  'memory:<*>{TotalMemSize:(uint64)8589934592 SystemReserved:(uint64)536870912 Allocatable:(uint64)6979321856 Reserved:(uint64)1073741824 Free:(uint64)5905580032}] ' +
  'Cells:([]int)[0]} ' +
  '1:<*>{NumberOfAssignments:(int)0 MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[' +
  'hugepages-2Mi:<*>{TotalMemSize:(uint64)0 SystemReserved:(uint64)0 Allocatable:(uint64)0 Reserved:(uint64)0 Free:(uint64)0} ' +
  'memory:<*>{TotalMemSize:(uint64)8589934592 SystemReserved:(uint64)536870912 Allocatable:(uint64)8053063680 Reserved:(uint64)0 Free:(uint64)8053063680}] ' +
  'Cells:([]int)[1]}] ' +
  'Entries:(state.ContainerMemoryAssignments)map[pod-a:map[app:[{NUMAAffinity:([]int)[0] Type:(v1.ResourceName)memory Size:(uint64)1073741824} ' +
  '{NUMAAffinity:([]int)[0] Type:(v1.ResourceName)hugepages-2Mi Size:(uint64)4194304}]]] Checksum:(checksum.Checksum)0}';
const HAND_CHECKSUM = fnv32a(Buffer.from(HAND_SPEW));
const HAND_FILE =
  '{"policyName":"Static","machineState":{' +
  '"0":{"numberOfAssignments":2,"memoryMap":{' +
  '"hugepages-2Mi":{"total":1073741824,"systemReserved":0,"allocatable":1073741824,"reserved":4194304,"free":1069547520},' +
  '"memory":{"total":8589934592,"systemReserved":536870912,"allocatable":6979321856,"reserved":1073741824,"free":5905580032}},' +
  '"cells":[0]},' +
  '"1":{"numberOfAssignments":0,"memoryMap":{' +
  '"hugepages-2Mi":{"total":0,"systemReserved":0,"allocatable":0,"reserved":0,"free":0},' +
  '"memory":{"total":8589934592,"systemReserved":536870912,"allocatable":8053063680,"reserved":0,"free":8053063680}},' +
  '"cells":[1]}},' +
  '"entries":{"pod-a":{"app":[{"numaAffinity":[0],"type":"memory","size":1073741824},' +
  '{"numaAffinity":[0],"type":"hugepages-2Mi","size":4194304}]}},' +
  `"checksum":${HAND_CHECKSUM}}`;

test('a hand-written 2-node file in upstream format is read and written again byte for byte', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'memmgr-cp-'));
  try {
    await writeFile(path.join(dir, MEMORY_MANAGER_CHECKPOINT), HAND_FILE);
    const cp = await readMemoryManagerCheckpoint(dir);
    assert.ok(cp);
    assert.equal(spewOf(cp), HAND_SPEW);
    assert.equal(cp.machineState?.get(0)?.memoryMap?.get('memory')?.free, 5905580032);
    assert.equal(cp.machineState?.get(1)?.cells?.[0], 1);
    await writeMemoryManagerCheckpoint(dir, cp);
    assert.equal(await readFile(path.join(dir, MEMORY_MANAGER_CHECKPOINT), 'utf8'), HAND_FILE);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("keys are sorted as encoding/json sorts them (strings), spew's as integers", () => {
  const node = (id: number) => ({
    numberOfAssignments: 0,
    memoryMap: new Map([
      ['memory', { total: GB, systemReserved: 0, allocatable: GB, reserved: 0, free: GB }],
    ]),
    cells: [id],
  });
  const cp: MemoryManagerCheckpoint = {
    policyName: 'Static',
    machineState: new Map([2, 10].map((id) => [id, node(id)])),
    entries: new Map(),
  };
  const text = marshalCheckpoint(cp);
  assert.ok(text.indexOf('"10":') < text.indexOf('"2":'), text);
  assert.ok(!text.includes('"entries"'), 'empty entries are left out (omitempty)');
  assert.ok(spewOf(cp).indexOf('2:<*>') < spewOf(cp).indexOf('10:<*>'));
  assert.deepEqual(unmarshalCheckpoint(text), cp);
});

test('null and empty are told apart, as Go tells nil from empty', () => {
  const base: MemoryManagerCheckpoint = { policyName: 'None', machineState: new Map(), entries: new Map() };
  const withNil = { ...base, entries: null };
  assert.notEqual(checkpointChecksum(base), checkpointChecksum(withNil));
  assert.equal(
    spewOf(base),
    '(*state.MemoryManagerCheckpoint){PolicyName:(string)None MachineState:(state.NUMANodeMap)map[] Entries:(state.ContainerMemoryAssignments)map[] Checksum:(checksum.Checksum)0}',
  );
  assert.deepEqual(unmarshalCheckpoint(marshalCheckpoint(base)), base);
});

test('refuses a file whose shape upstream could not use', () => {
  const bad = (o: object) => {
    const text = JSON.stringify(o);
    return () => unmarshalCheckpoint(text);
  };
  assert.throws(bad({ policyName: 'Static', machineState: { x: {} }, checksum: 1 }), /not a NUMA node ID/);
  assert.throws(bad({ policyName: 'Static', machineState: { 0: null }, checksum: 1 }), /not an object/);
  assert.throws(
    bad({ policyName: 'Static', machineState: { 0: { memoryMap: { memory: { free: -1 } } } }, checksum: 1 }),
    /non-negative integer/,
  );
  assert.throws(bad({ policyName: 'Static', entries: { p: { c: {} } }, checksum: 1 }), /list of blocks/);
});
