import assert from 'node:assert/strict';
import { test } from 'node:test';
import { containerFromCri, podSandboxFromCri } from '../../../src/cri/convert.js';
import {
  Container as CriContainer,
  ContainerState,
  ListContainersResponse,
  ListPodSandboxResponse,
  PodSandbox as CriPodSandbox,
  PodSandboxState,
} from '../../../src/cri/generated/runtime/v1/api.js';
import { ListItemCache } from '../../../src/cri/list-item-cache.js';

function criContainer(id: string, state: ContainerState = ContainerState.CONTAINER_RUNNING): CriContainer {
  return CriContainer.fromPartial({
    id,
    podSandboxId: `sb-${id}`,
    metadata: { name: `c-${id}`, attempt: 0 },
    image: { image: 'busybox', annotations: {} },
    imageRef: 'sha256:abc',
    state,
    createdAt: 1_700_000_000_000_000_000n,
    labels: { 'io.kubernetes.pod.uid': `uid-${id}` },
    annotations: { 'io.kubernetes.container.hash': '1234' },
  });
}

// Container's labels and annotations.
const MAP_FIELDS = new Set([8, 9]);

const answer = (...containers: CriContainer[]): Uint8Array =>
  ListContainersResponse.encode({ containers }).finish();

test('unchanged items come back as the very objects of the last listing, frozen; changed ones anew', () => {
  let decoded = 0;
  const cache = new ListItemCache((b) => {
    decoded++;
    return containerFromCri(CriContainer.decode(b));
  }, MAP_FIELDS);
  const first = cache.decodeList(answer(criContainer('a'), criContainer('b')), true);
  assert.deepEqual(
    first,
    [criContainer('a'), criContainer('b')].map((c) => containerFromCri(c)),
  );
  assert.equal(decoded, 2);
  assert.ok(
    Object.isFrozen(first[0]) && Object.isFrozen(first[0]!.labels) && Object.isFrozen(first[0]!.metadata),
  );
  assert.throws(() => {
    (first[0]!.labels as Record<string, string>).x = 'y';
  }, TypeError);

  const second = cache.decodeList(
    answer(criContainer('a'), criContainer('b', ContainerState.CONTAINER_EXITED), criContainer('c')),
    true,
  );
  assert.equal(decoded, 4);
  assert.equal(second[0], first[0]);
  assert.notEqual(second[1], first[1]);
  assert.equal(second[1]!.state, 'CONTAINER_EXITED');
  assert.equal(second[2]!.id, 'c');
});

test('labels and annotations in another order are the same item; a field that changed is not', () => {
  const cache = new ListItemCache((b) => containerFromCri(CriContainer.decode(b)), MAP_FIELDS);
  const a = criContainer('a');
  a.labels = { one: '1', two: '2', three: '3' };
  const [first] = cache.decodeList(answer(a), true);
  // The maps' entries are written in their objects' order: the same entries, another order.
  const shuffled = criContainer('a');
  shuffled.labels = { three: '3', one: '1', two: '2' };
  assert.notDeepEqual(Buffer.from(answer(a)), Buffer.from(answer(shuffled)));
  const [second] = cache.decodeList(answer(shuffled), true);
  assert.equal(second, first);
  // Any other field, here the image reference, makes a new item.
  const changed = criContainer('a');
  changed.labels = { one: '1', two: '2', three: '3' };
  changed.imageRef = 'sha256:abd';
  const [third] = cache.decodeList(answer(changed), true);
  assert.notEqual(third, first);
  assert.equal(third!.imageRef, 'sha256:abd');
});

test('a listing without filter forgets what it does not hold; a filtered one only adds', () => {
  const cache = new ListItemCache((b) => containerFromCri(CriContainer.decode(b)), MAP_FIELDS);
  cache.decodeList(answer(criContainer('a'), criContainer('b')), true);
  assert.equal(cache.size, 2);
  cache.decodeList(answer(criContainer('c')), false);
  assert.equal(cache.size, 3);
  cache.decodeList(answer(criContainer('b')), true);
  assert.equal(cache.size, 1);
  assert.deepEqual(cache.decodeList(answer(), true), []);
  assert.equal(cache.size, 0);
});

