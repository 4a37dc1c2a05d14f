// The relist's caches (list items, assembled pods, settled PLEG records) against a relist that builds everything anew: the same pods, events and pod cache, over random runtime histories.
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
import { RunningPodAssembler } from '../../../src/kuberuntime/running-pods.js';
import type { RunningPod } from '../../../src/kuberuntime/types.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { setLogSink } from '../../../src/lib/log.js';
import { GenericPLEG, type PodLifecycleEvent } from '../../../src/pleg/generic-pleg.js';
import { InMemoryPodCache } from '../../../src/pleg/pod-cache.js';

setLogSink(() => undefined);

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

interface SimSandbox {
  id: string;
  uid: string;
  state: PodSandboxState;
  createdAt: bigint;
}
interface SimContainer {
  id: string;
  uid: string;
  sandboxId: string;
  name: string;
  state: ContainerState;
  createdAt: bigint;
}

function shuffled<T>(items: readonly T[], r: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function shuffledMap(map: Record<string, string>, r: () => number): Record<string, string> {
  return Object.fromEntries(shuffled(Object.entries(map), r));
}

function sandboxLabels(uid: string): Record<string, string> {
  return {
    'io.kubernetes.pod.uid': uid,
    'io.kubernetes.pod.name': `pod-${uid}`,
    'io.kubernetes.pod.namespace': 'ns',
  };
}

function encodeSandboxes(items: SimSandbox[], r: () => number): Uint8Array {
  return ListPodSandboxResponse.encode({
    items: shuffled(items, r).map((s) =>
      CriPodSandbox.fromPartial({
        id: s.id,
        metadata: { name: `pod-${s.uid}`, namespace: 'ns', uid: s.uid, attempt: 0 },
        state: s.state,
        createdAt: s.createdAt,
        labels: shuffledMap(sandboxLabels(s.uid), r),
        annotations: shuffledMap({ a: '1', bb: '22', ccc: '333' }, r),
        runtimeHandler: '',
      }),
    ),
  }).finish();
}

function encodeContainers(items: SimContainer[], r: () => number): Uint8Array {
  return ListContainersResponse.encode({
    containers: shuffled(items, r).map((c) =>
      CriContainer.fromPartial({
        id: c.id,
        podSandboxId: c.sandboxId,
        metadata: { name: c.name, attempt: 0 },
        image: { image: 'busybox', annotations: {} },
        imageRef: 'sha256:abc',
        state: c.state,
        createdAt: c.createdAt,
        labels: shuffledMap({ ...sandboxLabels(c.uid), 'io.kubernetes.container.name': c.name }, r),
        annotations: shuffledMap(
          {
            'io.kubernetes.container.hash': '00ab',
            'io.kubernetes.pod.terminationGracePeriod': '30',
          },
          r,
        ),
      }),
    ),
  }).finish();
}

/** A pod as a set, for comparing two listings' pods whatever their items' order. */
function canonical(pods: readonly RunningPod[]): string[] {
  return pods
    .map((p) =>
      JSON.stringify({
        uid: p.uid,
        name: p.name,
        ns: p.namespace,
        g: p.terminationGracePeriodSeconds,
        s: p.sandboxes.map((s) => `${s.id}:${s.state}:${s.createdAtNs}`).sort(),
        c: p.containers.map((c) => `${c.id}:${c.state}:${c.podSandboxId}:${c.name}`).sort(),
      }),
    )
    .sort();
}

function drain(pleg: GenericPLEG): string[] {
  const out: string[] = [];
  for (let e: PodLifecycleEvent | undefined; (e = pleg.events.tryReceive());) {
    out.push(`${e.podUid} ${e.type} ${e.containerId}`);
  }
  return out.sort();
}

for (const seed of Array.from({ length: 16 }, (_, i) => i + 1)) {
  test(`seed ${seed}: the cached pipeline lists and tells what a fresh one does`, async () => {
    const r = rng(seed);
    const sandboxes: SimSandbox[] = [];
    const containers: SimContainer[] = [];
    let next = 0;
    let time = 1000n;

    const containerCache = new ListItemCache(
      (b) => containerFromCri(CriContainer.decode(b)),
      new Set([8, 9]),
    );
    const sandboxCache = new ListItemCache(
      (b) => podSandboxFromCri(CriPodSandbox.decode(b)),
      new Set([5, 6]),
    );
    const allPods = new RunningPodAssembler();
    const runningPods = new RunningPodAssembler();
    let failing = new Set<string>();

    const cachedGetPods = (all: boolean): readonly RunningPod[] => {
      const sb = sandboxes.filter((s) => all || s.state === PodSandboxState.SANDBOX_READY);
      const cs = containers.filter((c) => all || c.state === ContainerState.CONTAINER_RUNNING);
      return (all ? allPods : runningPods).assemble(
        sandboxCache.decodeList(encodeSandboxes(sb, r), all),
        containerCache.decodeList(encodeContainers(cs, r), all),
      );
    };
    const freshGetPods = (all: boolean): readonly RunningPod[] => {
      const sb = sandboxes.filter((s) => all || s.state === PodSandboxState.SANDBOX_READY);
      const cs = containers.filter((c) => all || c.state === ContainerState.CONTAINER_RUNNING);
      return new RunningPodAssembler().assemble(
        ListPodSandboxResponse.decode(encodeSandboxes(sb, r)).items.map(podSandboxFromCri),
        ListContainersResponse.decode(encodeContainers(cs, r)).containers.map(containerFromCri),
      );
    };

    const plegOf = (getPods: (all: boolean) => readonly RunningPod[]) => {
      const clock = new FakeClock();
      const cache = new InMemoryPodCache();
      const pleg = new GenericPLEG({
        clock,
        cache,
        runtime: {
          getPods: async (all) => getPods(all),
          getPodStatus: async (uid, name, namespace, listed) => {
            if (failing.has(uid)) throw new Error('injected');
            return {
              uid,
              name,
              namespace,
              ips: [],
              sandboxStatuses: [],
              containerStatuses: (listed?.containers ?? []).map(
                (c) => ({ id: c.id, state: c.state }) as never,
              ),
              timestampMs: 0,
            };
          },
        },
      });
      return { pleg, cache, clock };
    };
    const cached = plegOf(cachedGetPods);
    const fresh = plegOf(freshGetPods);

    const uidOf = () => `p${Math.floor(r() * 6)}`;
    for (let step = 0; step < 400; step++) {
      const ops = Math.floor(r() * 3);
      for (let k = 0; k < ops; k++) {
        const op = Math.floor(r() * 9);
        time += 1n;
        if (op === 0) {
          const uid = uidOf();
          const id = `sb${next++}`;
          sandboxes.push({ id, uid, state: PodSandboxState.SANDBOX_READY, createdAt: time });
        } else if (op === 1 && sandboxes.length > 0) {
          const s = sandboxes[Math.floor(r() * sandboxes.length)]!;
          s.state = PodSandboxState.SANDBOX_NOTREADY;
        } else if (op === 2 && sandboxes.length > 0) {
          const s = sandboxes[Math.floor(r() * sandboxes.length)]!;
          const name = `c${Math.floor(r() * 3)}`;
          containers.push({
            id: `c${next++}`,
            uid: s.uid,
            sandboxId: s.id,
            name,
            state: r() < 0.5 ? ContainerState.CONTAINER_CREATED : ContainerState.CONTAINER_RUNNING,
            createdAt: time,
          });
        } else if ((op === 3 || op === 4) && containers.length > 0) {
          const c = containers[Math.floor(r() * containers.length)]!;
          c.state =
            c.state === ContainerState.CONTAINER_CREATED
              ? ContainerState.CONTAINER_RUNNING
              : c.state === ContainerState.CONTAINER_RUNNING
                ? ContainerState.CONTAINER_EXITED
                : r() < 0.2
                  ? ContainerState.CONTAINER_UNKNOWN
                  : c.state;
        } else if (op === 5 && containers.length > 0) {
          const i = Math.floor(r() * containers.length);
          if (containers[i]!.state !== ContainerState.CONTAINER_RUNNING) containers.splice(i, 1);
        } else if (op === 6 && sandboxes.length > 0) {
          const i = Math.floor(r() * sandboxes.length);
          const s = sandboxes[i]!;
          if (!containers.some((c) => c.sandboxId === s.id)) sandboxes.splice(i, 1);
        } else if (op === 7) {
          // A whole pod goes.
          const uid = uidOf();
          for (let i = sandboxes.length - 1; i >= 0; i--)
            if (sandboxes[i]!.uid === uid) sandboxes.splice(i, 1);
          for (let i = containers.length - 1; i >= 0; i--)
            if (containers[i]!.uid === uid) containers.splice(i, 1);
        } else if (op === 8) {
          // Housekeeping's listing of the running pods, through the same list caches.
          assert.deepEqual(
            canonical(cachedGetPods(false)),
            canonical(freshGetPods(false)),
            `running, step ${step}`,
          );
        }
      }
      failing = new Set(r() < 0.15 ? [uidOf()] : []);
      if (r() < 0.5) {
        const a = cachedGetPods(true);
        const b = freshGetPods(true);
        assert.deepEqual(canonical(a), canonical(b), `all, step ${step}`);
        for (let i = 1; i < a.length; i++) {
          const at = (p: RunningPod) => p.sandboxes[p.sandboxes.length - 1]?.createdAtNs ?? 0;
          assert.ok(at(a[i - 1]!) >= at(a[i]!), `newest first, step ${step}`);
        }
      }
      cached.clock.advance(1000);
      fresh.clock.advance(1000);
      await cached.pleg.relist();
      await fresh.pleg.relist();
      assert.deepEqual(drain(cached.pleg), drain(fresh.pleg), `events, step ${step}`);
      for (const uid of ['p0', 'p1', 'p2', 'p3', 'p4', 'p5']) {
        const x = cached.cache.get(uid);
        const y = fresh.cache.get(uid);
        assert.deepEqual(
          x.status.containerStatuses.map((c) => `${c.id} ${c.state}`).sort(),
          y.status.containerStatuses.map((c) => `${c.id} ${c.state}`).sort(),
          `cache ${uid}, step ${step}`,
        );
        assert.equal(!!x.error, !!y.error, `cache error ${uid}, step ${step}`);
      }
    }
  });
}

test('a corrupted list answer throws, or its unchanged items are what their fields other than the maps say', () => {
  const r = rng(99);
  const cache = new ListItemCache((b) => containerFromCri(CriContainer.decode(b)), new Set([8, 9]));
  const items: SimContainer[] = Array.from({ length: 5 }, (_, i) => ({
    id: `c${i}`,
    uid: `p${i}`,
    sandboxId: `sb${i}`,
    name: 'app',
    state: ContainerState.CONTAINER_RUNNING,
    createdAt: 5n,
  }));
  let fastPath = 0;
  for (let n = 0; n < 5000; n++) {
    const bytes = Buffer.from(encodeContainers(items, r));
    const before = new Set<unknown>(cache.decodeList(bytes, true));
    const flips = 1 + Math.floor(r() * 3);
    for (let k = 0; k < flips; k++) bytes[Math.floor(r() * bytes.length)] = Math.floor(r() * 256);
    let out: unknown[] | undefined;
    try {
      out = cache.decodeList(bytes, r() < 0.5);
    } catch {
      continue;
    }
    // Decoded: each item must be what a decode of its fields other than the maps gives, the maps
    // framed by their own lengths (a map entry's inner lengths are not the cache's business).
    let plain: CriContainer[];
    try {
      plain = itemsWithoutMaps(bytes).map((b) => CriContainer.decode(b));
    } catch {
      continue;
    }
    if (plain.length !== out.length) continue;
    out.forEach((item, i) => {
      // Only the fast path is the cache's: an item decoded anew is the decoder's reading.
      if (!before.has(item)) return;
      fastPath++;
      const want = containerFromCri(plain[i]!);
      const got = item as ReturnType<typeof containerFromCri>;
      assert.deepEqual(
        { ...got, labels: undefined, annotations: undefined },
        { ...want, labels: undefined, annotations: undefined },
        `iteration ${n}`,
      );
    });
  }
  assert.ok(fastPath > 1000, `${fastPath} unchanged items checked`);
});

/** A varint, for the test's own walk of an answer. */
function varint(b: Buffer, at: { pos: number }): number {
  let v = 0;
  for (let scale = 1, i = 0; i < 5; i++, scale *= 128) {
    if (at.pos >= b.length) throw new Error('short');
    const x = b[at.pos++]!;
    v += (x & 0x7f) * scale;
    if (x < 0x80) return v;
  }
  throw new Error('long');
}

function fields(
  b: Buffer,
  from: number,
  to: number,
): { tag: number; start: number; end: number; bodyStart: number }[] {
  const out = [];
  const at = { pos: from };
  while (at.pos < to) {
    const start = at.pos;
    const tag = varint(b, at);
    const wt = tag & 7;
    if (wt === 0) varint(b, at);
    else if (wt === 1) at.pos += 8;
    else if (wt === 5) at.pos += 4;
    else if (wt === 2) {
      const len = varint(b, at);
      const bodyStart = at.pos;
      at.pos += len;
      if (at.pos > to) throw new Error('over');
      out.push({ tag, start, end: at.pos, bodyStart });
      continue;
    } else throw new Error('wt');
    if (at.pos > to) throw new Error('over');
    out.push({ tag, start, end: at.pos, bodyStart: at.pos });
  }
  return out;
}

function itemsWithoutMaps(answer: Buffer): Buffer[] {
  return fields(answer, 0, answer.length)
    .filter((f) => f.tag === 0x0a)
    .map((item) =>
      Buffer.concat(
        fields(answer, item.bodyStart, item.end)
          .filter((f) => f.tag >>> 3 !== 8 && f.tag >>> 3 !== 9)
          .map((f) => answer.subarray(f.start, f.end)),
      ),
    );
}
