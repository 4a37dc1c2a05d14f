/**
 * /logs/ never serves what lies outside the log folder, whatever links someone with write access to
 * it plants there (an index.html linked to the kubelet's client key).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startKubeletServer } from '../../../src/server/kubelet-server.js';
import { request, testConfig, testHost } from './server-kit.js';

const dir = mkdtempSync(join(tmpdir(), 'node-logs-unit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SECRET = '-----BEGIN EC PRIVATE KEY----- not for nodes/log';

test('a planted index.html link out of the log folder is not followed; links within it are', async () => {
  const logs = join(dir, 'var-log');
  const secret = join(dir, 'pki', 'kubelet-client-current.pem');
  mkdirSync(join(dir, 'pki'));
  writeFileSync(secret, SECRET);
  mkdirSync(join(logs, 'planted'), { recursive: true });
  mkdirSync(join(logs, 'fine'));
  mkdirSync(join(logs, 'inner'));
  symlinkSync(secret, join(logs, 'index.html'));
  symlinkSync(secret, join(logs, 'planted', 'index.html'));
  symlinkSync(join(dir, 'pki'), join(logs, 'pki-link'));
  writeFileSync(join(logs, 'fine', 'index.html'), '<p>fine</p>');
  symlinkSync(join(logs, 'fine', 'index.html'), join(logs, 'inner', 'index.html'));
  writeFileSync(join(logs, 'syslog'), 'a log line\n');

  const s = await startKubeletServer(testHost(), {
    config: testConfig(),
    nodeName: 'n',
    certDirectory: join(dir, 'cert'),
    nodeLogsDir: logs,
  });
  try {
    for (const p of [
      '/logs/',
      '/logs/planted/',
      '/logs/index.html',
      '/logs/planted/index.html',
      '/logs/pki-link/',
    ]) {
      const r = await request(s.port, p);
      assert.ok(!r.body.includes(SECRET), `${p} served the file outside the log folder`);
    }
    const root = await request(s.port, '/logs/');
    assert.equal(root.status, 200);
    assert.match(root.body, /<a href="syslog">syslog<\/a>/, 'the folder is listed instead');
    const planted = await request(s.port, '/logs/planted/');
    assert.equal(planted.status, 200);
    assert.match(planted.body, /<pre>/);
    assert.equal((await request(s.port, '/logs/planted/index.html')).status, 404);
    assert.equal((await request(s.port, '/logs/pki-link/kubelet-client-current.pem')).status, 404);
    assert.equal((await request(s.port, '/logs/fine/')).body, '<p>fine</p>');
    assert.equal(
      (await request(s.port, '/logs/inner/')).body,
      '<p>fine</p>',
      'a link that stays inside is followed',
    );
    assert.equal((await request(s.port, '/logs/syslog')).body, 'a log line\n');
  } finally {
    await s.close();
  }
});
