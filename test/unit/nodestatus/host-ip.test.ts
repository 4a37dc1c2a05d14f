import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  chooseHostInterface,
  defaultRouteInterfaces,
  discoverNodeIP,
  formatIP,
  isGlobalUnicast,
  validateNodeIP,
} from '../../../src/nodestatus/host-ip.js';
import { fakeNetworkHost, ROUTE_TABLE } from './fixtures.js';

const IPV6_ROUTES = [
  'fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0',
  '00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0',
  '00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo',
].join('\n');

describe('the node IP from the host', () => {
  it('finds the interfaces of default routes in /proc/net/route and ipv6_route', () => {
    assert.deepEqual(defaultRouteInterfaces(ROUTE_TABLE, 4), ['eth0']);
    assert.deepEqual(defaultRouteInterfaces(IPV6_ROUTES, 6), ['eth0']);
    assert.deepEqual(defaultRouteInterfaces('Iface\tDestination\n', 4), []);
  });

  it("picks the default route's interface address, IPv4 first unless IPv6 is preferred", async () => {
    const host = fakeNetworkHost();
    assert.equal(await chooseHostInterface(host, 4), '192.0.2.2');
    const v6Host = {
      ...host,
      readRouteFile: async (f: 4 | 6) => (f === 4 ? 'Iface\tDestination\n' : IPV6_ROUTES),
    };
    assert.equal(await chooseHostInterface(v6Host, 4), 'fd00::2');
  });

  it('fails without default routes, and without route tables takes any global address', async () => {
    await assert.rejects(
      chooseHostInterface(fakeNetworkHost({ routes: 'Iface\tDestination\n' })),
      /no default routes found/,
    );
    assert.equal(await chooseHostInterface(fakeNetworkHost({ routes: undefined })), '192.0.2.2');
  });

  it('prefers a valid address the node name resolves to, skipping loopback', async () => {
    const signal = new AbortController().signal;
    const host = fakeNetworkHost({ lookup: { n1: ['127.0.1.1', '10.244.77.1'], n2: ['127.0.1.1'] } });
    assert.equal(await discoverNodeIP('n1', host, 4, signal), '10.244.77.1');
    assert.equal(await discoverNodeIP('n2', host, 4, signal), '192.0.2.2');
    assert.equal(await discoverNodeIP('unknown', host, 4, signal), '192.0.2.2');
  });

  it('validates a --node-ip as upstream', () => {
    const host = fakeNetworkHost();
    assert.equal(validateNodeIP('192.0.2.2', host), undefined);
    assert.equal(validateNodeIP('fd00::2', host), undefined);
    assert.equal(validateNodeIP('127.0.0.1', host), "nodeIP can't be loopback address");
    assert.equal(validateNodeIP('::1', host), "nodeIP can't be loopback address");
    assert.equal(validateNodeIP('224.0.0.1', host), "nodeIP can't be a multicast address");
    assert.equal(validateNodeIP('169.254.1.1', host), "nodeIP can't be a link-local unicast address");
    assert.equal(validateNodeIP('0.0.0.0', host), "nodeIP can't be an all zeros address");
    assert.equal(validateNodeIP('nope', host), 'nodeIP must be a valid IP address');
    assert.equal(
      validateNodeIP('10.9.9.9', host),
      `node IP: "10.9.9.9" not found in the host's network interfaces`,
    );
  });

  it("writes addresses as Go's net.IP.String does", () => {
    assert.equal(formatIP('fd00:0:0:0:0:0:0:5'), 'fd00::5');
    assert.equal(formatIP('FD00::0:5'), 'fd00::5');
    assert.equal(formatIP('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(formatIP('::ffff:10.0.0.1'), '10.0.0.1');
    assert.equal(formatIP('::'), '::');
    assert.equal(formatIP('1:2:3:4:5:6:7:8'), '1:2:3:4:5:6:7:8');
    assert.equal(isGlobalUnicast('fe80::1'), false);
    assert.equal(isGlobalUnicast('10.0.0.1'), true);
  });
});
