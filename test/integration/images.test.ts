/**
 * Images through the built kubelet and real containerd, with a private registry on loopback
 * (Debian's docker-registry, scripts/registry.sh):
 * - a 64 MiB image, its blob downloads slowed by a proxy so the pull takes seconds, shows
 *   its progress (bytes done growing before the pull ends, read from containerd's content store),
 *   and the Pulled event carries its size and duration as upstream's does;
 * - image garbage collection over the high threshold (set under the disk's current usage,
 *   so it trips at once and deterministically) removes an unused image and keeps the sandbox
 *   (pause) image and the images pods use.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { statfs } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { Pod } from '../../src/api/core-v1.js';
import { BUSYBOX, busybox, makePod } from '../helpers/conformance.js';
import { PullRecorder, tarWithOneFile, TestRegistry } from '../helpers/conformance-registry.js';
import { CriInspector } from '../helpers/cri-inspect.js';
import { KubeletProcess } from '../helpers/kubelet-process.js';
import { freePort } from '../helpers/ports.js';
import { restoreStackImages } from '../helpers/stack-images.js';
import { waitFor } from '../helpers/wait.js';

const ns = `it-images-${process.pid}`;
const Mi = 1024 * 1024;
const LAYER_BYTES = 64 * Mi;
/** About 3 s for the large layer. */
const BLOB_BYTES_PER_SECOND = 20 * Mi;
const SANDBOX_IMAGE = 'registry.k8s.io/pause:3.9';

interface LogLine {
  msg: string;
  kv: string;
}

/** The kubelet's text log lines: `I1125 23:10:47.123 <pid> <component>] "<msg>" k=v …`. */
function logLines(text: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of text.split('\n')) {
    const m = /^[IWE]\d{4} [\d:.]+ \d+ [\w-]+\] ("(?:[^"\\]|\\.)*")(.*)$/.exec(line);
    if (m) out.push({ msg: JSON.parse(m[1] as string) as string, kv: m[2] ?? '' });
  }
  return out;
}

function kvNumber(kv: string, key: string): number {
  return Number(new RegExp(` ${key}=(\\d+)`).exec(kv)?.[1] ?? NaN);
}

function pod(name: string, image: string, imagePullPolicy: 'IfNotPresent' | 'Always' = 'IfNotPresent'): Pod {
  return makePod(ns, name, {
    containers: [{ name: 'c', image, imagePullPolicy, command: ['sh', '-c', 'exec sleep 3600'] }],
  });
}

