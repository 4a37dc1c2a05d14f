import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkpointChecksum,
  CorruptCheckpointError,
  fnv32a,
  goQuote,
  goSyntaxOf,
  marshalCheckpoint,
  spewOf,
  unmarshalCheckpoint,
  type CheckpointData,
} from '../../../../src/cm/devicemanager/checkpoint.js';

const sample: CheckpointData = {
  PodDeviceEntries: [
    {
      PodUID: 'uid-1',
      ContainerName: 'main',
      ResourceName: 'example.com/dev',
      DeviceIDs: { '-1': ['dev-1'], '0': ['dev-0'] },
      AllocResp: new Uint8Array([10, 1]),
    },
  ],
  RegisteredDevices: { 'example.com/dev': ['dev-0', 'dev-1'], 'a.example/x': [] },
};

test('FNV-32a matches Go hash/fnv', () => {
  assert.equal(fnv32a(new Uint8Array()), 0x811c9dc5);
  assert.equal(fnv32a(Buffer.from('a')), 0xe40c292c);
  assert.equal(fnv32a(Buffer.from('foobar')), 0xbf9cf968);
});

test('goQuote escapes as strconv.Quote does', () => {
  assert.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
  assert.equal(goQuote('\n\t\x01\x7f'), '"\\n\\t\\x01\\x7f"');
  assert.equal(goQuote('é'), '"é"');
});

test("the text tskubelet checksummed before: Go's fmt %#v of checkpointData, map keys sorted", () => {
  assert.equal(
    goSyntaxOf(sample),
    'checkpoint.checkpointData{PodDeviceEntries:[]checkpoint.PodDevicesEntry{checkpoint.PodDevicesEntry{' +
      'PodUID:"uid-1", ContainerName:"main", ResourceName:"example.com/dev", ' +
      'DeviceIDs:checkpoint.DevicesPerNUMA{-1:[]string{"dev-1"}, 0:[]string{"dev-0"}}, AllocResp:[]uint8{0xa, 0x1}}}, ' +
      'RegisteredDevices:map[string][]string{"a.example/x":[]string{}, "example.com/dev":[]string{"dev-0", "dev-1"}}}',
  );
  assert.equal(
    goSyntaxOf({ PodDeviceEntries: null, RegisteredDevices: {} }),
    'checkpoint.checkpointData{PodDeviceEntries:[]checkpoint.PodDevicesEntry(nil), RegisteredDevices:map[string][]string{}}',
  );
});

test("the checksummed text is go-spew's %#v of checkpointData, as upstream's dump.ForHash", () => {
  assert.equal(
    spewOf(sample),
    '(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{PodUID:(string)uid-1 ' +
      'ContainerName:(string)main ResourceName:(string)example.com/dev ' +
      'DeviceIDs:(checkpoint.DevicesPerNUMA)map[-1:[dev-1] 0:[dev-0]] AllocResp:([]uint8)[10 1]}] ' +
      'RegisteredDevices:(map[string][]string)map[a.example/x:[] example.com/dev:[dev-0 dev-1]]}',
  );
  assert.equal(
    spewOf({ PodDeviceEntries: null, RegisteredDevices: {} }),
    '(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)<nil> ' +
      'RegisteredDevices:(map[string][]string)map[]}',
  );
  assert.equal(checkpointChecksum(sample), fnv32a(Buffer.from(spewOf(sample))));
});

test('a file written with the checksum tskubelet used before (fmt %#v) still reads', () => {
  const json = JSON.parse(marshalCheckpoint(sample)) as { Checksum: number };
  json.Checksum = fnv32a(Buffer.from(goSyntaxOf(sample)));
  assert.notEqual(json.Checksum, checkpointChecksum(sample));
  assert.deepEqual(unmarshalCheckpoint(JSON.stringify(json)), sample);
});

test('a checkpoint reads back as written, in upstream JSON shape', () => {
  const text = marshalCheckpoint(sample);
  const json = JSON.parse(text) as {
    Data: { PodDeviceEntries: { AllocResp: string; DeviceIDs: unknown }[] };
    Checksum: number;
  };
  assert.equal(json.Checksum, checkpointChecksum(sample));
  assert.equal(json.Data.PodDeviceEntries[0]?.AllocResp, 'CgE=');
  assert.deepEqual(json.Data.PodDeviceEntries[0]?.DeviceIDs, { '-1': ['dev-1'], '0': ['dev-0'] });
  const back = unmarshalCheckpoint(text);
  assert.deepEqual(back, sample);
});

test('a checkpoint whose data changed is refused as corrupt', () => {
  const json = JSON.parse(marshalCheckpoint(sample)) as {
    Data: { RegisteredDevices: Record<string, string[]> };
  };
  json.Data.RegisteredDevices['example.com/dev'] = ['dev-0'];
  assert.throws(() => unmarshalCheckpoint(JSON.stringify(json)), CorruptCheckpointError);
  assert.throws(() => unmarshalCheckpoint('{'), CorruptCheckpointError);
  assert.throws(
    () => unmarshalCheckpoint('{"Data":{"PodDeviceEntries":7},"Checksum":1}'),
    CorruptCheckpointError,
  );
});
