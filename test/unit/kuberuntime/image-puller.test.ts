import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container, Pod } from '../../../src/api/core-v1.js';
import { FakeRuntime } from '../../../src/cri/testing/fake-runtime.js';
import type { AuthConfig, ImageService } from '../../../src/cri/types.js';
import type { DockerConfig } from '../../../src/credentialprovider/plugin-api.js';
import { makeDockerKeyring, repositoryToPull } from '../../../src/kuberuntime/docker-keyring.js';
import {
  applyDefaultImageTag,
  defaultPullPolicy,
  ImagePuller,
  runtimeErrorMessage,
  type ImagePullerOptions,
} from '../../../src/kuberuntime/image-puller.js';
import { Backoff } from '../../../src/lib/backoff.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { KubeletError } from '../../../src/lib/errors.js';
import { setLogSink } from '../../../src/lib/log.js';

function setup(extra: Partial<ImagePullerOptions> = {}) {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  const events: string[] = [];
  const puller = new ImagePuller({
    imageService: fake,
    backoff: new Backoff(clock, 10_000, 300_000),
    clock,
    recorder: {
      event: (_p, fieldPath, type, reason, message) =>
        events.push(`${fieldPath} ${type} ${reason} ${message}`),
    },
    ...extra,
  });
  return { clock, fake, events, puller };
}

function pod(container: Container): Pod {
  return { metadata: { name: 'p', namespace: 'd', uid: 'u-1' }, spec: { containers: [container] } };
}

test('default tag and pull policy', () => {
  assert.equal(applyDefaultImageTag('busybox'), 'busybox:latest');
  assert.equal(applyDefaultImageTag('registry.k8s.io/pause:3.9'), 'registry.k8s.io/pause:3.9');
  assert.equal(applyDefaultImageTag('localhost:5000/team/app'), 'localhost:5000/team/app:latest');
  const digest = `busybox@sha256:${'a'.repeat(64)}`;
  assert.equal(applyDefaultImageTag(digest), digest);
  assert.throws(
    () => applyDefaultImageTag('BusyBox'),
    /^Error: couldn't parse image name "BusyBox": invalid reference format: repository name \(library\/BusyBox\) must be lowercase$/,
  );
  // The case check comes first and names the path without the registry and tag (upstream's splitDockerDomain).
  assert.throws(
    () => applyDefaultImageTag('team/App:v1'),
    /repository name \(team\/App\) must be lowercase$/,
  );
  assert.throws(
    () => applyDefaultImageTag('localhost:5000/Team/app'),
    /repository name \(Team\/app\) must be lowercase$/,
  );
  assert.equal(applyDefaultImageTag('Registry.Example.com/app'), 'Registry.Example.com/app:latest');
  assert.throws(() => applyDefaultImageTag(''), /invalid reference format/);
  assert.equal(defaultPullPolicy('busybox'), 'Always');
  assert.equal(defaultPullPolicy('busybox:latest'), 'Always');
  assert.equal(defaultPullPolicy('busybox:1.36'), 'IfNotPresent');
  assert.equal(defaultPullPolicy(digest), 'IfNotPresent');
});

test('IfNotPresent: present image is used without a pull', async () => {
  const { fake, events, puller } = setup();
  const img = fake.addImage('busybox:1.36');
  const c: Container = { name: 'app', image: 'busybox:1.36', imagePullPolicy: 'IfNotPresent' };
  const result = await puller.ensureImageExists(pod(c), c, undefined);
  // One status read, and it comes back too, so that the container's config needs no second one.
  assert.equal(fake.callsOf('imageStatus').length, 1);
  assert.deepEqual(result, { ok: true, imageRef: img.id, image: await fake.imageStatus({ image: img.id }) });
  assert.equal(fake.callsOf('pullImage').length, 0);
  assert.deepEqual(events, [
    'spec.containers{app} Normal Pulled Container image "busybox:1.36" already present on machine',
  ]);
});

test('Always pulls every time, with the tag applied and the pod annotations passed', async () => {
  const { fake, puller, events } = setup();
  const c: Container = { name: 'app', image: 'busybox', imagePullPolicy: 'Always' };
  const p = pod(c);
  p.metadata.annotations = { a: 'b' };
  const r1 = await puller.ensureImageExists(p, c, undefined);
  const r2 = await puller.ensureImageExists(p, c, undefined);
  assert.ok(r1.ok && r2.ok);
  const pulls = fake.callsOf('pullImage');
  assert.equal(pulls.length, 2);
  assert.deepEqual(pulls[0]![0], { image: 'busybox:latest', annotations: { a: 'b' } });
  // Events name the image as the spec wrote it, as upstream's do.
  assert.equal(events[0], 'spec.containers{app} Normal Pulling Pulling image "busybox"');
  assert.match(
    events[1]!,
    /^spec.containers\{app\} Normal Pulled Successfully pulled image "busybox" in 0s \(0s including waiting\). Image size: \d+ bytes.$/,
  );
});

