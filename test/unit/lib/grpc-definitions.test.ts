import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { BinaryWriter } from '@bufbuild/protobuf/wire';
import { encodeGrpcFrame, grpcJsUnary, grpcMethods, loadGrpcJs } from '../../../src/lib/grpc-definitions.js';
import { grpcMessageFrame } from '../../../src/lib/grpc-wire.js';
import { GrpcUnaryServer, unaryMethod } from '../../../src/lib/grpc-server/grpc-unary-server.js';
import { GrpcStatus } from '../../../src/lib/grpc-status.js';
import {
  RegistrationDefinition,
  RegisterRequest,
} from '../../../src/cm/devicemanager/generated/deviceplugin/v1beta1/deviceplugin.js';
import { unixSocketClient } from '../../helpers/grpc-unary-call.js';

test('grpcMethods: the path from the full service name, and codecs that round-trip a message', () => {
  const { register } = grpcMethods(RegistrationDefinition);
  assert.equal(register.path, '/v1beta1.Registration/Register');
  assert.equal(register.originalName, 'register');
  assert.equal(register.requestStream, false);
  const request = RegisterRequest.fromPartial({
    version: 'v1beta1',
    endpoint: 'e.sock',
    resourceName: 'x/y',
  });
  const bytes = register.requestSerialize(request);
  assert.ok(Buffer.isBuffer(bytes));
  assert.deepEqual(register.requestDeserialize(bytes), request);
});

test('requestFrame: the message behind its prefix, as grpcMessageFrame makes it, one after another', () => {
  const { register } = grpcMethods(RegistrationDefinition);
  const requests = [
    RegisterRequest.fromPartial({ version: 'v1beta1', endpoint: 'e.sock', resourceName: 'x/y' }),
    RegisterRequest.fromPartial({}),
    // Larger than a writer is kept for, then a small one again.
    RegisterRequest.fromPartial({ version: 'v', endpoint: 'e'.repeat(100_000), resourceName: 'r' }),
    RegisterRequest.fromPartial({ version: 'v1beta1', resourceName: 'a/b' }),
  ];
  for (const request of requests) {
    const frame = register.requestFrame(request);
    assert.ok(Buffer.isBuffer(frame));
    assert.deepEqual(frame, grpcMessageFrame(register.requestSerialize(request)));
  }
});

test('encodeGrpcFrame: an encode that throws midway leaves nothing behind for the next frame', () => {
  const { register } = grpcMethods(RegistrationDefinition);
  const failing = {
    encode: (message: RegisterRequest, writer?: BinaryWriter) => {
      RegisterRequest.encode(message, writer).fork().string('half');
      throw new Error('cannot encode');
    },
    decode: RegisterRequest.decode,
  };
  const request = RegisterRequest.fromPartial({ version: 'v1beta1', endpoint: 'e.sock' });
  assert.throws(() => encodeGrpcFrame(failing, request), /cannot encode/);
  assert.deepEqual(register.requestFrame(request), grpcMessageFrame(register.requestSerialize(request)));
});

test('grpcJsUnary: a signal aborted before the call cancels it at once, not at its deadline', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'grpc-definitions-'));
  const raw = (b: Buffer): Buffer => b;
  // A method that never answers: only the cancel can end the call before its deadline.
  const server = await GrpcUnaryServer.listen({
    socketPath: path.join(dir, 's.sock'),
    methods: [
      unaryMethod(
        { path: '/t.S/Never', requestDeserialize: raw, responseSerialize: raw },
        () => new Promise<Buffer>(() => undefined),
      ),
    ],
  });
  const grpc = await loadGrpcJs();
  const client = unixSocketClient(server.socketPath);
  t.after(async () => {
    client.close();
    server.forceShutdown();
    await rm(dir, { recursive: true, force: true });
  });
  const started = Date.now();
  const err = (await grpcJsUnary(
    client,
    { path: '/t.S/Never', requestSerialize: raw, responseDeserialize: raw },
    Buffer.from('x'),
    new grpc.Metadata(),
    { deadline: Date.now() + 5_000 },
    AbortSignal.abort(),
  ).then(
    () => assert.fail('the call succeeded'),
    (e: unknown) => e,
  )) as { code: number };
  assert.equal(err.code, GrpcStatus.CANCELLED, `code ${err.code} after ${Date.now() - started} ms`);
});
