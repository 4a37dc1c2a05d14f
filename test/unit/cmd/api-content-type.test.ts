/**
 * `contentType` / `--kube-api-content-type`: accepted as upstream spells it, while tskubelet speaks
 * JSON to the API server (the measured reason is in docs/flags.md). JSON is acted on and silent; any
 * other value is named once: a warning when the user set it, one info line when it is upstream's
 * default; standalone there is no API server to speak to and nothing to say.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { loadKubeletConfig } from '../../../src/cmd/load-kubelet-config.js';
import type { Logger } from '../../../src/lib/log.js';

const HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

describe('contentType (--kube-api-content-type)', () => {
  let dir: string;
  let warnings: string[];
  let infos: string[];
  const log: Logger = {
    info: (msg) => infos.push(msg),
    warn: (msg) => warnings.push(msg),
    error: () => undefined,
    v: () => undefined,
    enabled: () => false,
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'content-type-'));
    warnings = [];
    infos = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function contentTypeOf(argv: string[]): Promise<string> {
    const loaded = await loadKubeletConfig(argv, { hostname: () => 'node-1', cwd: dir, log });
    assert.equal(loaded.action, 'run');
    return loaded.action === 'run' ? loaded.config.contentType : '';
  }
  const naming = (lines: string[]) => lines.filter((l) => l.includes('contentType'));

  test("cluster mode, upstream's default: one info line says JSON is spoken and why, no warning", async () => {
    assert.equal(await contentTypeOf(['--kubeconfig', join(dir, 'k')]), PROTOBUF);
    assert.deepEqual(naming(warnings), []);
    const lines = naming(infos);
    assert.equal(lines.length, 1, infos.join('\n'));
    assert.match(lines[0]!, /contentType "application\/vnd\.kubernetes\.protobuf"/);
    assert.match(lines[0]!, /speaks JSON to the API server/);
    assert.match(lines[0]!, /docs\/flags\.md/);
  });

  test('protobuf set by flag or file: one warning naming the setting, outside the parsed-but-not-acted-on line', async () => {
    await contentTypeOf(['--kubeconfig', join(dir, 'k'), `--kube-api-content-type=${PROTOBUF}`]);
    let lines = naming(warnings);
    assert.equal(lines.length, 1, warnings.join('\n'));
    assert.match(lines[0]!, /contentType "application\/vnd\.kubernetes\.protobuf" is not used/);
    assert.doesNotMatch(lines[0]!, /parsed but not acted on/);
    assert.deepEqual(naming(infos), []);

    warnings = [];
    writeFileSync(join(dir, 'c.yaml'), `${HEADER}contentType: ${PROTOBUF}\n`);
    await contentTypeOf(['--kubeconfig', join(dir, 'k'), '--config', join(dir, 'c.yaml')]);
    lines = naming(warnings);
    assert.equal(lines.length, 1, warnings.join('\n'));
    assert.match(lines[0]!, /is not used: tskubelet speaks JSON/);
  });

  test('application/json is what tskubelet does: accepted without a word', async () => {
    writeFileSync(join(dir, 'c.yaml'), `${HEADER}contentType: application/json\n`);
    assert.equal(
      await contentTypeOf(['--kubeconfig', join(dir, 'k'), '--config', join(dir, 'c.yaml')]),
      'application/json',
    );
    assert.equal(await contentTypeOf(['--kube-api-content-type=application/json']), 'application/json');
    assert.deepEqual(naming(warnings), [], warnings.join('\n'));
    assert.deepEqual(naming(infos), []);
  });

  test('standalone: no API server, nothing to say about its content type', async () => {
    await contentTypeOf(['--pod-manifest-path', dir]);
    await contentTypeOf(['--pod-manifest-path', dir, `--kube-api-content-type=${PROTOBUF}`]);
    assert.deepEqual(naming(warnings), [], warnings.join('\n'));
    assert.deepEqual(naming(infos), []);
  });

  test('any other value is warned about by name as well: JSON is still what is spoken', async () => {
    await contentTypeOf(['--kubeconfig', join(dir, 'k'), '--kube-api-content-type=application/yaml']);
    const lines = naming(warnings);
    assert.equal(lines.length, 1, warnings.join('\n'));
    assert.match(lines[0]!, /contentType "application\/yaml" is not used/);
  });
});
