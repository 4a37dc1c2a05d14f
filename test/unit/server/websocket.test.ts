/** The server-side WebSocket framing against a real client (the ws package). */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import WebSocket from 'ws';
import {
  acceptWebSocket,
  offeredProtocols,
  type WebSocketConnection,
} from '../../../src/server/websocket.js';

async function withServer(
  onConnection: (ws: WebSocketConnection, messages: { data: Buffer; binary: boolean }[]) => void,
  client: (url: string) => Promise<void>,
): Promise<{ messages: { data: Buffer; binary: boolean }[]; closeCode: number | undefined }> {
  const messages: { data: Buffer; binary: boolean }[] = [];
  let closeCode: number | undefined;
  const server = http.createServer();
  server.on('upgrade', (req, socket, head) => {
    const chosen = offeredProtocols(req)[0] ?? '';
    const ws = acceptWebSocket(req, socket, head, chosen, {
      onMessage: (data, binary) => messages.push({ data, binary }),
      onClose: (code) => (closeCode = code),
    });
    if (ws) onConnection(ws, messages);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await client(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    // The client may see the close handshake end before the server's side reports it (a loaded
    // machine): give the server's close callback a bounded moment when the client closed.
    const deadline = Date.now() + 2_000;
    while (closeCode === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
  return { messages, closeCode };
}

test('handshake with the chosen subprotocol; binary, text, large and fragmented messages; close', async () => {
  const big = Buffer.alloc(200_000, 7);
  const { messages, closeCode } = await withServer(
    (ws) => ws.send(Buffer.from([1, 104, 105])),
    async (url) => {
      const ws = new WebSocket(url, ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
      const got = await new Promise<Buffer>((resolve, reject) => {
        ws.once('message', (d: Buffer) => resolve(d));
        ws.once('error', reject);
      });
      assert.equal(ws.protocol, 'v5.channel.k8s.io');
      assert.deepEqual([...got], [1, 104, 105]);
      ws.send(Buffer.from([0, 1, 2]));
      ws.send('text message');
      ws.send(big);
      // Fragmented: three frames, one message.
      ws.send(Buffer.from('frag-'), { fin: false });
      ws.send(Buffer.from('ment-'), { fin: false });
      ws.send(Buffer.from('ed'), { fin: true });
      ws.ping();
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        setTimeout(() => ws.close(1000), 100);
      });
    },
  );
  assert.deepEqual([...messages[0]!.data], [0, 1, 2]);
  assert.equal(messages[1]!.binary, false);
  assert.equal(messages[1]!.data.toString(), 'text message');
  assert.ok(messages[2]!.data.equals(big));
  assert.equal(messages[3]!.data.toString(), 'frag-ment-ed');
  assert.equal(closeCode, 1000);
});

test('a server close reaches the client with its code', async () => {
  let clientCode = 0;
  await withServer(
    (ws) => setTimeout(() => ws.close(1000, 'done'), 50),
    async (url) => {
      const ws = new WebSocket(url);
      clientCode = await new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));
    },
  );
  assert.equal(clientCode, 1000);
});

test('a bad handshake is a 400', async () => {
  await withServer(
    () => assert.fail('no connection expected'),
    async (url) => {
      const res = await fetch(url.replace('ws:', 'http:'), {
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'short',
        },
      }).catch((err: unknown) => err as Error);
      if (res instanceof Error) return; // fetch refuses some upgrade answers outright; either way no connection
      assert.equal(res.status, 400);
    },
  );
});

test('a text message that is not UTF-8 is not delivered: the client is closed with 1007', async () => {
  let clientCode = 0;
  const { messages } = await withServer(
    () => undefined,
    async (url) => {
      const ws = new WebSocket(url);
      await new Promise<void>((resolve, reject) => ws.once('open', resolve).once('error', reject));
      const closed = new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));
      ws.send(Buffer.from([0x68, 0xff, 0xfe]), { binary: false });
      clientCode = await closed;
    },
  );
  assert.equal(messages.length, 0);
  assert.equal(clientCode, 1007);
});
