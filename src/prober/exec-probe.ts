/**
 * The exec probe (upstream: pkg/probe/exec over the kuberuntime's RunInContainer): the command runs
 * through CRI ExecSync with the probe's timeout; exit 0 is a success, any other exit a failure, and
 * the output (stdout then stderr) is kept to 10 KiB. A timeout is a failure with the message
 * upstream's remote runtime gives it.
 */
import type { Container } from '../api/core-v1.js';
import type { RuntimeService } from '../cri/types.js';
import { expand, mappingFuncFor } from '../kuberuntime/container-env.js';
import { isKubeletError } from '../lib/errors.js';
import { MAX_READ_LENGTH_BYTES, type ProbeOutcome } from './probe-outcome.js';

export type CommandRunner = Pick<RuntimeService, 'execSync'>;

/**
 * upstream ExpandContainerCommandOnlyStatic: `$(VAR)` from the container's env values as written;
 * a variable set through valueFrom expands to '' because only static values are known here.
 */
export function expandProbeCommand(command: readonly string[], container: Container): string[] {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) env.set(e.name, e.value ?? '');
  const mapping = mappingFuncFor(env);
  return command.map((arg) => expand(arg, mapping));
}

/** stdout then stderr, cut at the limit as upstream's LimitWriter does. */
function boundedOutput(stdout: Buffer, stderr: Buffer): string {
  const all = Buffer.concat([stdout, stderr]);
  return all.subarray(0, MAX_READ_LENGTH_BYTES).toString('utf8');
}

export async function doExecProbe(
  runner: CommandRunner,
  containerId: string,
  command: string[],
  timeoutSeconds: number,
  signal?: AbortSignal,
): Promise<ProbeOutcome> {
  try {
    const res = await runner.execSync(containerId, command, timeoutSeconds, { signal });
    const output = boundedOutput(res.stdout, res.stderr);
    return { result: res.exitCode === 0 ? 'success' : 'failure', output };
  } catch (err) {
    // The runtime ends a command that outlives its timeout with DEADLINE_EXCEEDED (upstream: exec.TimeoutError).
    if (isKubeletError(err, 'CRI_DEADLINE_EXCEEDED')) {
      return { result: 'failure', output: `command ${JSON.stringify(command.join(' '))} timed out` };
    }
    return { result: 'unknown', output: '', error: err instanceof Error ? err : new Error(String(err)) };
  }
}
