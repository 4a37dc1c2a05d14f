/**
 * A configured provider's answers and its cache (upstream plugin_test.go: Test_Provide,
 * Test_*CacheKeyType, Test_NoCacheResponse, Test_getCachedCredentials), with a fake plugin that
 * counts its runs and a clock the test moves.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Plugin } from '../../../src/credentialprovider/exec-plugin.js';
import type { CredentialProviderResponse } from '../../../src/credentialprovider/plugin-api.js';
import {
  CACHE_PURGE_INTERVAL_MS,
  PluginProvider,
  registryOf,
} from '../../../src/credentialprovider/plugin-provider.js';
import { lookupProviders } from '../../../src/kuberuntime/docker-keyring.js';
import { FakeClock } from '../../../src/lib/clock.js';

const USER = { username: 'user', password: 'password' };

class FakePlugin implements Plugin {
  calls: string[] = [];
  gate: Promise<void> | undefined;
  constructor(private readonly answer: (image: string) => CredentialProviderResponse | Error) {}
  async execPlugin(image: string): Promise<CredentialProviderResponse> {
    this.calls.push(image);
    if (this.gate) await this.gate;
    const a = this.answer(image);
    if (a instanceof Error) throw a;
    return a;
  }
}

function provider(
  matchImages: string[],
  answer: Partial<CredentialProviderResponse>,
  opts: { defaultCacheDurationMs?: number; clock?: FakeClock } = {},
) {
  const clock = opts.clock ?? new FakeClock();
  const plugin = new FakePlugin(() => ({ cacheKeyType: 'Registry', auth: {}, ...answer }));
  const p = new PluginProvider({
    name: 'test',
    matchImages,
    defaultCacheDurationMs: opts.defaultCacheDurationMs ?? 0,
    plugin,
    clock,
  });
  return { p, plugin, clock };
}

describe('Provide (upstream Test_Provide)', () => {
  const cases: [string, string[], CredentialProviderResponse['cacheKeyType'], string, string][] = [
    [
      'exact image match, with Registry cache key',
      ['test.registry.io'],
      'Registry',
      'test.registry.io',
      'test.registry.io/foo/bar',
    ],
    [
      'exact image match, with Image cache key',
      ['test.registry.io/foo/bar'],
      'Image',
      'test.registry.io/foo/bar',
      'test.registry.io/foo/bar',
    ],
    [
      'exact image match, with Global cache key',
      ['test.registry.io'],
      'Global',
      'test.registry.io',
      'test.registry.io',
    ],
    [
      'wild card image match, with Registry cache key',
      ['*.registry.io:8080'],
      'Registry',
      '*.registry.io:8080',
      'test.registry.io:8080/foo',
    ],
    [
      'wild card image match, with Image cache key',
      ['*.*.registry.io'],
      'Image',
      '*.*.registry.io',
      'foo.bar.registry.io/foo/bar',
    ],
    [
      'wild card image match, with Global cache key',
      ['*.registry.io'],
      'Global',
      '*.registry.io',
      'test.registry.io',
    ],
  ];
  for (const [name, matchImages, cacheKeyType, authKey, image] of cases)
    test(name, async () => {
      const { p } = provider(matchImages, { cacheKeyType, auth: { [authKey]: USER } });
      assert.deepEqual(await p.provide(image), { [authKey]: USER });
    });

  test('an image its matchImages do not cover: nothing, and the plugin is not run', async () => {
    const { p, plugin } = provider(['*.registry.io'], { auth: { '*.registry.io': USER } });
    assert.deepEqual(await p.provide('registry.io/foo'), {});
    assert.deepEqual(await p.provide('other.example.com/foo'), {});
    assert.deepEqual(plugin.calls, []);
  });
});

describe('cache key types (upstream Test_RegistryCacheKeyType, Test_ImageCacheKeyType, Test_GlobalCacheKeyType)', () => {
  const auth = { '*.registry.io': USER };
  for (const [type, key] of [
    ['Registry', 'test.registry.io'],
    ['Image', 'test.registry.io/foo/bar'],
    ['Global', 'global'],
  ] as const)
    test(`${type}: cached under ${key}, the second ask answered from the cache`, async () => {
      const { p, plugin } = provider(['*.registry.io'], {
        cacheKeyType: type,
        cacheDurationMs: 3_600_000,
        auth,
      });
      assert.deepEqual(await p.provide('test.registry.io/foo/bar'), auth);
      assert.deepEqual(p.cacheKeys(), [key]);
      assert.deepEqual(await p.provide('test.registry.io/foo/bar'), auth);
      assert.equal(plugin.calls.length, 1);
    });

  test('Registry covers every image of that registry, Image only that image, Global every image', async () => {
    for (const [type, otherImageRuns] of [
      ['Registry', 1],
      ['Image', 2],
      ['Global', 1],
    ] as const) {
      const { p, plugin } = provider(['*.registry.io', '*.other.io'], {
        cacheKeyType: type,
        cacheDurationMs: 60_000,
        auth,
      });
      await p.provide('test.registry.io/foo/bar');
      await p.provide('test.registry.io/foo/baz');
      assert.equal(plugin.calls.length, otherImageRuns, type);
      await p.provide('test.other.io/foo');
      assert.equal(
        plugin.calls.length,
        otherImageRuns + (type === 'Global' ? 0 : 1),
        `${type}, another registry`,
      );
    }
  });

  test('cacheDuration 0 (upstream Test_NoCacheResponse): answered, never cached', async () => {
    const { p, plugin } = provider(['*.registry.io'], { cacheKeyType: 'Global', cacheDurationMs: 0, auth });
    assert.deepEqual(await p.provide('test.registry.io/foo/bar'), auth);
    assert.deepEqual(p.cacheKeys(), []);
    await p.provide('test.registry.io/foo/bar');
    assert.equal(plugin.calls.length, 2);
  });

  test("no cacheDuration: the provider's defaultCacheDuration, and none when that is 0", async () => {
    const clock = new FakeClock();
    const withDefault = provider(['*.registry.io'], { auth }, { defaultCacheDurationMs: 10 * 60_000, clock });
    await withDefault.p.provide('test.registry.io/a');
    clock.advance(10 * 60_000);
    await withDefault.p.provide('test.registry.io/a');
    assert.equal(
      withDefault.plugin.calls.length,
      1,
      'still cached at exactly the expiry (expired only after it)',
    );
    clock.advance(1);
    await withDefault.p.provide('test.registry.io/a');
    assert.equal(withDefault.plugin.calls.length, 2, 'run again once expired');

    const noDefault = provider(['*.registry.io'], { auth });
    await noDefault.p.provide('test.registry.io/a');
    await noDefault.p.provide('test.registry.io/a');
    assert.equal(noDefault.plugin.calls.length, 2);
  });

  test('an answer with a cacheKeyType outside the three gives nothing and is not cached', async () => {
    const { p } = provider(['*.registry.io'], { cacheKeyType: 'Repository', cacheDurationMs: 60_000, auth });
    assert.deepEqual(await p.provide('test.registry.io/foo'), {});
    assert.deepEqual(p.cacheKeys(), []);
  });
});

test('getCachedCredentials with a moving clock (upstream Test_getCachedCredentials)', () => {
  const clock = new FakeClock();
  const { p } = provider([], {}, { clock });
  const creds = (n: number) => ({ [`image${n}`]: { username: `user${n}`, password: `pass${n}` } });

  p.addCacheEntry('image1', creds(1), clock.now() + 60_000);
  clock.advance(1000);
  assert.deepEqual(p.getCachedCredentials('image1'), creds(1), 'not expired');
  assert.equal(p.cacheKeys().length, 1);

  p.addCacheEntry('image2', creds(2), clock.now());
  clock.advance(2 * 60_000);
  assert.equal(p.getCachedCredentials('image2'), undefined, 'expired');
  // image1 expired too, but only a read of it or a purge drops it.
  assert.deepEqual(p.cacheKeys(), ['image1']);

  p.addCacheEntry('image3', creds(3), clock.now() + 2 * 60_000);
  clock.advance(18 * 60_000);
  assert.ok(18 * 60_000 > CACHE_PURGE_INTERVAL_MS);
  assert.equal(p.getCachedCredentials('random'), undefined);
  assert.deepEqual(p.cacheKeys(), [], 'the purge dropped every expired entry');
});

test('concurrent asks about one image run the plugin once (upstream singleflight)', async () => {
  const { p, plugin } = provider(['*.registry.io'], { cacheDurationMs: 0, auth: { '*.registry.io': USER } });
  let open!: () => void;
  plugin.gate = new Promise((r) => (open = r));
  const asks = [1, 2, 3].map(() => p.provide('a.registry.io/app'));
  const other = p.provide('a.registry.io/other');
  await new Promise((r) => setImmediate(r));
  open();
  for (const a of await Promise.all([...asks, other])) assert.deepEqual(a, { '*.registry.io': USER });
  assert.deepEqual(plugin.calls, ['a.registry.io/app', 'a.registry.io/other']);
  // Once settled, a new ask runs it again (nothing cached with duration 0).
  await p.provide('a.registry.io/app');
  assert.equal(plugin.calls.length, 3);
});

test('a plugin that fails gives no credentials, and the next ask tries it again', async () => {
  const clock = new FakeClock();
  let fail = true;
  const plugin = new FakePlugin(() =>
    fail
      ? new Error('exit status 1')
      : { cacheKeyType: 'Image', cacheDurationMs: 60_000, auth: { 'x.io': USER } },
  );
  const p = new PluginProvider({
    name: 't',
    matchImages: ['x.io'],
    defaultCacheDurationMs: 0,
    plugin,
    clock,
  });
  assert.deepEqual(await p.provide('x.io/app'), {});
  fail = false;
  assert.deepEqual(await p.provide('x.io/app'), { 'x.io': USER });
  assert.equal(plugin.calls.length, 2);
});

test("the node keyring: every provider asked, their answers matched to the image in the providers' order", async () => {
  const a = provider(['*.registry.io'], { auth: { '*.registry.io': { username: 'a', password: 'pa' } } });
  const b = provider(['*.registry.io'], {
    auth: {
      'b.registry.io/team': { username: 'b-team', password: 'pb' },
      'other.io': { username: 'never', password: 'x' },
    },
  });
  const users = async (image: string) => (await lookupProviders([a.p, b.p], image)).map((c) => c.username);
  assert.deepEqual(await users('b.registry.io/team/app'), ['b-team', 'a'], 'the more specific key first');
  assert.deepEqual(await users('c.registry.io/app'), ['a']);
  assert.deepEqual(await users('quay.io/app'), []);
  assert.equal(registryOf('127.0.0.1:5000/team/app'), '127.0.0.1:5000');
  assert.equal(registryOf('registry.io'), 'registry.io');
});
