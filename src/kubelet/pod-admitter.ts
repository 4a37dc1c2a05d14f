/**
 * Node admission as the sync loop runs it (upstream: the admit handlers of canAdmitPod): the eviction
 * handler, the sysctl allowlist, AppArmor, the topology manager's handler (which has the CPU, memory
 * and device managers allocate; queued, one pod at a time, when a device plugin must answer), then
 * the predicates against the node and the node shutdown manager. Only the verdict is decided here;
 * the kubelet acts on it.
 */
import type { Pod } from '../api/core-v1.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { AdmissionReason, canAdmitPod, sanitizeNodeAllocatable } from './admission.js';
import { AppArmorValidator } from './apparmor-validator.js';
import type { DeviceAdmission, KubeletOptions, TopologyAdmission } from './kubelet-options.js';
import { SysctlAllowlist } from './sysctl-allowlist.js';
import { podRef } from '../kuberuntime/format.js';

const log = logger('kubelet');

export type AdmitVerdict = ReturnType<typeof canAdmitPod>;

export interface PodAdmitterOptions extends Pick<
  KubeletOptions,
  'evictionAdmit' | 'shutdownAdmit' | 'sysctlAllowlist' | 'appArmorValidator' | 'getNode'
> {
  topologyAdmission?: TopologyAdmission;
  deviceAdmission?: DeviceAdmission;
  /** The pods that hold resources now (the kubelet's active pods). */
  activePods: () => Pod[];
}

function unexpectedAdmissionError(err: unknown): AdmitVerdict {
  return {
    admit: false,
    reason: AdmissionReason.UnexpectedAdmissionError,
    message: `Unexpected error while attempting to admit the pod: ${errorMessage(err)}`,
  };
}

export class PodAdmitter {
  private readonly sysctlAllowlist: SysctlAllowlist;
  private readonly appArmorValidator: AppArmorValidator;
  private admissionTail: Promise<void> | undefined;
  private readonly pendingAdmission = new Set<string>();

  constructor(private readonly opts: PodAdmitterOptions) {
    this.sysctlAllowlist = opts.sysctlAllowlist ?? SysctlAllowlist.forNode([]);
    this.appArmorValidator = opts.appArmorValidator ?? AppArmorValidator.forHost();
  }

  /** Whether the pod must wait in the queue: one is already there, or it asks for devices. */
  mustQueue(pod: Pod): boolean {
    return this.admissionTail !== undefined || (this.opts.deviceAdmission?.podRequestsDevices(pod) ?? false);
  }

  /** Whether the pod waits in the admission queue (its admission dispatches it once decided). */
  isPending(uid: string): boolean {
    return this.pendingAdmission.has(uid);
  }

  /**
   * Only pods that are not already running can be refused (upstream: canAdmitPod), and only the
   * admitted pods that still hold resources count against it (upstream: filterOutInactivePods). An
   * admit handler that fails refuses the pod, as upstream's UnexpectedAdmissionError does.
   */
  admitPod(pod: Pod): AdmitVerdict {
    try {
      const before = this.admitBeforeResources(pod);
      if (before) return before;
      const resources = this.admitResources(pod);
      // Only a pod that must queue (it asks a device plugin) can get an answer later.
      if (resources instanceof Promise) {
        // The pod is refused now, so a late answer must not surface as an unhandled rejection.
        resources.catch((err: unknown) =>
          log.error('Late resource allocation of a refused pod failed', {
            pod: pod.metadata.name,
            err: errorMessage(err),
          }),
        );
        throw new Error('resource allocation answered asynchronously outside the admission queue');
      }
      return resources ?? this.admitPredicates(pod);
    } catch (err) {
      return unexpectedAdmissionError(err);
    }
  }

  /** Upstream's eviction handler comes first, then the sysctl allowlist, then AppArmor; undefined when all admit. */
  private admitBeforeResources(pod: Pod): AdmitVerdict | undefined {
    const eviction = this.opts.evictionAdmit?.(pod);
    if (eviction && !eviction.admit) return eviction;
    const sysctls = this.sysctlAllowlist.admit(pod);
    if (!sysctls.admit) return sysctls;
    const appArmor = this.appArmorValidator.admit(pod);
    if (!appArmor.admit) return appArmor;
    return undefined;
  }

  /**
   * The topology manager's verdict, resources allocated when it admits (a refusal carries the
   * provider's reason: TopologyAffinityError, SMTAlignmentError, else UnexpectedAdmissionError);
   * undefined when it admits.
   */
  private admitResources(pod: Pod): AdmitVerdict | undefined | Promise<AdmitVerdict | undefined> {
    const handler = this.opts.topologyAdmission;
    if (!handler) return undefined;
    const uid = pod.metadata.uid ?? '';
    // Pods queued behind this one hold nothing yet.
    const active = this.opts
      .activePods()
      .filter((p) => p.metadata.uid !== uid && !this.pendingAdmission.has(p.metadata.uid ?? ''));
    const result = handler.admit(pod, active);
    if (result instanceof Promise) return result.then((r) => (r.admit ? undefined : r));
    return result.admit ? undefined : result;
  }

  /** The predicates, against a node whose allocatable covers the devices already held (upstream: UpdatePluginResources). */
  private admitPredicates(pod: Pod): AdmitVerdict {
    const uid = pod.metadata.uid ?? '';
    // Pods queued for admission behind this one are not admitted yet: they hold nothing.
    const active = this.opts
      .activePods()
      .filter((p) => p.metadata.uid !== uid && !this.pendingAdmission.has(p.metadata.uid ?? ''));
    const counts = this.opts.deviceAdmission?.allocatedDeviceCounts();
    const node = this.opts.getNode();
    const verdict = canAdmitPod(pod, active, node && counts ? sanitizeNodeAllocatable(node, counts) : node);
    if (!verdict.admit) return verdict;
    // The node shutdown manager's handler is the last one upstream registers.
    const shutdown = this.opts.shutdownAdmit?.(pod);
    return shutdown && !shutdown.admit ? shutdown : verdict;
  }

  /** Admission with the device plugins' Allocate in it, queued behind any admission still running; decided gets the verdict. */
  admitLater(pod: Pod, decided: (verdict: AdmitVerdict) => void): void {
    const uid = pod.metadata.uid ?? '';
    this.pendingAdmission.add(uid);
    const admit = async (): Promise<void> => {
      let verdict: AdmitVerdict;
      try {
        verdict =
          this.admitBeforeResources(pod) ?? (await this.admitResources(pod)) ?? this.admitPredicates(pod);
      } catch (err) {
        verdict = unexpectedAdmissionError(err);
      } finally {
        this.pendingAdmission.delete(uid);
      }
      decided(verdict);
    };
    const tail = (this.admissionTail ?? Promise.resolve()).then(() =>
      admit().catch((err: unknown) =>
        log.error('Sync loop step failed for pod', {
          pod: podRef(pod),
          step: 'admit',
          err: errorMessage(err),
        }),
      ),
    );
    this.admissionTail = tail;
    void tail.then(() => {
      if (this.admissionTail === tail) this.admissionTail = undefined;
    });
  }
}
