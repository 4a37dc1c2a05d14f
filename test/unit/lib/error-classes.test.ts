/**
 * Every error class in src/ is a KubeletError with a code of its own (src/*\/testing fakes aside:
 * FakeCriError plays a gRPC status, whose numeric code is what the client under test reads).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CgroupError } from '../../../src/cm/cgroup-error.js';
import { CriNotFoundError } from '../../../src/cri/errors.js';
import { KubeApiError } from '../../../src/k8s/api-status.js';
import { DeadlineExceededError } from '../../../src/lib/deadline.js';
import { KubeletError } from '../../../src/lib/errors.js';
import { DurationError } from '../../../src/lib/go-duration.js';
import { VolumeMountError } from '../../../src/volume/volume-manager.js';

const SRC = path.resolve(import.meta.dirname, '../../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'testing' || e.name === 'proto' ? [] : sourceFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

interface ErrorClass {
  name: string;
  base: string;
  code: string | undefined;
  file: string;
}

/** Classes that extend Error or one of its subclasses, with the code their constructor passes up. */
function errorClasses(): ErrorClass[] {
  const found: ErrorClass[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/class (\w+) extends (\w*Error)\b[^{]*\{/g)) {
      const body = text.slice(m.index, text.indexOf('\n}', m.index));
      const code = /super\(\s*'([A-Z_]+)'/.exec(body)?.[1];
      found.push({ name: m[1]!, base: m[2]!, code, file: path.relative(SRC, file) });
    }
  }
  return found;
}

describe('error classes', () => {
  const classes = errorClasses();

  it('finds the error classes of src/', () => {
    assert.ok(classes.length >= 8, classes.map((c) => c.name).join(', '));
  });

  it('every one extends KubeletError (only KubeletError extends Error)', () => {
    for (const c of classes) {
      if (c.name === 'KubeletError') assert.equal(c.base, 'Error');
      else assert.equal(c.base, 'KubeletError', `${c.name} in ${c.file}`);
    }
  });

  it('every subclass has a code of its own', () => {
    const byCode = new Map<string, string>();
    for (const c of classes.filter((x) => x.name !== 'KubeletError')) {
      const code = c.code;
      assert.ok(code, `${c.name} in ${c.file} passes no code to KubeletError`);
      assert.equal(byCode.get(code), undefined, `${c.name} and ${byCode.get(code)} share ${code}`);
      byCode.set(code, c.name);
    }
  });

  it('instances carry their code, their cause and are KubeletErrors', () => {
    const cause = new Error('underneath');
    const cases: [KubeletError, string][] = [
      [new CgroupError('x', { cause }), 'CGROUP_ERROR'],
      [new CriNotFoundError('x', { cause }), 'CRI_NOT_FOUND'],
      [new VolumeMountError('x', false, { cause }), 'VOLUME_MOUNT_FAILED'],
      [new DeadlineExceededError(10), 'DEADLINE_EXCEEDED'],
      [new DurationError('x'), 'INVALID_DURATION'],
    ];
    for (const [err, code] of cases) {
      assert.ok(err instanceof KubeletError, err.name);
      assert.equal(err.code, code);
    }
    assert.equal(cases[0]![0].cause, cause);
    assert.ok(KubeApiError.prototype instanceof KubeletError);
  });
});
