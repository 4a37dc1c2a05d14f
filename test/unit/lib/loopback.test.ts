import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { isLoopbackAddress, loopbackRefusal } from '../../../src/lib/loopback.js';

function req(remoteAddress: string, host?: string): IncomingMessage {
  return {
    socket: { remoteAddress },
    headers: host === undefined ? {} : { host },
  } as unknown as IncomingMessage;
}

describe('loopback', () => {
  it('knows the loopback addresses, IPv4-mapped too', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) assert.ok(isLoopbackAddress(a), a);
    for (const a of ['10.0.0.1', '::ffff:10.0.0.1', '0.0.0.0', '::', 'localhost', undefined])
      assert.ok(!isLoopbackAddress(a), String(a));
  });

  it('refuses clients elsewhere and requests naming another host', () => {
    assert.equal(loopbackRefusal(req('127.0.0.1', '127.0.0.1:10248')), undefined);
    assert.equal(loopbackRefusal(req('::1', '[::1]:10248')), undefined);
    assert.equal(loopbackRefusal(req('127.0.0.1', 'localhost')), undefined);
    assert.equal(loopbackRefusal(req('127.0.0.1')), undefined);
    assert.match(loopbackRefusal(req('192.168.1.5', '127.0.0.1'))!, /this machine/);
    assert.match(loopbackRefusal(req('127.0.0.1', 'evil.example'))!, /localhost/);
    assert.match(loopbackRefusal(req('127.0.0.1', '127.0.0.1.evil.example:80'))!, /localhost/);
  });
});
