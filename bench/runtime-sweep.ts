/**
 * The bench's hold on the private containerd (scripts/runtime-stack.sh): removing what a kubelet
 * left in it, and waiting until the daemon has finished the work a removal leaves behind, so that
 * the next measurement does not share the machine with it. Shared by the density benches.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { RuntimeConnection } from '../src/cri/connect-runtime.js';
import { KUBERNETES_POD_NAMESPACE_LABEL } from '../src/kuberuntime/labels.js';
import { cpuSeconds } from './proc-stats.js';
import { say, sleep } from './report.js';

const CRI_TIMEOUT_MS = 120_000;
const CLEANUP_PARALLELISM = 10;

/**
 * Stops and removes every sandbox (with its containers) of namespace, a few at a time. A sandbox
 * whose removal fails (CNI tear-down racing a kubelet that is still stopping it, say) is tried
 * again; one still there after three passes is an error, with the runtime's reason.
 */
export async function removeNamespace(conn: RuntimeConnection, namespace: string): Promise<void> {
  const list = () =>
    conn.runtime.listPodSandbox(
      { labelSelector: { [KUBERNETES_POD_NAMESPACE_LABEL]: namespace } },
      { timeoutMs: CRI_TIMEOUT_MS },
    );
  const errors = new Map<string, string>();
  for (let pass = 0; pass < 3; pass++) {
    const queue = await list();
    if (queue.length === 0) return;
    if (pass > 0) await sleep(1000);
    const worker = async () => {
      for (let sb = queue.pop(); sb; sb = queue.pop()) {
        try {
          await conn.runtime.stopPodSandbox(sb.id, { timeoutMs: CRI_TIMEOUT_MS });
          await conn.runtime.removePodSandbox(sb.id, { timeoutMs: CRI_TIMEOUT_MS });
        } catch (err) {
          errors.set(sb.id, err instanceof Error ? err.message : String(err));
        }
      }
    };
    await Promise.all(Array.from({ length: CLEANUP_PARALLELISM }, worker));
  }
  const left = await list();
  if (left.length > 0) {
    const reasons = left.map((sb) => `${sb.id.slice(0, 12)}: ${errors.get(sb.id) ?? 'no error given'}`);
    throw new Error(
      `${left.length} sandbox(es) of ${namespace} could not be removed (${reasons.join('; ')})`,
    );
  }
}

/**
 * The pid of the containerd that serves endpoint, for its share of the work: a runtime-stack.sh
 * daemon (`containerd --config FILE`) whose config file names the socket. Each stack on a machine
 * has its own, and only this one's CPU belongs to the figures.
 */
export function containerdPid(endpoint: string): number | undefined {
  const socket = endpoint.replace(/^unix:\/\//, '');
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv[0] !== 'containerd' || argv[1] !== '--config' || !argv[2]) continue;
      if (readFileSync(argv[2], 'utf8').includes(`"${socket}"`)) return Number(entry);
    } catch {
      continue;
    }
  }
  return undefined;
}

/**
 * Waits (bounded) until containerd has done the work a removal leaves behind (its side of shims
 * exiting, snapshots, cgroups): the next one measured would share the machine with it. Before this,
 * the kubelet that ran right after the floor's 100 sandboxes were removed was the slower of the two
 * in most rounds, whichever it was. Quiet: at most one 10 ms clock tick of the daemon's CPU (2 % of
 * a core) in each of two half-second windows in a row.
 */
export async function waitForIdleContainerd(endpoint: string, maxWaitMs = 30_000): Promise<void> {
  const pid = containerdPid(endpoint);
  if (pid === undefined) return;
  const deadline = Date.now() + maxWaitMs;
  let quiet = 0;
  while (quiet < 2) {
    if (Date.now() > deadline) {
      say(`containerd still busy ${maxWaitMs / 1000} s after a removal; going on`);
      return;
    }
    const before = containerdCpuSeconds(pid);
    await sleep(500);
    const used = containerdCpuSeconds(pid) - before;
    // NaN: containerd went away; the next step says so.
    if (Number.isNaN(used)) return;
    // Tick counts are whole, but their difference in seconds is a float: compare with a margin.
    quiet = used < 0.015 ? quiet + 1 : 0;
  }
}

export function containerdCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    return cpuSeconds(pid);
  } catch {
    return NaN;
  }
}
