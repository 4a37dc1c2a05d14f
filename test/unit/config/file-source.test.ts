import assert from 'node:assert/strict';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';

import { FileSource, type FileSourceOptions } from '../../../src/config/file-source.js';
import { PodConfig, type SourceUpdate } from '../../../src/config/pod-config.js';
import { FakeClock } from '../../../src/lib/clock.js';
import type { Logger } from '../../../src/lib/log.js';
import { waitFor } from '../../helpers/wait.js';

function manifest(name: string, image = 'busybox:1.36'): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n  - name: main\n    image: ${image}\n`;
}

describe('FileSource', () => {
  let dir: string;
  let clock: FakeClock;
  let sent: SourceUpdate[];
  let logs: { level: string; msg: string; kv?: Record<string, unknown> }[];
  let source: FileSource | undefined;
  let log: Logger;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'static-pods-'));
    clock = new FakeClock();
    sent = [];
    logs = [];
    log = {
      info: (msg, kv) => logs.push({ level: 'info', msg, kv }),
      warn: (msg, kv) => logs.push({ level: 'warn', msg, kv }),
      error: (msg, kv) => logs.push({ level: 'error', msg, kv }),
      v: () => undefined,
      enabled: () => false,
    };
  });

  afterEach(() => {
    source?.stop();
    source = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  function newSource(overrides: Partial<FileSourceOptions> = {}): FileSource {
    source = new FileSource({
      path: dir,
      nodeName: 'node-a',
      periodMs: 20_000,
      send: (u) => sent.push(u),
      clock,
      log,
      watch: false,
      ...overrides,
    });
    return source;
  }

  const names = (u: SourceUpdate | undefined) => (u?.pods ?? []).map((p) => p.metadata.name).sort();
  const last = () => sent[sent.length - 1];
  const errors = () => logs.filter((l) => l.level === 'error');

  test('sends the folder’s pods as one SET, YAML and JSON alike', async () => {
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    writeFileSync(
      join(dir, 'b.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'b' },
        spec: { containers: [{ name: 'c', image: 'i:1' }] },
      }),
    );
    await newSource().rescan();
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.op, 'SET');
    assert.deepEqual(names(sent[0]), ['a-node-a', 'b-node-a']);
    const a = sent[0]!.pods.find((p) => p.metadata.name === 'a-node-a')!;
    assert.equal(a.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    assert.equal(a.spec.nodeName, 'node-a');
  });

  test('an empty or missing folder is an empty SET, so the source counts as seen', async () => {
    await newSource().rescan();
    assert.deepEqual(sent, [{ op: 'SET', pods: [] }]);

    sent = [];
    source!.stop();
    await newSource({ path: join(dir, 'does-not-exist') }).rescan();
    assert.deepEqual(sent, [{ op: 'SET', pods: [] }]);
    assert.equal(logs.filter((l) => l.msg === 'Path does not exist, ignoring').length, 1);
    await source!.rescan();
    assert.equal(
      logs.filter((l) => l.msg === 'Path does not exist, ignoring').length,
      1,
      'logged once, not every rescan',
    );
  });

  test('add, edit and remove are seen on the next rescan; unchanged rescans send nothing', async () => {
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    const s = newSource();
    await s.rescan();
    const uidA = sent[0]!.pods[0]!.metadata.uid;

    await s.rescan();
    assert.equal(sent.length, 1, 'nothing changed, nothing sent');

    writeFileSync(join(dir, 'b.yaml'), manifest('b'));
    await s.rescan();
    assert.deepEqual(names(last()), ['a-node-a', 'b-node-a']);

    writeFileSync(join(dir, 'a.yaml'), manifest('a', 'busybox:1.37'));
    await s.rescan();
    const editedA = last()!.pods.find((p) => p.metadata.name === 'a-node-a')!;
    assert.equal(editedA.spec.containers[0]!.image, 'busybox:1.37');
    assert.notEqual(editedA.metadata.uid, uidA, 'new content, new UID');

    rmSync(join(dir, 'b.yaml'));
    await s.rescan();
    assert.deepEqual(names(last()), ['a-node-a']);
    assert.equal(sent.length, 4);
  });

  test('the periodic rescan runs every periodMs on the clock', async () => {
    newSource().start();
    await waitFor('first scan', () => sent.length === 1, 2000, 5);
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    clock.advance(19_999);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(sent.length, 1, 'not before the period');
    clock.advance(1);
    await waitFor('rescan after the period', () => sent.length === 2, 2000, 5);
    assert.deepEqual(names(last()), ['a-node-a']);
  });

  test('a UID is the same after a restart of the source (and of the kubelet)', async () => {
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    await newSource().rescan();
    source!.stop();
    await newSource().rescan();
    assert.equal(sent.length, 2);
    assert.equal(sent[0]!.pods[0]!.metadata.uid, sent[1]!.pods[0]!.metadata.uid);
  });

  test('dotfiles and subfolders are ignored; a subfolder is reported once', async () => {
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    writeFileSync(join(dir, '.a.yaml.swp'), 'garbage');
    writeFileSync(join(dir, '.hidden.yaml'), manifest('hidden'));
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'c.yaml'), manifest('c'));
    const s = newSource();
    await s.rescan();
    await s.rescan();
    assert.deepEqual(names(sent[0]), ['a-node-a']);
    assert.equal(errors().length, 1);
    assert.equal(errors()[0]!.msg, 'Not recursing into manifest path');
  });

  test('a broken file: one error naming the file and the problem; the other pods keep running', async () => {
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    writeFileSync(join(dir, 'b.yaml'), manifest('b'));
    const s = newSource();
    await s.rescan();
    assert.deepEqual(names(last()), ['a-node-a', 'b-node-a']);

    writeFileSync(
      join(dir, 'b.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\nspec:\n  containers:\n  - name: main\n',
    );
    await s.rescan();
    assert.deepEqual(names(last()), ['a-node-a'], 'the broken file’s pod leaves the set, as upstream');
    assert.equal(errors().length, 1);
    assert.equal(errors()[0]!.msg, 'Could not process manifest file');
    assert.equal(errors()[0]!.kv?.path, join(dir, 'b.yaml'));
    assert.match(String(errors()[0]!.kv?.err), /spec\.containers\[0\]\.image: Required value/);

    await s.rescan();
    await s.rescan();
    assert.equal(errors().length, 1, 'not repeated while the file is unchanged');

    // Touching it without a change is still no news.
    const later = new Date(Date.now() + 5000);
    utimesSync(join(dir, 'b.yaml'), later, later);
    await s.rescan();
    assert.equal(errors().length, 1);

    writeFileSync(join(dir, 'b.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: [\n');
    await s.rescan();
    assert.equal(errors().length, 2, 'a new problem after a change is reported');

    writeFileSync(join(dir, 'b.yaml'), manifest('b'));
    await s.rescan();
    assert.deepEqual(names(last()), ['a-node-a', 'b-node-a']);
    assert.ok(logs.some((l) => l.msg === 'Manifest file is valid again'));
  });

  test('hostile manifests: each refused with one line naming the file and the field; the good pod runs', async () => {
    const events: { reason: string; message: string; kind: string }[] = [];
    const recorder = {
      event: () => assert.fail('a broken file is told on the node'),
      eventFor: (ref: { kind: string }, _type: string, reason: string, message: string) =>
        events.push({ reason, message, kind: ref.kind }),
    };
    writeFileSync(join(dir, 'good.yaml'), manifest('good'));
    writeFileSync(
      join(dir, 'probe.yaml'),
      manifest('probe') + '    livenessProbe: { exec: { command: ["true"] }, periodSeconds: -1 }\n',
    );
    writeFileSync(
      join(dir, 'uid.yaml'),
      manifest('uid').replace('  name: uid', '  name: uid\n  uid: ../../x'),
    );
    writeFileSync(join(dir, 'types.yaml'), manifest('types') + '    command: sleep 3600\n');
    writeFileSync(join(dir, 'host.yaml'), manifest('host') + '  hostNetwork: "yes"\n');
    await newSource({ recorder }).rescan();
    assert.deepEqual(names(last()), ['good-node-a']);
    const byFile = new Map(errors().map((e) => [String(e.kv?.path), String(e.kv?.err)]));
    assert.equal(errors().length, 4, JSON.stringify(errors()));
    assert.match(
      byFile.get(join(dir, 'probe.yaml'))!,
      /spec\.containers\[0\]\.livenessProbe\.periodSeconds: Invalid value: -1/,
    );
    assert.match(byFile.get(join(dir, 'uid.yaml'))!, /metadata\.uid: Invalid value: "\.\.\/\.\.\/x"/);
    assert.match(
      byFile.get(join(dir, 'types.yaml'))!,
      /spec\.containers\[0\]\.command: Invalid type: expected list, got string/,
    );
    assert.match(
      byFile.get(join(dir, 'host.yaml'))!,
      /spec\.hostNetwork: Invalid type: expected boolean, got string/,
    );
    assert.equal(events.length, 4, 'one event per refused file');
    assert.ok(events.every((e) => e.reason === 'FailedValidation' && e.kind === 'Node'));
    assert.ok(events.some((e) => e.message.includes(join(dir, 'uid.yaml'))));
    await source!.rescan();
    assert.equal(errors().length, 4, 'not repeated by later scans');
    assert.equal(events.length, 4);
  });

  test('a file larger than 10 MB is refused without reading it all; a large valid one is decoded', async () => {
    const big = join(dir, 'big.yaml');
    writeFileSync(big, manifest('big'));
    truncateSync(big, 10 * 1024 * 1024 + 1);
    // A valid manifest of about 200 KB: decoded in a worker thread.
    const env = Array.from(
      { length: 3000 },
      (_, i) => `    - { name: V${i}, value: "${'x'.repeat(40)}" }`,
    ).join('\n');
    writeFileSync(join(dir, 'large.yaml'), `${manifest('large')}    env:\n${env}\n`);
    await newSource().rescan();
    assert.deepEqual(names(last()), ['large-node-a']);
    assert.equal(last()!.pods[0]!.spec.containers[0]!.env?.length, 3000);
    assert.equal(errors().length, 1);
    assert.equal(errors()[0]!.kv?.path, big);
    assert.match(String(errors()[0]!.kv?.err), /larger than the 10485760 bytes a manifest may have/);
  });

  test('dangling symlinks and symlink loops: one line each, again only when their state changes', async () => {
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    symlinkSync(join(dir, 'missing.yaml'), join(dir, 'dangling.yaml'));
    symlinkSync(join(dir, 'loop2.yaml'), join(dir, 'loop1.yaml'));
    symlinkSync(join(dir, 'loop1.yaml'), join(dir, 'loop2.yaml'));
    const s = newSource();
    await s.rescan();
    await s.rescan();
    assert.deepEqual(names(last()), ['a-node-a']);
    const lines = () =>
      errors()
        .map((e) => `${e.msg} ${String(e.kv?.path)}`)
        .sort();
    assert.deepEqual(lines(), [
      `Manifest path is a dangling symlink, ignoring ${join(dir, 'dangling.yaml')}`,
      `Manifest path is a symlink loop, ignoring ${join(dir, 'loop1.yaml')}`,
      `Manifest path is a symlink loop, ignoring ${join(dir, 'loop2.yaml')}`,
    ]);
    // The target appears: the link is a manifest now. It breaks again: reported again, once.
    writeFileSync(join(dir, 'missing.yaml'), manifest('b'));
    await s.rescan();
    assert.deepEqual(names(last()), ['a-node-a', 'b-node-a']);
    unlinkSync(join(dir, 'missing.yaml'));
    await s.rescan();
    await s.rescan();
    assert.equal(errors().filter((e) => e.kv?.path === join(dir, 'dangling.yaml')).length, 2);
  });

  test('two files with one pod name: the first file wins; the line names both files, once', async () => {
    writeFileSync(join(dir, 'a.yaml'), manifest('web'));
    writeFileSync(join(dir, 'b.yaml'), manifest('web', 'busybox:1.35'));
    const events: string[] = [];
    const s = newSource({
      recorder: {
        event: (pod, fieldPath, type, reason, message) =>
          events.push(`${pod.metadata.name}|${fieldPath}|${type}|${reason}|${message}`),
        eventFor: () => assert.fail('the event is about the pod'),
      },
    });
    await s.rescan();
    await s.rescan();
    assert.equal(last()!.pods.length, 1);
    assert.equal(last()!.pods[0]!.spec.containers[0]!.image, 'busybox:1.36');
    assert.equal(errors().length, 1);
    assert.match(
      errors()[0]!.msg,
      /duplicate pod name web-node-a_default: file .*b\.yaml is ignored, file .*a\.yaml declares it first/,
    );
    assert.equal(errors()[0]!.kv?.path, join(dir, 'b.yaml'));
    // Upstream's PodConfig words it so, on the pod it ignores (the one from b.yaml).
    assert.equal(events.length, 1);
    assert.match(
      events[0]!,
      /^web-node-a\|\|Warning\|FailedValidation\|Error validating pod web-node-a_default\([0-9a-f]+\) from file due to duplicate pod name "web-node-a", ignoring$/,
    );
  });

  test('a file of the wrong kind is reported like any broken manifest', async () => {
    writeFileSync(join(dir, 'deploy.yaml'), 'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: d }\n');
    await newSource().rescan();
    assert.deepEqual(sent, [{ op: 'SET', pods: [] }]);
    assert.match(String(errors()[0]?.kv?.err), /expected apiVersion "v1" and kind "Pod"/);
  });

  test('an unreadable file is reported once', async () => {
    const file = join(dir, 'secret.yaml');
    writeFileSync(file, manifest('s'));
    chmodSync(file, 0o000);
    await newSource().rescan();
    chmodSync(file, 0o644);
    // root reads any file; anyone else gets EACCES. Either way nothing is half-reported.
    if (sent[0]!.pods.length === 0) assert.match(String(errors()[0]?.kv?.err), /EACCES/);
    else assert.equal(errors().length, 0);
  });

  test('a rename is a removal and an addition (the path is part of the UID)', async () => {
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    const s = newSource();
    await s.rescan();
    const before = sent[0]!.pods[0]!.metadata.uid;
    renameSync(join(dir, 'a.yaml'), join(dir, 'a2.yaml'));
    await s.rescan();
    assert.equal(sent.length, 2);
    assert.notEqual(last()!.pods[0]!.metadata.uid, before);

    renameSync(join(dir, 'a2.yaml'), join(dir, '.a2.yaml.bak'));
    await s.rescan();
    assert.deepEqual(last(), { op: 'SET', pods: [] });
  });

  test('the path may be a single manifest file; when it breaks, its last good pod stays', async () => {
    const file = join(dir, 'only.yaml');
    writeFileSync(file, manifest('only'));
    const s = newSource({ path: file });
    await s.rescan();
    assert.deepEqual(names(last()), ['only-node-a']);

    writeFileSync(file, 'not: [valid');
    await s.rescan();
    assert.equal(sent.length, 1, 'no SET: the last good pod is kept, as upstream');
    assert.equal(errors().length, 1);

    rmSync(file);
    await s.rescan();
    assert.deepEqual(last(), { op: 'SET', pods: [] });
  });

  test('a folder that appears later is picked up', async () => {
    const later = join(dir, 'later');
    const s = newSource({ path: later + '/' });
    await s.rescan();
    assert.deepEqual(sent, [{ op: 'SET', pods: [] }]);
    mkdirSync(later);
    writeFileSync(join(later, 'a.yaml'), manifest('a'));
    await s.rescan();
    assert.deepEqual(names(last()), ['a-node-a']);
    assert.ok(logs.some((l) => l.msg === 'Manifest path is readable again'));
  });

  test('fs.watch: a change is seen without waiting for the period', async () => {
    const s = newSource({ watch: true, debounceMs: 0 });
    await s.rescan();
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    await waitFor('a SET with the new pod', () => names(last()).includes('a-node-a'), 5000, 10);
    rmSync(join(dir, 'a.yaml'));
    await waitFor('a SET without it', () => last()?.pods.length === 0, 5000, 10);
  });

  test('fs.watch: the files events name are read again, and the set stays whole and in order', async () => {
    writeFileSync(join(dir, 'b.yaml'), manifest('b'));
    writeFileSync(join(dir, 'd.yaml'), manifest('d'));
    const s = newSource({ watch: true, debounceMs: 0 });
    await s.rescan();
    const order = () => (last()?.pods ?? []).map((p) => p.metadata.name);
    // Written aside and renamed in, as the bench and most tools do.
    writeFileSync(join(dir, '.a.tmp'), manifest('a'));
    renameSync(join(dir, '.a.tmp'), join(dir, 'a.yaml'));
    await waitFor('a added', () => order().includes('a-node-a'), 5000, 10);
    assert.deepEqual(order(), ['a-node-a', 'b-node-a', 'd-node-a']);
    writeFileSync(
      join(dir, 'c.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: c\nspec:\n  containers:\n  - name: main\n',
    );
    await waitFor('c reported', () => errors().some((l) => String(l.kv?.path).endsWith('c.yaml')), 5000, 10);
    writeFileSync(join(dir, 'c.yaml'), manifest('c'));
    await waitFor('c fixed', () => order().includes('c-node-a'), 5000, 10);
    assert.deepEqual(order(), ['a-node-a', 'b-node-a', 'c-node-a', 'd-node-a']);
    rmSync(join(dir, 'b.yaml'));
    await waitFor('b gone', () => !order().includes('b-node-a'), 5000, 10);
    // A file replaced by a folder is no pod any more.
    rmSync(join(dir, 'd.yaml'));
    mkdirSync(join(dir, 'd.yaml'));
    await waitFor('d gone', () => !order().includes('d-node-a'), 5000, 10);
    assert.deepEqual(order(), ['a-node-a', 'c-node-a']);
    // A full rescan finds the same set, so it sends nothing.
    const count = sent.length;
    await s.rescan();
    assert.equal(sent.length, count);
  });

  test('fs.watch with debounce: a burst of writes is read after the quiet time', async () => {
    const s = newSource({ watch: true, debounceMs: 100 });
    await s.rescan();
    for (let i = 0; i < 5; i++) writeFileSync(join(dir, `p${i}.yaml`), manifest(`p${i}`));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(sent.length, 1, 'nothing until the debounce timer fires');
    clock.advance(100);
    await waitFor('one SET with all five', () => sent.length === 2, 5000, 10);
    assert.equal(last()!.pods.length, 5);
  });

  test('a dotfile written in the folder does not wake the source', async () => {
    const s = newSource({ watch: true, debounceMs: 100 });
    await s.rescan();
    writeFileSync(join(dir, '.swap'), 'x');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(clock.pendingTimers(), 1, 'only the periodic timer, no debounce timer');
  });

  test('through PodConfig: add, edit (a new UID) and remove become ADD, REMOVE+ADD and REMOVE', async () => {
    const config = new PodConfig({ clock, log });
    const ops: string[] = [];
    config.onUpdate((u) => ops.push(`${u.op} ${u.pods.map((p) => p.metadata.name).join(',')}`));
    const s = newSource({ send: config.channel('file') });
    await s.rescan();
    assert.ok(config.seenAllSources());
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    await s.rescan();
    writeFileSync(join(dir, 'a.yaml'), manifest('a', 'busybox:1.37'));
    await s.rescan();
    rmSync(join(dir, 'a.yaml'));
    await s.rescan();
    assert.deepEqual(ops, ['ADD ', 'ADD a-node-a', 'REMOVE a-node-a', 'ADD a-node-a', 'REMOVE a-node-a']);
  });

  test('stop() cancels the timers', async () => {
    const s = newSource();
    s.start();
    await waitFor('first scan', () => sent.length === 1, 2000, 5);
    s.stop();
    assert.equal(clock.pendingTimers(), 0);
    await s.rescan();
    assert.equal(sent.length, 1);
  });
});
