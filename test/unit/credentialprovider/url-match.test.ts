/**
 * Registry pattern matching as upstream's credentialprovider does it: the table cases of
 * keyring_test.go (TestURLsMatch, TestDockerKeyringForGlob, TestKeyringMiss), Go's own
 * filepath.Match table (path/filepath/match_test.go), and the parse errors validation reports.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  BadPatternError,
  filepathMatch,
  parseSchemelessUrl,
  urlsMatch,
  urlsMatchStr,
} from '../../../src/credentialprovider/url-match.js';
import { makeDockerKeyring } from '../../../src/kuberuntime/docker-keyring.js';

describe('urlsMatchStr (upstream TestURLsMatch)', () => {
  const cases: [glob: string, target: string, match: boolean][] = [
    // match when there is no path component
    ['*.kubernetes.io', 'prefix.kubernetes.io', true],
    ['prefix.*.io', 'prefix.kubernetes.io', true],
    ['prefix.kubernetes.*', 'prefix.kubernetes.io', true],
    ['*-good.kubernetes.io', 'prefix-good.kubernetes.io', true],
    // match with path components
    ['*.kubernetes.io/blah', 'prefix.kubernetes.io/blah', true],
    ['prefix.*.io/foo', 'prefix.kubernetes.io/foo/bar', true],
    // match with path components and ports
    ['*.kubernetes.io:1111/blah', 'prefix.kubernetes.io:1111/blah', true],
    ['prefix.*.io:1111/foo', 'prefix.kubernetes.io:1111/foo/bar', true],
    // no match when number of parts mismatch
    ['*.kubernetes.io', 'kubernetes.io', false],
    ['*.*.kubernetes.io', 'prefix.kubernetes.io', false],
    ['*.*.kubernetes.io', 'kubernetes.io', false],
    // no match when some parts mismatch
    ['kubernetes.io', 'kubernetes.com', false],
    ['k*.io', 'quay.io', false],
    // no match when ports mismatch
    ['*.kubernetes.io:1234/blah', 'prefix.kubernetes.io:1111/blah', false],
    ['prefix.*.io/foo', 'prefix.kubernetes.io:1111/foo/bar', false],
  ];
  for (const [glob, target, want] of cases)
    test(`${glob} ~ ${target}: ${want}`, () => assert.equal(urlsMatchStr(glob, target), want));

  test('matchImages examples of the config type: ports exact, paths as prefixes, globs per part', () => {
    assert.equal(
      urlsMatch('123456789.dkr.ecr.us-east-1.amazonaws.com', '123456789.dkr.ecr.us-east-1.amazonaws.com/app'),
      true,
    );
    assert.equal(urlsMatch('*.azurecr.io', 'team.azurecr.io/app'), true);
    assert.equal(urlsMatch('*.io', 'team.k8s.io/app'), false, 'one glob matches one part');
    assert.equal(urlsMatch('app*.k8s.io', 'apple.k8s.io/x'), true);
    assert.equal(urlsMatch('gcr.io', 'gcr.io:443/x'), false, 'a port in the image needs one in the pattern');
    assert.equal(urlsMatch('registry.io:8080/path', 'registry.io:8080/path/sub/app'), true);
    assert.equal(urlsMatch('registry.io:8080/path', 'registry.io:8080/other'), false);
    assert.equal(urlsMatch('127.0.0.1:5000', '127.0.0.1:5000/team/app'), true);
    assert.equal(urlsMatch('[bad', 'x.io'), false, 'a pattern that does not parse matches nothing');
    assert.equal(urlsMatch('x[.io', 'x.io'), false, 'a malformed glob matches nothing');
  });
});

describe('the pull-secret keyring matches with the same rules (upstream TestDockerKeyringForGlob, TestKeyringMiss)', () => {
  const keyringFor = (key: string) =>
    makeDockerKeyring([
      {
        name: 's',
        type: 'kubernetes.io/dockercfg',
        data: {
          '.dockercfg': JSON.stringify({
            [key]: { email: 'foo@bar.baz', auth: Buffer.from('foo:bar').toString('base64') },
          }),
        },
      },
    ]);
  const hits: [string, string][] = [
    ['https://hello.kubernetes.io', 'hello.kubernetes.io'],
    ['https://*.docker.io', 'prefix.docker.io'],
    ['https://prefix.*.io', 'prefix.docker.io'],
    ['https://prefix.docker.*', 'prefix.docker.io'],
    ['https://*.docker.io/path', 'prefix.docker.io/path'],
    ['https://prefix.*.io/path', 'prefix.docker.io/path/subpath'],
    ['https://prefix.docker.*/path', 'prefix.docker.io/path'],
    ['https://*.docker.io:8888', 'prefix.docker.io:8888'],
    ['https://prefix.*.io:8888', 'prefix.docker.io:8888'],
    ['https://prefix.docker.*:8888', 'prefix.docker.io:8888'],
    ['https://*.docker.io/path:1111', 'prefix.docker.io/path:1111'],
    ['https://*.docker.io/v1/', 'prefix.docker.io/path:1111'],
    ['https://*.docker.io/v2/', 'prefix.docker.io/path:1111'],
    ['https://prefix.docker.*/path:1111', 'prefix.docker.io/path:1111'],
    ['prefix.docker.io:1111', 'prefix.docker.io:1111/path'],
    ['*.docker.io:1111', 'prefix.docker.io:1111/path'],
  ];
  for (const [key, target] of hits)
    test(`${key} has credentials for ${target}/foo/bar`, () =>
      assert.deepEqual(
        keyringFor(key)
          .lookup(`${target}/foo/bar`)
          .map((a) => [a.username, a.password]),
        [['foo', 'bar']],
      ));
  const misses: [string, string][] = [
    ['https://hello.kubernetes.io', 'world.mesos.org/foo/bar'],
    ['https://*.docker.com', 'prefix.docker.io'],
    ['https://suffix.*.io', 'prefix.docker.io'],
    ['https://prefix.docker.c*', 'prefix.docker.io'],
    ['https://prefix.*.io/path:1111', 'prefix.docker.io/path/subpath:1111'],
    ['suffix.*.io', 'prefix.docker.io'],
  ];
  for (const [key, target] of misses)
    test(`${key} has none for ${target}/foo/bar`, () =>
      assert.deepEqual(keyringFor(key).lookup(`${target}/foo/bar`), []));
});