test('Never: ErrImageNeverPull when absent', async () => {
  const { puller } = setup();
  const c: Container = { name: 'app', image: 'busybox:1.36', imagePullPolicy: 'Never' };
  assert.deepEqual(await puller.ensureImageExists(pod(c), c, undefined), {
    ok: false,
    reason: 'ErrImageNeverPull',
    message: 'Container image "busybox:1.36" is not present with pull policy of Never',
  });
});

test('a failed pull is ErrImagePull, then ImagePullBackOff for 10 s, then 20 s after the next failure', async () => {
  const { clock, fake, puller } = setup();
  fake.pullsSucceed = false;
  const c: Container = { name: 'app', image: 'nosuch:1', imagePullPolicy: 'IfNotPresent' };
  const first = await puller.ensureImageExists(pod(c), c, undefined);
  assert.equal(first.ok, false);
  assert.ok(!first.ok && first.reason === 'ErrImagePull');
  assert.match(
    !first.ok ? first.message : '',
    /failed to pull and unpack image "docker.io\/library\/nosuch:1"/,
  );

  clock.advance(5_000);
  assert.deepEqual(await puller.ensureImageExists(pod(c), c, undefined), {
    ok: false,
    reason: 'ImagePullBackOff',
    message: 'Back-off pulling image "nosuch:1"',
    retryAfterMs: 5_000,
  });
  assert.equal(fake.callsOf('pullImage').length, 1);

  clock.advance(5_001);
  const third = await puller.ensureImageExists(pod(c), c, undefined);
  assert.ok(!third.ok && third.reason === 'ErrImagePull');
  assert.equal(fake.callsOf('pullImage').length, 2);

  clock.advance(15_000);
  const fourth = await puller.ensureImageExists(pod(c), c, undefined);
  assert.ok(!fourth.ok && fourth.reason === 'ImagePullBackOff', 'the delay doubled to 20 s');

  // Another pod's pull of the same image has its own back-off.
  const other = pod(c);
  other.metadata.uid = 'u-2';
  const fresh = await puller.ensureImageExists(other, c, undefined);
  assert.ok(!fresh.ok && fresh.reason === 'ErrImagePull');

  clock.advance(5_001);
  fake.pullsSucceed = true;
  assert.equal((await puller.ensureImageExists(pod(c), c, undefined)).ok, true);
});

test('invalid names and inspect failures', async () => {
  const { fake, puller } = setup();
  const bad: Container = { name: 'app', image: 'Not/Valid' };
  const r = await puller.ensureImageExists(pod(bad), bad, undefined);
  assert.ok(!r.ok && r.reason === 'InvalidImageName');
  fake.injectError('imageStatus', new Error('boom'), 1);
  const c: Container = { name: 'app', image: 'busybox' };
  const r2 = await puller.ensureImageExists(pod(c), c, undefined);
  assert.deepEqual(r2, {
    ok: false,
    reason: 'ImageInspectError',
    message: 'Failed to inspect image "busybox": boom',
  });
});

test('runtime errors are shown as Go gRPC clients print them; registry-unavailable is told apart', async () => {
  const cause = Object.assign(new Error('5 NOT_FOUND'), {
    code: 5,
    details: 'failed to pull and unpack image "x"',
  });
  assert.equal(
    runtimeErrorMessage(new KubeletError('CRI_ERROR', 'x', { cause })),
    'rpc error: code = NotFound desc = failed to pull and unpack image "x"',
  );
  const { fake, puller } = setup();
  const unavailable = Object.assign(new Error('2 UNKNOWN'), {
    code: 2,
    details: 'RegistryUnavailable: dial tcp: i/o timeout',
  });
  fake.injectError(
    'pullImage',
    new KubeletError('CRI_ERROR', unavailable.details, { cause: unavailable }),
    1,
  );
  const c: Container = { name: 'app', image: 'busybox' };
  const r = await puller.ensureImageExists(pod(c), c, undefined);
  assert.deepEqual(r, {
    ok: false,
    reason: 'RegistryUnavailable',
    message:
      'image pull failed for busybox:latest because the registry is unavailable: dial tcp: i/o timeout',
  });
});

