import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, PodSandbox } from '../../../src/cri/types.js';
import type { RunningPod } from '../../../src/kuberuntime/types.js';
import { RunningPodAssembler } from '../../../src/kuberuntime/running-pods.js';

function sandbox(uid: string, createdAt: number, state: PodSandbox['state'] = 'SANDBOX_READY'): PodSandbox {
  return {
    id: `sb-${uid}-${createdAt}`,
    metadata: { name: `pod-${uid}`, namespace: 'ns', uid, attempt: 0 },
    state,
    createdAt,
    labels: {},
    annotations: {},
    runtimeHandler: '',
  };
}

function container(uid: string, name: string, state: Container['state'] = 'CONTAINER_RUNNING'): Container {
  return {
    id: `c-${uid}-${name}`,
    podSandboxId: `sb-${uid}`,
    metadata: { name, attempt: 0 },
    image: { image: 'busybox' },
    imageRef: 'sha256:abc',
    state,
    createdAt: 5,
    labels: {
      'io.kubernetes.pod.uid': uid,
      'io.kubernetes.pod.name': `pod-${uid}`,
      'io.kubernetes.pod.namespace': 'ns',
      'io.kubernetes.container.name': name,
    },
    annotations: {
      'io.kubernetes.container.hash': '00ab',
      'io.kubernetes.pod.terminationGracePeriod': '7',
    },
  };
}

/** What the list cache hands out: frozen items, the maps inside included. */
function frozen<T extends object>(item: T): T {
  for (const value of Object.values(item)) if (typeof value === 'object' && value) Object.freeze(value);
  return Object.freeze(item);
}