describe('images: pull progress and image garbage collection', () => {
  let registry: TestRegistry;
  let proxy: PullRecorder;
  let cri: CriInspector;
  let kubelet: KubeletProcess;
  let bigImage: string;
  let unusedImage: string;

  before(async () => {
    cri = await CriInspector.connect();
    registry = await TestRegistry.start(await freePort());
    proxy = await PullRecorder.start(registry, 0, BLOB_BYTES_PER_SECOND);
    const layer = tarWithOneFile('big.bin', randomBytes(LAYER_BYTES));
    bigImage = (
      await registry.push('busybox', 'docker.io/library/busybox:latest', `tsk/big-${process.pid}`, 'v1', {}, [
        layer,
      ])
    ).ref.replace(registry.host, proxy.host);
    unusedImage = (
      await registry.push('busybox', 'docker.io/library/busybox:latest', `tsk/unused-${process.pid}`, 'v1')
    ).ref;
    // --v=4: the tracker logs every poll of the content store, not only every few seconds.
    kubelet = new KubeletProcess({ extraArgs: ['--v=4'] });
    await kubelet.start();
  });

  after(async () => {
    await kubelet?.dispose();
    await cri.removeNamespace(ns);
    for (const image of [bigImage, unusedImage])
      if (image) await cri.conn.images.removeImage({ image }).catch(() => undefined);
    cri.close();
    await proxy?.close();
    await registry?.stop();
    // Image GC removes every unused image, the stack's busybox tags among them.
    await restoreStackImages();
  });

  test('a large pull reports growing bytes before it ends; Pulled says its size and duration', async () => {
    await kubelet.writeManifest('big.json', pod('big', bigImage));
    await kubelet.writeManifest(
      'keeper.json',
      makePod(ns, 'keeper', { containers: [busybox('c', 'exec sleep 3600')] }),
    );
    await waitFor(
      'big and keeper to run',
      async () =>
        (await kubelet.pod('big'))?.status?.phase === 'Running' &&
        (await kubelet.pod('keeper'))?.status?.phase === 'Running',
      60_000,
      250,
    );
    const lines = logLines(await kubelet.logs());
    const progress = lines
      .filter((l) => l.msg === 'Image pull progress' && l.kv.includes(` image=${JSON.stringify(bigImage)}`))
      .map((l) => ({ done: kvNumber(l.kv, 'bytesDone'), total: kvNumber(l.kv, 'bytesTotal') }));
    const midway = progress.filter((p) => p.done > 0 && p.done < LAYER_BYTES);
    assert.ok(
      midway.length >= 2,
      `at least two readings while the layer downloads: ${JSON.stringify(progress)}`,
    );
    const first = midway[0]!;
    const last = midway[midway.length - 1]!;
    assert.ok(last.done > first.done, `bytes done grew: ${JSON.stringify(midway)}`);
    assert.ok(last.total >= LAYER_BYTES, `the total names the layer: ${JSON.stringify(last)}`);

    const pulled = lines.find((l) =>
      l.msg.startsWith(`Successfully pulled image ${JSON.stringify(bigImage)}`),
    );
    assert.ok(pulled, 'a Pulled event for the large image');
    const m =
      /^Successfully pulled image ".*" in (\S+) \((\S+) including waiting\)\. Image size: (\d+) bytes\.$/.exec(
        pulled.msg,
      );
    assert.ok(m, pulled.msg);
    assert.ok(Number(m[3]) > LAYER_BYTES, `image size ${m[3]} counts the 64 MiB layer`);
    assert.match(m[1] as string, /^\d+(\.\d+)?s$/, 'took seconds, as Go prints a duration');
  });

  test('image GC over the high threshold removes an unused image, keeps the pause image and images in use', async () => {
    const fs = await statfs(kubelet.rootDir);
    const usagePercent = 100 - Math.trunc((fs.bavail * 100) / fs.blocks);
    // The high threshold must be under the current usage for GC to act.
    assert.ok(usagePercent > 1, `the image filesystem is ${usagePercent}% used`);
    const unusedId = await cri.conn.images.pullImage({ image: unusedImage }, undefined, undefined);
    const present = async (image: string) => (await cri.conn.images.imageStatus({ image }))?.id;
    const keptIds = new Map<string, string | undefined>();
    for (const image of [SANDBOX_IMAGE, BUSYBOX, bigImage]) keptIds.set(image, await present(image));
    for (const [image, id] of keptIds) assert.ok(id, `${image} is there before GC`);

    // A restart with a high threshold under the current usage: its first pass, at start, trips it.
    // The pods keep running across the restart, so their images are in use when that pass looks,
    // and images already there count as old (upstream), so imageMinimumGCAge does not hold it back.
    await kubelet.stop();
    kubelet.setExtraConfig(['imageGCHighThresholdPercent: 1', 'imageGCLowThresholdPercent: 0']);
    const logStart = (await kubelet.logs()).length;
    await kubelet.start();
    await waitFor(
      'the unused image to be removed',
      async () => (await present(unusedImage)) === undefined,
      30_000,
      250,
    ).catch(async (err: Error) => {
      const gcLines = (await kubelet.logs())
        .slice(logStart)
        .split('\n')
        .filter((l) => / images\]|imageGC|garbage/i.test(l));
      throw new Error(`${err.message}\n--- image GC log ---\n${gcLines.join('\n').slice(-4000)}`);
    });
    for (const [image, id] of keptIds) assert.equal(await present(image), id, `${image} is kept`);
    const removed = logLines((await kubelet.logs()).slice(logStart))
      .filter((l) => l.msg === 'Removing image to free bytes')
      .map((l) => /imageID="([^"]+)"/.exec(l.kv)?.[1]);
    assert.ok(removed.includes(unusedId), `removed ${JSON.stringify(removed)} includes ${unusedId}`);
    for (const id of keptIds.values()) assert.ok(!removed.includes(id), `${id} was not removed`);
    await waitFor(
      'big to run on after the restart',
      async () => (await kubelet.pod('big'))?.status?.phase === 'Running',
      20_000,
      250,
    );
  });
});
