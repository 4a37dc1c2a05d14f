import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Container } from '../../../src/api/core-v1.js';
import type { CallOptions, ExecSyncResponse } from '../../../src/cri/types.js';
import { KubeletError } from '../../../src/lib/errors.js';
import { doExecProbe, expandProbeCommand, type CommandRunner } from '../../../src/prober/exec-probe.js';

interface Call {
  containerId: string;
  cmd: string[];
  timeoutSeconds: number;
  opts?: CallOptions;
}

function runner(
  answer: (call: Call) => ExecSyncResponse | Promise<ExecSyncResponse>,
): CommandRunner & { calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    async execSync(containerId, cmd, timeoutSeconds, opts) {
      const call = { containerId, cmd, timeoutSeconds, opts };
      calls.push(call);
      return answer(call);
    },
  };
}

const out = (stdout: string, stderr: string, exitCode: number): ExecSyncResponse => ({
  stdout: Buffer.from(stdout),
  stderr: Buffer.from(stderr),
  exitCode,
});

test('exit 0 is a success; the command goes to ExecSync with the probe timeout', async () => {
  const r = runner(() => out('ok\n', '', 0));
  const o = await doExecProbe(r, 'c1', ['cat', '/tmp/healthy'], 5);
  assert.deepEqual(o, { result: 'success', output: 'ok\n' });
  assert.deepEqual(
    r.calls.map((c) => [c.containerId, c.cmd, c.timeoutSeconds]),
    [['c1', ['cat', '/tmp/healthy'], 5]],
  );
});

test('another exit code is a failure whose output is stdout then stderr', async () => {
  const r = runner(() => out('partial ', 'cat: /tmp/healthy: No such file or directory\n', 1));
  const o = await doExecProbe(r, 'c1', ['cat', '/tmp/healthy'], 1);
  assert.deepEqual(o, {
    result: 'failure',
    output: 'partial cat: /tmp/healthy: No such file or directory\n',
  });
});

test('output is kept to 10 KiB', async () => {
  const r = runner(() => out('a'.repeat(8 * 1024), 'b'.repeat(8 * 1024), 2));
  const o = await doExecProbe(r, 'c1', ['sh'], 1);
  assert.equal(o.output.length, 10 * 1024);
  assert.equal(o.output, 'a'.repeat(8 * 1024) + 'b'.repeat(2 * 1024));
});

test('a command that outlives its timeout is a failure with upstream message', async () => {
  const r = runner(() => {
    throw new KubeletError('CRI_DEADLINE_EXCEEDED', 'ExecSync did not complete');
  });
  const o = await doExecProbe(r, 'c1', ['sh', '-c', 'sleep 10'], 1);
  assert.deepEqual(o, { result: 'failure', output: 'command "sh -c sleep 10" timed out' });
});

test('a runtime that cannot run the command gives an error, not a verdict', async () => {
  const r = runner(() => {
    throw new KubeletError('CRI_UNAVAILABLE', 'runtime down');
  });
  const o = await doExecProbe(r, 'c1', ['true'], 1);
  assert.equal(o.result, 'unknown');
  assert.equal(o.error?.message, 'runtime down');
});

test('the abort signal reaches ExecSync', async () => {
  const r = runner(() => out('', '', 0));
  const controller = new AbortController();
  await doExecProbe(r, 'c1', ['true'], 1, controller.signal);
  assert.equal(r.calls[0]!.opts?.signal, controller.signal);
});

test('$(VAR) expands from the static env only, as upstream', () => {
  const c: Container = {
    name: 'app',
    env: [
      { name: 'PORT', value: '8080' },
      { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    ],
  };
  assert.deepEqual(
    expandProbeCommand(['check', '--port=$(PORT)', '--ip=$(POD_IP)', '$(MISSING)', '$$(PORT)'], c),
    ['check', '--port=8080', '--ip=', '$(MISSING)', '$(PORT)'],
  );
});
