/**
 * A container's command and args against its image's Entrypoint and Cmd, as
 * upstream's node conformance "Containers" cases (test/e2e/common/node/containers.go) check them.
 * The kubelet hands command and args to the runtime as they are; the runtime combines them with the
 * image: command replaces the Entrypoint and drops the Cmd, args replace only the Cmd.
 *
 * The image comes from a real registry on loopback (scripts/registry.sh), pushed from the offline
 * busybox layout with an Entrypoint and a Cmd of its own.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Container, Pod } from '../../src/api/core-v1.js';
import { makePod, StandaloneNode } from '../helpers/conformance.js';
import { TestRegistry } from '../helpers/conformance-registry.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { freePort } from '../helpers/ports.js';

const ns = `it-conf-cmd-${process.pid}`;

describe('conformance: command and args against the image', () => {
  let registry: TestRegistry;
  let image: string;
  let node: StandaloneNode | undefined;

  before(async () => {
    registry = await TestRegistry.start(await freePort());
    // `sh -c 'echo …' $0 $@`: the output names what the runtime ran, the image's parts or the pod's.
    ({ ref: image } = await registry.push(
      'busybox',
      'docker.io/library/busybox:latest',
      'tsk/entrypoint',
      'v1',
      {
        Entrypoint: ['/bin/sh', '-c', 'echo "entrypoint ran with: $0 $*"'],
        Cmd: ['image-cmd-0', 'image-cmd-1'],
      },
    ));
  });

  afterEach(async () => {
    await node?.dispose();
    node = undefined;
  });

  after(async () => {
    const cri = await CriInspector.connect();
    await cri.conn.images.removeImage({ image }).catch(() => undefined);
    cri.close();
    await registry.stop();
  });

  function tester(name: string, extra: Partial<Container>): Pod {
    return makePod(ns, name, {
      restartPolicy: 'Never',
      containers: [{ name: 'tester', image, imagePullPolicy: 'IfNotPresent', ...extra }],
    });
  }

  test('the image defaults run when command and args are blank; args replace Cmd; command replaces both', async () => {
    const n = (node = await StandaloneNode.start(ns));
    const cases: { name: string; spec: Partial<Container>; output: string }[] = [
      { name: 'defaults', spec: {}, output: 'entrypoint ran with: image-cmd-0 image-cmd-1\n' },
      {
        name: 'args-only',
        spec: { args: ['pod-arg-0', 'pod-arg-1'] },
        output: 'entrypoint ran with: pod-arg-0 pod-arg-1\n',
      },
      { name: 'command-only', spec: { command: ['/bin/echo', 'pod-command'] }, output: 'pod-command\n' },
      {
        name: 'command-and-args',
        spec: { command: ['/bin/echo', 'pod-command'], args: ['pod-arg-0', 'pod-arg-1'] },
        output: 'pod-command pod-arg-0 pod-arg-1\n',
      },
    ];
    for (const c of cases) await n.createPod(tester(c.name, c.spec));
    for (const c of cases) {
      const done = await n.waitPod(c.name, 'Succeeded', (p) => p.status?.phase === 'Succeeded', 90_000);
      assert.equal(await n.logs(done, 'tester'), c.output, c.name);
      const cs = done.status?.containerStatuses?.[0];
      assert.equal(cs?.state?.terminated?.reason, 'Completed', c.name);
      assert.equal(cs?.image, image, c.name);
    }
  });
});