/** An image service whose pulls wait until released, counting how many run at once. */
function gatedImageService(fake: FakeRuntime) {
  let running = 0;
  let maxRunning = 0;
  const gates: (() => void)[] = [];
  const auths: (AuthConfig | undefined)[] = [];
  const service: ImageService = {
    ...fake,
    imageStatus: (spec, verbose, opts) => fake.imageStatus(spec, verbose, opts),
    listImages: (filter, opts) => fake.listImages(filter, opts),
    removeImage: (spec, opts) => fake.removeImage(spec, opts),
    imageFsInfo: (opts) => fake.imageFsInfo(opts),
    pullImage: async (spec, auth) => {
      auths.push(auth);
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      return fake.addImage(spec.image).id;
    },
  };
  const releaseAll = async () => {
    // Let waiting pulls reach their gate, then open every gate, until none is left.
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r));
      gates.splice(0).forEach((g) => g());
    }
  };
  return { service, auths, releaseAll, maxRunning: () => maxRunning, waiting: () => gates.length };
}

for (const [name, opts, want] of [
  ['serializeImagePulls (the default) pulls one image at a time', {}, 1],
  [
    'maxParallelImagePulls bounds parallel pulls',
    { serializeImagePulls: false, maxParallelImagePulls: 2 },
    2,
  ],
  ['without serialization or a bound, all pull at once', { serializeImagePulls: false }, 3],
] as const) {
  test(name, async () => {
    const clock = new FakeClock();
    const fake = new FakeRuntime(clock);
    const gated = gatedImageService(fake);
    const puller = new ImagePuller({
      imageService: gated.service,
      backoff: new Backoff(clock, 10_000, 300_000),
      clock,
      ...opts,
    });
    const containers = ['a:1', 'b:1', 'c:1'].map((image, i) => ({ name: `c${i}`, image }));
    const results = containers.map((c) => puller.ensureImageExists(pod(c), c, undefined));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.equal(gated.waiting(), want);
    await gated.releaseAll();
    assert.ok((await Promise.all(results)).every((r) => r.ok));
    assert.equal(gated.maxRunning(), want);
  });
}

test('pull secrets: the matching registry credentials go to the runtime; none match, no auth', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  const gated = gatedImageService(fake);
  const puller = new ImagePuller({
    imageService: gated.service,
    backoff: new Backoff(clock, 10_000, 300_000),
    clock,
  });
  const dockerconfig = JSON.stringify({
    auths: {
      '127.0.0.1:5000': { auth: Buffer.from('user:s3cret').toString('base64') },
      'https://index.docker.io/v1/': { username: 'hub', password: 'hubpw' },
    },
  });
  const secrets = async () => [
    { name: 'regcred', type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': dockerconfig } },
  ];
  const c1: Container = { name: 'a', image: '127.0.0.1:5000/team/app:v1' };
  const c2: Container = { name: 'b', image: 'busybox:1.36' };
  const c3: Container = { name: 'c', image: 'quay.io/x/y:1' };
  const all = [c1, c2, c3].map((c) => puller.ensureImageExists(pod(c), c, undefined, undefined, secrets));
  for (let i = 0; i < 3; i++) await gated.releaseAll();
  await Promise.all(all);
  assert.deepEqual(gated.auths, [
    { username: 'user', password: 's3cret' },
    { username: 'hub', password: 'hubpw' },
    undefined,
  ]);
});

test('the docker keyring matches as upstream: host globs, exact ports, path prefixes, Docker Hub by name', () => {
  const keyring = makeDockerKeyring([
    {
      name: 's',
      type: 'kubernetes.io/dockercfg',
      data: {
        '.dockercfg': JSON.stringify({
          '*.example.com': { username: 'glob', password: 'p' },
          'registry.example.com/team': { username: 'team', password: 'p' },
          'localhost:5000': { username: 'local', password: 'p' },
          'index.docker.io': { username: 'hub', password: 'p' },
        }),
      },
    },
    // An Opaque secret never counts, whatever its keys.
    { name: 'o', type: 'Opaque', data: { '.dockercfg': JSON.stringify({ 'quay.io': { username: 'no' } }) } },
  ]);
  const users = (repo: string) => keyring.lookup(repo).map((a) => a.username);
  assert.deepEqual(users('registry.example.com/team/app'), ['team', 'glob']);
  assert.deepEqual(users('registry.example.com/other/app'), ['glob']);
  assert.deepEqual(users('a.b.example.com/app'), []);
  assert.deepEqual(users('localhost:5000/app'), ['local']);
  assert.deepEqual(users('localhost:5001/app'), []);
  assert.deepEqual(users('docker.io/library/busybox'), ['hub']);
  assert.deepEqual(users('quay.io/x/y'), []);
  assert.equal(repositoryToPull('busybox'), 'docker.io/library/busybox');
  assert.equal(repositoryToPull('busybox:1.36'), 'docker.io/library/busybox');
  assert.equal(repositoryToPull('team/app@sha256:abc'), 'docker.io/team/app');
  assert.equal(repositoryToPull('127.0.0.1:5000/team/app:v1'), '127.0.0.1:5000/team/app');
  assert.equal(repositoryToPull('localhost/app'), 'localhost/app');
});