describe('RunningPodAssembler', () => {
  it('groups sandboxes and containers into pods, newest sandbox first', () => {
    const pods = new RunningPodAssembler().assemble(
      [sandbox('a', 100), sandbox('b', 300, 'SANDBOX_NOTREADY')],
      [container('a', 'app', 'CONTAINER_EXITED'), container('c', 'orphan', 'CONTAINER_CREATED')],
    );
    assert.deepEqual(pods, [
      {
        uid: 'b',
        name: 'pod-b',
        namespace: 'ns',
        sandboxes: [{ id: 'sb-b-300', state: 'notready', createdAtMs: 0, createdAtNs: 300 }],
        containers: [],
      },
      {
        uid: 'a',
        name: 'pod-a',
        namespace: 'ns',
        terminationGracePeriodSeconds: 7,
        sandboxes: [{ id: 'sb-a-100', state: 'ready', createdAtMs: 0, createdAtNs: 100 }],
        containers: [
          {
            id: 'c-a-app',
            name: 'app',
            image: 'busybox',
            imageRef: 'sha256:abc',
            hash: 'ab',
            podSandboxId: 'sb-a',
            state: 'exited',
          },
        ],
      },
      {
        // A container whose sandbox is gone is still a pod (its name and UID from its labels).
        uid: 'c',
        name: 'pod-c',
        namespace: 'ns',
        terminationGracePeriodSeconds: 7,
        sandboxes: [],
        containers: [
          {
            id: 'c-c-orphan',
            name: 'orphan',
            image: 'busybox',
            imageRef: 'sha256:abc',
            hash: 'ab',
            podSandboxId: 'sb-c',
            state: 'created',
          },
        ],
      },
    ]);
    for (const pod of pods) {
      assert.ok(Object.isFrozen(pod) && Object.isFrozen(pod.sandboxes) && Object.isFrozen(pod.containers));
    }
  });

  it('hands back the same pod while its listed items are the same objects', () => {
    const assembler = new RunningPodAssembler();
    const sandboxes = [frozen(sandbox('a', 1)), frozen(sandbox('b', 2))];
    const containers = [frozen(container('a', 'app')), frozen(container('b', 'app'))];
    const [b1, a1] = assembler.assemble(sandboxes, containers);
    const [b2, a2] = assembler.assemble([...sandboxes], [...containers]);
    assert.equal(a2, a1);
    assert.equal(b2, b1);

    // b's container changed (the list cache made a new object for it): only b is new.
    const [b3, a3] = assembler.assemble(sandboxes, [
      containers[0]!,
      frozen(container('b', 'app', 'CONTAINER_EXITED')),
    ]);
    assert.equal(a3, a1);
    assert.notEqual(b3, b1);
    assert.equal(b3!.containers[0]!.state, 'exited');
    // Its sandbox, unchanged, is the same converted object.
    assert.equal(b3!.sandboxes[0], b1!.sandboxes[0]);
  });

  it('a pod that lost an item is a new pod', () => {
    const assembler = new RunningPodAssembler();
    const sb = frozen(sandbox('a', 1));
    const app = frozen(container('a', 'app'));
    const [before] = assembler.assemble([sb], [app, frozen(container('a', 'sidecar'))]);
    const [after] = assembler.assemble([sb], [app]);
    assert.notEqual(after, before);
    assert.deepEqual(
      after!.containers.map((c) => c.name),
      ['app'],
    );
  });

  it('a change in the middle keeps the items before and after it', () => {
    const assembler = new RunningPodAssembler();
    const sb = frozen(sandbox('a', 1));
    const [one, two, three] = ['one', 'two', 'three'].map((name) => frozen(container('a', name)));
    const [before] = assembler.assemble([sb], [one!, two!, three!]);
    const [after] = assembler.assemble(
      [sb],
      [one!, frozen(container('a', 'two', 'CONTAINER_EXITED')), three!],
    );
    assert.notEqual(after, before);
    assert.deepEqual(
      after!.containers.map((c) => `${c.name} ${c.state}`),
      ['one running', 'two exited', 'three running'],
    );
    assert.equal(after!.containers[0], before!.containers[0]);
    assert.equal(after!.containers[2], before!.containers[2]);
    // A pod with one more item than before is new too, its first items the same objects.
    const [more] = assembler.assemble([sb], [one!, two!, three!, frozen(container('a', 'four'))]);
    assert.equal(more!.containers.length, 4);
    assert.equal(more!.containers[0], before!.containers[0]);
  });

  it('a listing of the very items of the last one, in any order, is the last result itself', () => {
    const assembler = new RunningPodAssembler();
    const sandboxes = [frozen(sandbox('a', 1)), frozen(sandbox('b', 2))];
    const containers = [frozen(container('a', 'app')), frozen(container('b', 'app'))];
    const first = assembler.assemble(sandboxes, containers);
    // containerd lists its items in another order each time (it ranges over Go maps).
    const second = assembler.assemble([...sandboxes].reverse(), [...containers].reverse());
    assert.equal(second, first);
    assert.ok(Object.isFrozen(second));
    assert.deepEqual(
      second.map((p) => p.uid),
      ['b', 'a'],
    );
  });

  it('puts together again only the pods with a new item, the others as they were, newest first', () => {
    const assembler = new RunningPodAssembler();
    const uids = ['p1', 'p2', 'p3', 'p4', 'p5'];
    const sandboxes = uids.map((uid, i) => frozen(sandbox(uid, 10 * (i + 1))));
    const containers = uids.map((uid) => frozen(container(uid, 'app')));
    const before = assembler.assemble(sandboxes, containers);
    assert.deepEqual(
      before.map((p) => p.uid),
      ['p5', 'p4', 'p3', 'p2', 'p1'],
    );
    const byUid = (pods: readonly RunningPod[]) => new Map(pods.map((p) => [p.uid, p]));

    // p3's container exited (a new object from the list cache), and p0 is new with the newest sandbox.
    containers[2] = frozen(container('p3', 'app', 'CONTAINER_EXITED'));
    const after = assembler.assemble(
      [...sandboxes, frozen(sandbox('p0', 60)), frozen(sandbox('p6', 25))],
      [...containers, frozen(container('p0', 'app'))],
    );
    assert.deepEqual(
      after.map((p) => p.uid),
      ['p0', 'p5', 'p4', 'p3', 'p6', 'p2', 'p1'],
    );
    const was = byUid(before);
    const now = byUid(after);
    for (const uid of ['p1', 'p2', 'p4', 'p5']) assert.equal(now.get(uid), was.get(uid), uid);
    assert.notEqual(now.get('p3'), was.get('p3'));
    assert.equal(now.get('p3')!.containers[0]!.state, 'exited');
    assert.equal(now.get('p3')!.sandboxes[0], was.get('p3')!.sandboxes[0]);
    assert.deepEqual(now.get('p6')!.containers, []);
  });

  it('an item gone from a pod with nothing new makes that pod anew, and a pod gone goes', () => {
    const assembler = new RunningPodAssembler();
    const [sa, sb, sc] = [frozen(sandbox('a', 1)), frozen(sandbox('b', 2)), frozen(sandbox('c', 3))];
    const [ca, cb, cbDead, cc] = [
      frozen(container('a', 'app')),
      frozen(container('b', 'app')),
      frozen(container('b', 'old', 'CONTAINER_EXITED')),
      frozen(container('c', 'app')),
    ];
    const before = assembler.assemble([sa, sb, sc], [ca, cb, cbDead, cc]);
    // The GC removed b's dead container, and everything of c is gone; nothing is new.
    const after = assembler.assemble([sa, sb], [ca, cb]);
    assert.deepEqual(
      after.map((p) => `${p.uid}: ${p.containers.map((c) => c.name).join(',')}`),
      ['b: app', 'a: app'],
    );
    assert.equal(after[1], before[2], 'a is as it was');
    assert.notEqual(after[0], before[1]);
    // And a pod that both lost an item and has a new one.
    const cbNew = frozen(container('b', 'app', 'CONTAINER_EXITED'));
    const last = assembler.assemble([sa, sb], [ca, cbNew]);
    assert.equal(last[1], after[1]);
    assert.deepEqual(
      last[0]!.containers.map((c) => `${c.name} ${c.state}`),
      ['app exited'],
    );
  });

  it('converts items that are not frozen every time (an object that can change is not kept)', () => {
    const assembler = new RunningPodAssembler();
    const sb = sandbox('a', 1);
    const app = container('a', 'app');
    const [first] = assembler.assemble([sb], [app]);
    app.state = 'CONTAINER_EXITED';
    sb.state = 'SANDBOX_NOTREADY';
    const [second] = assembler.assemble([sb], [app]);
    assert.notEqual(second, first);
    assert.equal(second!.containers[0]!.state, 'exited');
    assert.equal(second!.sandboxes[0]!.state, 'notready');
  });
});