describe("filepathMatch (Go's path/filepath matchTests)", () => {
  const bad = 'bad';
  const cases: [pattern: string, name: string, want: boolean | typeof bad][] = [
    ['abc', 'abc', true],
    ['*', 'abc', true],
    ['*c', 'abc', true],
    ['a*', 'a', true],
    ['a*', 'abc', true],
    ['a*', 'ab/c', false],
    ['a*/b', 'abc/b', true],
    ['a*/b', 'a/c/b', false],
    ['a*b*c*d*e*/f', 'axbxcxdxe/f', true],
    ['a*b*c*d*e*/f', 'axbxcxdxexxx/f', true],
    ['a*b*c*d*e*/f', 'axbxcxdxe/xxx/f', false],
    ['a*b*c*d*e*/f', 'axbxcxdxexxx/fff', false],
    ['a*b?c*x', 'abxbbxdbxebxczzx', true],
    ['a*b?c*x', 'abxbbxdbxebxczzy', false],
    ['ab[c]', 'abc', true],
    ['ab[b-d]', 'abc', true],
    ['ab[e-g]', 'abc', false],
    ['ab[^c]', 'abc', false],
    ['ab[^b-d]', 'abc', false],
    ['ab[^e-g]', 'abc', true],
    ['a\\*b', 'a*b', true],
    ['a\\*b', 'ab', false],
    ['a?b', 'a☺b', true],
    ['a[^a]b', 'a☺b', true],
    ['a???b', 'a☺b', false],
    ['a[^a][^a][^a]b', 'a☺b', false],
    ['[a-ζ]*', 'α', true],
    ['*[a-ζ]', 'A', false],
    ['a?b', 'a/b', false],
    ['a*b', 'a/b', false],
    ['[\\]a]', ']', true],
    ['[\\-]', '-', true],
    ['[x\\-]', 'x', true],
    ['[x\\-]', '-', true],
    ['[x\\-]', 'z', false],
    ['[\\-x]', 'x', true],
    ['[\\-x]', '-', true],
    ['[\\-x]', 'a', false],
    ['[]a]', ']', bad],
    ['[-]', '-', bad],
    ['[x-]', 'x', bad],
    ['[x-]', '-', bad],
    ['[x-]', 'z', bad],
    ['[-x]', 'x', bad],
    ['[-x]', '-', bad],
    ['[-x]', 'a', bad],
    ['\\', 'a', bad],
    ['[a-b-c]', 'a', bad],
    ['[', 'a', bad],
    ['[^', 'a', bad],
    ['[^bc', 'a', bad],
    ['a[', 'a', bad],
    ['a[', 'ab', bad],
    ['a[', 'x', bad],
    ['a/b[', 'x', bad],
    ['*x', 'xxx', true],
  ];
  for (const [pattern, name, want] of cases)
    test(`${pattern} ~ ${name}: ${want}`, () => {
      if (want === bad) assert.throws(() => filepathMatch(pattern, name), BadPatternError);
      else assert.equal(filepathMatch(pattern, name), want);
    });
});

describe("parseSchemelessUrl refuses what Go's url.Parse refuses, in its words", () => {
  test('valid patterns', () => {
    assert.deepEqual(parseSchemelessUrl('registry.io/foobar'), { host: 'registry.io', path: '/foobar' });
    assert.deepEqual(parseSchemelessUrl('*.registry.io:8080'), { host: '*.registry.io:8080', path: '' });
    assert.deepEqual(parseSchemelessUrl('registry.io/*'), { host: 'registry.io', path: '/*' });
    assert.deepEqual(parseSchemelessUrl('[::1]:5000/x%20y'), { host: '[::1]:5000', path: '/x y' });
  });
  const refused: [string, string][] = [
    ['%invalid%', 'parse "https://%invalid%": invalid URL escape "%in"'],
    ['registry.io/%zz', 'parse "https://registry.io/%zz": invalid URL escape "%zz"'],
    ['registry.io:port', 'parse "https://registry.io:port": invalid port ":port" after host'],
    ['reg istry.io', 'parse "https://reg istry.io": invalid character " " in host name'],
    ['[::1', `parse "https://[::1": missing ']' in host`],
    ['a\tb', 'parse "https://a\\tb": net/url: invalid control character in URL'],
  ];
  for (const [raw, message] of refused)
    test(JSON.stringify(raw), () => assert.throws(() => parseSchemelessUrl(raw), { message }));
});