test('registryPullQPS: a pull over the rate fails at once as upstream says', async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  const puller = new ImagePuller({
    imageService: fake,
    backoff: new Backoff(clock, 10_000, 300_000),
    clock,
    serializeImagePulls: false,
    registryPullQPS: 1,
    registryBurst: 1,
  });
  const c: Container = { name: 'a', image: 'busybox', imagePullPolicy: 'Always' };
  assert.equal((await puller.ensureImageExists(pod(c), c, undefined)).ok, true);
  const over = await puller.ensureImageExists(pod(c), c, undefined);
  assert.deepEqual(over, { ok: false, reason: 'ErrImagePull', message: 'pull QPS exceeded' });
});

test('the pull observer is told of each pull that runs: its size when it worked, a failure when not, nothing when the image is present', async () => {
  const seen: string[] = [];
  const { fake, puller } = setup({
    pullObserver: {
      pullStarted: (image) => {
        seen.push(`start ${image}`);
        return { finished: (o) => seen.push(o.ok ? `ok ${image} ${o.sizeBytes > 0}` : `failed ${image}`) };
      },
    },
  });
  const c: Container = { name: 'app', image: 'busybox:1', imagePullPolicy: 'IfNotPresent' };
  assert.equal((await puller.ensureImageExists(pod(c), c, undefined)).ok, true);
  assert.equal((await puller.ensureImageExists(pod(c), c, undefined)).ok, true);
  fake.pullsSucceed = false;
  const missing: Container = { name: 'app', image: 'nosuch:1', imagePullPolicy: 'IfNotPresent' };
  assert.equal((await puller.ensureImageExists(pod(missing), missing, undefined)).ok, false);
  assert.deepEqual(seen, ['start busybox:1', 'ok busybox:1 true', 'start nosuch:1', 'failed nosuch:1']);
});

test("the pulling-time recorder hears of each pull by the pod's UID: started, and finished only on success", async () => {
  const heard: string[] = [];
  const { fake, puller } = setup({
    pullingTimeRecorder: {
      recordImageStartedPulling: (uid) => heard.push(`started ${uid}`),
      recordImageFinishedPulling: (uid) => heard.push(`finished ${uid}`),
    },
  });
  const c: Container = { name: 'app', image: 'busybox', imagePullPolicy: 'Always' };
  assert.ok((await puller.ensureImageExists(pod(c), c, undefined)).ok);
  fake.pullsSucceed = false;
  const missing: Container = { ...c, image: 'nosuch:1' };
  assert.equal((await puller.ensureImageExists(pod(missing), missing, undefined)).ok, false);
  // A present image with IfNotPresent is no pull at all.
  fake.pullsSucceed = true;
  const present: Container = { ...c, imagePullPolicy: 'IfNotPresent' };
  assert.ok((await puller.ensureImageExists(pod(present), present, undefined)).ok);
  assert.deepEqual(heard, ['started u-1', 'finished u-1', 'started u-1']);
});