test('an item whose ID is not its first field is decoded every time, not kept', () => {
  const cache = new ListItemCache((b) => containerFromCri(CriContainer.decode(b)), MAP_FIELDS);
  // Field 2 (pod_sandbox_id) before field 1: legal protobuf, if no encoder writes it so.
  const item = Buffer.concat([
    Buffer.from([0x12, 0x02]),
    Buffer.from('sb'),
    Buffer.from([0x0a, 0x01]),
    Buffer.from('z'),
  ]);
  const list = Buffer.concat([Buffer.from([0x0a, item.length]), item]);
  const [one] = cache.decodeList(list, true);
  const [two] = cache.decodeList(list, true);
  assert.equal(one!.id, 'z');
  assert.equal(one!.podSandboxId, 'sb');
  assert.notEqual(one, two);
  assert.equal(cache.size, 0);
});

test('bytes that are not a list answer are refused, not read past their end', () => {
  const cache = new ListItemCache((b) => containerFromCri(CriContainer.decode(b)), MAP_FIELDS);
  const whole = Buffer.from(answer(criContainer('a')));
  // Cut inside the item, and an item whose inner field claims more than the item holds.
  assert.throws(() => cache.decodeList(whole.subarray(0, whole.length - 3), true), /malformed protobuf/);
  const item = Buffer.from([0x0a, 0x01, 0x61, 0x12, 0x09, 0x62]);
  const overlong = Buffer.concat([Buffer.from([0x0a, item.length]), item]);
  assert.throws(() => cache.decodeList(overlong, true), /malformed protobuf/);
  // A group (wire type 3) is not protobuf the CRI sends.
  assert.throws(() => cache.decodeList(Buffer.from([0x0b]), true), /malformed protobuf/);
  assert.equal(cache.size, 0);
});

test('a field after the maps, the maps growing, and an item without maps are each compared', () => {
  // PodSandbox: labels (5) and annotations (6), then runtime_handler (7) after them.
  const sandboxCache = new ListItemCache((b) => podSandboxFromCri(CriPodSandbox.decode(b)), new Set([5, 6]));
  const sandbox = (runtimeHandler: string, labels: Record<string, string> = { app: 'web' }): CriPodSandbox =>
    CriPodSandbox.fromPartial({
      id: 's1',
      metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 },
      state: PodSandboxState.SANDBOX_READY,
      createdAt: 1_700_000_000_000_000_000n,
      labels,
      annotations: { a: '1' },
      runtimeHandler,
    });
  const sandboxes = (...items: CriPodSandbox[]): Uint8Array =>
    ListPodSandboxResponse.encode({ items }).finish();
  const [first] = sandboxCache.decodeList(sandboxes(sandbox('runc')), true);
  assert.equal(sandboxCache.decodeList(sandboxes(sandbox('runc')), true)[0], first);
  const [handler] = sandboxCache.decodeList(sandboxes(sandbox('kata')), true);
  assert.notEqual(handler, first);
  assert.equal(handler!.runtimeHandler, 'kata');
  // A label value one byte longer: the maps' size differs though every other field is the same.
  const [longer] = sandboxCache.decodeList(sandboxes(sandbox('kata', { app: 'webs' })), true);
  assert.notEqual(longer, handler);
  assert.deepEqual(longer!.labels, { app: 'webs' });

  const bare = criContainer('bare');
  bare.labels = {};
  bare.annotations = {};
  const cache = new ListItemCache((b) => containerFromCri(CriContainer.decode(b)), MAP_FIELDS);
  const [one] = cache.decodeList(answer(bare), true);
  assert.equal(cache.decodeList(answer(bare), true)[0], one);
  const moved = criContainer('bare', ContainerState.CONTAINER_EXITED);
  moved.labels = {};
  moved.annotations = {};
  assert.notEqual(cache.decodeList(answer(moved), true)[0], one);
});
