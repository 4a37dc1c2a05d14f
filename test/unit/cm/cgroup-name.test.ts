import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cgroupNameToDriverPath,
  driverPathToCgroupName,
  expandSlice,
  newCgroupName,
  parseCgroupfsToCgroupName,
  parseSystemdToCgroupName,
  toCgroupfs,
  toSystemd,
} from '../../../src/cm/cgroup-name.js';

const uid = '5f4d1c2e-8a7b-4c3d-9e2f-0123456789ab';

test('cgroupfs names are the components joined under /', () => {
  const name = newCgroupName(['kubepods', 'burstable'], `pod${uid}`);
  assert.equal(toCgroupfs(name), `/kubepods/burstable/pod${uid}`);
  assert.equal(toCgroupfs([]), '/');
  assert.deepEqual(parseCgroupfsToCgroupName(`/kubepods/burstable/pod${uid}`), name);
  assert.deepEqual(parseCgroupfsToCgroupName('/'), []);
  assert.deepEqual(parseCgroupfsToCgroupName(''), []);
  assert.deepEqual(parseCgroupfsToCgroupName('/tskubelet-test-1/kubepods'), ['tskubelet-test-1', 'kubepods']);
});

test('systemd names nest slices and spell a dash in a component as an underscore', () => {
  const name = newCgroupName(['kubepods', 'burstable'], `pod${uid}`);
  const escaped = uid.replaceAll('-', '_');
  assert.equal(
    toSystemd(name),
    `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${escaped}.slice`,
  );
  assert.equal(toSystemd(['kubepods']), '/kubepods.slice');
  assert.equal(toSystemd(['kubepods', `pod${uid}`]), `/kubepods.slice/kubepods-pod${escaped}.slice`);
  assert.equal(toSystemd([]), '/');
  assert.deepEqual(parseSystemdToCgroupName(toSystemd(name)), name);
  assert.deepEqual(parseSystemdToCgroupName('kubepods-besteffort.slice'), ['kubepods', 'besteffort']);
});

test('expandSlice follows libcontainer, including its refusals', () => {
  assert.equal(expandSlice('a-b-c.slice'), '/a.slice/a-b.slice/a-b-c.slice');
  assert.equal(expandSlice('-.slice'), '/');
  assert.throws(() => expandSlice('a--b.slice'));
  assert.throws(() => expandSlice('-a.slice'));
  assert.throws(() => expandSlice('a/b.slice'));
  assert.throws(() => expandSlice('a.scope'));
});

test('the driver picks the literal form, and it reads back', () => {
  const name = ['kubepods', 'besteffort', 'podabc'];
  assert.equal(cgroupNameToDriverPath(name, 'cgroupfs'), '/kubepods/besteffort/podabc');
  assert.equal(
    cgroupNameToDriverPath(name, 'systemd'),
    '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podabc.slice',
  );
  for (const driver of ['cgroupfs', 'systemd'] as const) {
    assert.deepEqual(driverPathToCgroupName(cgroupNameToDriverPath(name, driver), driver), name);
  }
  assert.throws(() => newCgroupName(['kubepods'], 'a/b'));
});