test('a malformed pull secret fails the pull with a Failed event naming it, as upstream, instead of pulling without it', async () => {
  const lines: string[] = [];
  setLogSink((l) => lines.push(l));
  try {
    const cases: { data: Record<string, string>; type: string; want: RegExp }[] = [
      {
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': '{"auths": {"127.0.0.1:5000": ' },
        want: /^Failed to pull image "127\.0\.0\.1:5000\/app:v1": pull secret "regcred" \(kubernetes\.io\/dockerconfigjson\): \.dockerconfigjson is not valid JSON: /,
      },
      {
        type: 'kubernetes.io/dockercfg',
        data: {
          '.dockercfg': JSON.stringify({
            '127.0.0.1:5000': { auth: Buffer.from('no-colon').toString('base64') },
          }),
        },
        want: /pull secret "regcred" \(kubernetes\.io\/dockercfg\): entry "127\.0\.0\.1:5000": unable to parse auth field, must be formatted as base64\(username:password\)$/,
      },
      {
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': JSON.stringify({ auths: { '127.0.0.1:5000': 'user:pw' } }) },
        want: /entry "127\.0\.0\.1:5000": not an object$/,
      },
    ];
    for (const { type, data, want } of cases) {
      const { fake, events, puller } = setup();
      const c: Container = { name: 'a', image: '127.0.0.1:5000/app:v1' };
      const result = await puller.ensureImageExists(pod(c), c, undefined, undefined, async () => [
        { name: 'regcred', type, data },
      ]);
      assert.equal(result.ok, false);
      assert.equal(!result.ok && result.reason, 'ErrImagePull');
      assert.equal(fake.callsOf('pullImage').length, 0, 'no pull without the credentials asked for');
      const failed = events.find((e) => e.startsWith('spec.containers{a} Warning Failed '));
      assert.ok(failed, events.join('\n'));
      assert.match(failed.replace('spec.containers{a} Warning Failed ', ''), want);
    }
    assert.ok(
      lines.some((l) => l.includes('pull secret') && l.includes('regcred')),
      'logged too',
    );
  } finally {
    setLogSink((l) => process.stderr.write(l + '\n'));
  }
});

test('a registry key that does not parse is skipped with a log line, the others still count', () => {
  const lines: string[] = [];
  setLogSink((l) => lines.push(l));
  try {
    const keyring = makeDockerKeyring([
      {
        name: 'mixed',
        type: 'kubernetes.io/dockercfg',
        data: {
          '.dockercfg': JSON.stringify({
            'http://[bad': { username: 'x', password: 'p' },
            'quay.io': { username: 'q', password: 'p' },
          }),
        },
      },
    ]);
    assert.deepEqual(
      keyring.lookup('quay.io/x/y').map((a) => a.username),
      ['q'],
    );
    assert.ok(
      lines.some((l) => l.includes('http://[bad') && l.includes('ignoring')),
      lines.join('\n'),
    );
  } finally {
    setLogSink((l) => process.stderr.write(l + '\n'));
  }
});

test("the node's credential providers: asked with the repository, tried after the pod's pull secrets; one that fails leaves the pull anonymous", async () => {
  const clock = new FakeClock();
  const fake = new FakeRuntime(clock);
  const tried: (AuthConfig | undefined)[] = [];
  const service: ImageService = {
    ...fake,
    imageStatus: (spec, verbose, opts) => fake.imageStatus(spec, verbose, opts),
    listImages: (filter, opts) => fake.listImages(filter, opts),
    removeImage: (spec, opts) => fake.removeImage(spec, opts),
    imageFsInfo: (opts) => fake.imageFsInfo(opts),
    pullImage: async (spec, auth) => {
      tried.push(auth);
      if (spec.image.startsWith('reg.io:5000/') && auth?.password !== 'right')
        throw new Error('failed to authorize: 401 Unauthorized');
      return fake.addImage(spec.image).id;
    },
  };
  const asked: string[] = [];
  const puller = new ImagePuller({
    imageService: service,
    backoff: new Backoff(clock, 10_000, 300_000),
    clock,
    credentialProviders: [
      {
        name: 'node-plugin',
        provide: async (image): Promise<DockerConfig> => {
          asked.push(image);
          if (image.startsWith('broken.io/')) return {}; // what a failed plugin gives
          return { 'reg.io:5000': { username: 'node', password: 'right' } };
        },
      },
    ],
  });
  const stale = JSON.stringify({ auths: { 'reg.io:5000': { username: 'pod', password: 'stale' } } });
  const secrets = async () => [
    { name: 'regcred', type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': stale } },
  ];
  const c: Container = { name: 'a', image: 'reg.io:5000/team/app:v1' };
  const result = await puller.ensureImageExists(pod(c), c, undefined, undefined, secrets);
  assert.ok(result.ok);
  assert.deepEqual(asked, ['reg.io:5000/team/app']);
  assert.deepEqual(
    tried.map((a) => a?.username),
    ['pod', 'node'],
  );

  tried.length = 0;
  const b: Container = { name: 'b', image: 'broken.io/app:v1' };
  assert.ok((await puller.ensureImageExists(pod(b), b, undefined)).ok);
  assert.deepEqual(tried, [undefined]);
});
