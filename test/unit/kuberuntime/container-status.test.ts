import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
  calcRestartCountByLogDir,
  getTerminationMessage,
  MAX_TERMINATION_MESSAGE_BYTES,
  readLastStringFromContainerLogs,
} from '../../../src/kuberuntime/container-status.js';
import type { Mount } from '../../../src/cri/types.js';

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'container-status-'));
});
after(() => rm(dir, { recursive: true, force: true }));

const TS = '2024-01-02T03:04:05.000000000Z';

async function criLog(name: string, records: string[]): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, records.map((r) => `${r}\n`).join(''));
  return file;
}

test('a log ending in a partial line gives its text without a newline (echo -n DONE; false)', async () => {
  const file = await criLog('partial.log', [`${TS} stdout P DONE`]);
  assert.equal(await readLastStringFromContainerLogs(file), 'DONE');
});

test('full lines keep their newline, partial records join, stdout and stderr both count', async () => {
  const file = await criLog('mixed.log', [
    `${TS} stdout F first`,
    `${TS} stderr P sec`,
    `${TS} stderr F ond`,
    `${TS} stdout F `,
    `${TS} stdout F last`,
  ]);
  assert.equal(await readLastStringFromContainerLogs(file), 'first\nsecond\n\nlast\n');
});

test('only the last 80 records, and of them the last 2048 bytes', async () => {
  const lines = Array.from({ length: 100 }, (_, i) => `${TS} stdout F line-${i}`);
  const text = await readLastStringFromContainerLogs(await criLog('long.log', lines));
  assert.equal(text.split('\n')[0], 'line-20');
  assert.ok(text.endsWith('line-99\n'));

  const wide = Array.from({ length: 10 }, (_, i) => `${TS} stdout F ${String(i).repeat(500)}`);
  const tail = await readLastStringFromContainerLogs(await criLog('wide.log', wide));
  assert.equal(Buffer.byteLength(tail), 2048);
  assert.ok(tail.endsWith(`${'9'.repeat(500)}\n`));
});

test('a missing log is reported in the message, as upstream does', async () => {
  assert.match(
    await readLastStringFromContainerLogs(path.join(dir, 'nope.log')),
    /^Error on reading termination message from logs: /,
  );
});

test('the termination message file: its last 4096 bytes; empty falls back to logs only when asked', async () => {
  const file = path.join(dir, 'termination');
  const mounts: Mount[] = [
    {
      containerPath: '/dev/termination-log',
      hostPath: file,
      readonly: false,
      selinuxRelabel: false,
      propagation: 'PROPAGATION_PRIVATE',
    },
  ];
  await writeFile(file, `${'x'.repeat(5000)}END`);
  const long = await getTerminationMessage(mounts, '/dev/termination-log', true);
  assert.equal(long.message.length, MAX_TERMINATION_MESSAGE_BYTES);
  assert.ok(long.message.endsWith('END'));
  assert.equal(long.checkLogs, false);

  await writeFile(file, '');
  assert.deepEqual(await getTerminationMessage(mounts, '/dev/termination-log', true), {
    message: '',
    checkLogs: true,
  });
  assert.deepEqual(await getTerminationMessage(mounts, '/dev/termination-log', false), {
    message: '',
    checkLogs: false,
  });
  assert.deepEqual(await getTerminationMessage(mounts, '/elsewhere', true), { message: '', checkLogs: true });
});

test('calcRestartCountByLogDir: one past the highest <n>.log, 0 when there is no such folder', async () => {
  const podDir = path.join(dir, 'restart-count', 'ns_web_uid');
  assert.equal(await calcRestartCountByLogDir(path.join(podDir, 'app')), 0, 'no pod folder');
  await mkdir(podDir, { recursive: true });
  assert.equal(await calcRestartCountByLogDir(path.join(podDir, 'app')), 0, 'no container folder');
  await writeFile(path.join(podDir, 'file'), '');
  assert.equal(await calcRestartCountByLogDir(path.join(podDir, 'file')), 0, 'a file, not a folder');
  await mkdir(path.join(podDir, 'app'));
  assert.equal(await calcRestartCountByLogDir(path.join(podDir, 'app')), 0, 'an empty folder');
  for (const name of ['0.log', '3.log.20240102-030405', '2.log', 'notes.txt']) {
    await writeFile(path.join(podDir, 'app', name), '');
  }
  await mkdir(path.join(podDir, 'app', '9.log'));
  assert.equal(
    await calcRestartCountByLogDir(path.join(podDir, 'app')),
    4,
    'rotated logs count, folders do not',
  );
  await symlink(path.join(podDir, 'app'), path.join(podDir, 'linked'));
  assert.equal(
    await calcRestartCountByLogDir(path.join(podDir, 'linked')),
    4,
    'a symlink to a folder is followed',
  );
  assert.equal(await calcRestartCountByLogDir(`${path.join(podDir, 'app')}/`), 4, 'a trailing slash');
});
