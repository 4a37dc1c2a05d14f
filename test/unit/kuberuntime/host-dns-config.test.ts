/** Reading the node's resolv.conf: parsed again only when the file changed. */
import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readHostDNSConfig } from '../../../src/kuberuntime/pod-dns.js';

test('resolv.conf: each change is seen at the next read, by rewrite or by rename; a broken one throws every time', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tskubelet-resolv-'));
  try {
    const file = path.join(dir, 'resolv.conf');
    await writeFile(file, 'nameserver 10.0.0.1\nsearch a.example\n');
    const first = await readHostDNSConfig(file);
    assert.deepEqual(first, { servers: ['10.0.0.1'], searches: ['a.example'], options: [] });
    // What the caller gets is its own: changing it changes nothing for the next one.
    first!.servers.push('10.9.9.9');
    assert.deepEqual((await readHostDNSConfig(file))?.servers, ['10.0.0.1']);

    // Rewritten in place with the same length and the same modification time: the change time
    // still tells it apart.
    const before = new Date(Date.now() - 60_000);
    await utimes(file, before, before);
    await readHostDNSConfig(file);
    await writeFile(file, 'nameserver 10.0.0.2\nsearch a.example\n');
    await utimes(file, before, before);
    assert.deepEqual((await readHostDNSConfig(file))?.servers, ['10.0.0.2']);

    // Replaced by rename, as resolvconf and NetworkManager do.
    await writeFile(path.join(dir, 'next'), 'nameserver 10.0.0.3\noptions ndots:2\n');
    await rename(path.join(dir, 'next'), file);
    assert.deepEqual(await readHostDNSConfig(file), {
      servers: ['10.0.0.3'],
      searches: [],
      options: ['ndots:2'],
    });

    await writeFile(file, 'nameserver\n');
    await assert.rejects(readHostDNSConfig(file), /nameserver list is empty/);
    await assert.rejects(readHostDNSConfig(file), /nameserver list is empty/);
    await writeFile(file, 'nameserver 10.0.0.4\n');
    assert.deepEqual((await readHostDNSConfig(file))?.servers, ['10.0.0.4']);

    await rm(file);
    await assert.rejects(readHostDNSConfig(file), { code: 'ENOENT' });
    assert.equal(await readHostDNSConfig(''), undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
