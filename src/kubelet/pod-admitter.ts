/**
 * Node admission as the sync loop runs it (upstream: the admit handlers of canAdmitPod): the eviction
 * handler, the sysctl allowlist, AppArmor and the CPU manager, then the device manager's Allocate
 * (queued, one pod at a time, since plugins answer asynchronously), then the predicates against the
 * node and the node shutdown manager. Only the verdict is decided here; the kubelet acts on it.
 */
import type { Pod } from '../api/core-v1.js';
import { errorMessage } from '../lib/errors.js';
import { logger } from '../lib/log.js';
import { AdmissionReason, canAdmitPod, sanitizeNodeAllocatable } from './admission.js';
import { AppArmorValidator } from './apparmor-validator.js';
import type { CPUAllocator, DeviceAdmission, KubeletOptions, MemoryAllocator } from './kubelet-options.js';
import { SysctlAllowlist } from './sysctl-allowlist.js';

const log = logger('kubelet');

export type AdmitVerdict = ReturnType<typeof canAdmitPod>;

export interface PodAdmitterOptions extends Pick<
  KubeletOptions,
  'evictionAdmit' | 'shutdownAdmit' | 'sysctlAllowlist' | 'appArmorValidator' | 'getNode'
> {
  cpuAllocator?: CPUAllocator;
  memoryAllocator?: MemoryAllocator;
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

/** namespace/name, for logs. */
function podRef(pod: Pod): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
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
      return this.admitBeforeDevices(pod) ?? this.admitPredicates(pod);
    } catch (err) {
      return unexpectedAdmissionError(err);
    }
  }

  /** Upstream's eviction handler comes first, then the sysctl allowlist, then AppArmor; undefined when all admit. */
  private admitBeforeDevices(pod: Pod): AdmitVerdict | undefined {
    const eviction = this.opts.evictionAdmit?.(pod);
    if (eviction && !eviction.admit) return eviction;
    const sysctls = this.sysctlAllowlist.admit(pod);
    if (!sysctls.admit) return sysctls;
    const appArmor = this.appArmorValidator.admit(pod);
    if (!appArmor.admit) return appArmor;
    return this.allocateCPUs(pod);
  }

  /**
   * upstream's admission.GetPodAdmitResult of the CPU or memory manager's Allocate error: its own
   * reason when it has one (SMTAlignmentError), else UnexpectedAdmissionError.
   */
  private allocateCPUs(pod: Pod): AdmitVerdict | undefined {
    try {
      this.opts.cpuAllocator?.allocate(pod);
      this.opts.memoryAllocator?.allocatePod(pod);
      return undefined;
    } catch (err) {
      const reason = (err as { reason?: unknown }).reason;
      if (typeof reason === 'string') return { admit: false, reason, message: errorMessage(err) };
      return {
        admit: false,
        reason: AdmissionReason.UnexpectedAdmissionError,
        message: `Allocate failed due to ${errorMessage(err)}, which is unexpected`,
      };
    }
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
          this.admitBeforeDevices(pod) ?? (await this.allocateDevices(pod)) ?? this.admitPredicates(pod);
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

  /** The device manager's verdict (upstream: admission.GetPodAdmitResult of Allocate's error); undefined when it admits. */
  private async allocateDevices(pod: Pod): Promise<AdmitVerdict | undefined> {
    const devices = this.opts.deviceAdmission;
    // A pod that asks for no device has nothing to allocate (upstream's Allocate loops over nothing).
    if (!devices?.podRequestsDevices(pod)) return undefined;
    try {
      await devices.allocatePod(pod);
      return undefined;
    } catch (err) {
      return {
        admit: false,
        reason: AdmissionReason.UnexpectedAdmissionError,
        message: `Allocate failed due to ${errorMessage(err)}, which is unexpected`,
      };
    }
  }
}
