/**
 * What kubectl prints for `get pods`, `describe pod` and `events`, from the objects the local
 * kubelet serves. Pure functions of the objects and the time, so tests compare whole outputs.
 */
import type { Container, ContainerState, ContainerStatus, Pod, Probe } from '../api/core-v1.js';
import { ageText, podDisplay, restartsText } from '../api/pod-display.js';
import type { CoreEvent } from '../events/event-types.js';
import { DESCRIBE, TABLE, tabwrite } from './tabwriter.js';
import { compareStrings } from '../lib/compare.js';

export function printPods(pods: Pod[], nowMs: number, allNamespaces: boolean): string {
  const rows = [`${allNamespaces ? 'NAMESPACE\t' : ''}NAME\tREADY\tSTATUS\tRESTARTS\tAGE`];
  for (const p of pods) {
    const d = podDisplay(p);
    rows.push(
      `${allNamespaces ? `${p.metadata.namespace ?? ''}\t` : ''}${p.metadata.name ?? ''}\t${d.ready}\t${d.status}\t${restartsText(d, nowMs)}\t${ageText(p.metadata.creationTimestamp ?? p.status?.startTime, nowMs)}`,
    );
  }
  return tabwrite(`${rows.join('\n')}\n`, TABLE);
}

/** kubectl's LAST SEEN: "5s", or "5s (x3 over 2m)" for a repeated event. */
function lastSeen(e: CoreEvent, nowMs: number): string {
  const last = ageText(e.lastTimestamp || e.firstTimestamp, nowMs);
  return e.count > 1 ? `${last} (x${e.count} over ${ageText(e.firstTimestamp, nowMs)})` : last;
}

function objectName(e: CoreEvent): string {
  return `${(e.involvedObject.kind ?? '').toLowerCase()}/${e.involvedObject.name ?? ''}`;
}

/** `kubectl events`: oldest first, as it sorts them. */
export function printEvents(events: CoreEvent[], nowMs: number, allNamespaces: boolean): string {
  const sorted = [...events].sort(
    (a, b) =>
      Date.parse(a.lastTimestamp || a.firstTimestamp) - Date.parse(b.lastTimestamp || b.firstTimestamp),
  );
  const rows = [`${allNamespaces ? 'NAMESPACE\t' : ''}LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE`];
  for (const e of sorted)
    rows.push(
      `${allNamespaces ? `${e.metadata.namespace}\t` : ''}${lastSeen(e, nowMs)}\t${e.type}\t${e.reason}\t${objectName(e)}\t${e.message.trim()}`,
    );
  return tabwrite(`${rows.join('\n')}\n`, TABLE);
}

/** Go's RFC1123Z in UTC, as describe prints times ("Mon, 02 Jan 2006 15:04:05 +0000"). */
function rfc1123z(ts: string | undefined): string {
  if (!ts) return '<unset>';
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts;
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const p2 = (n: number) => String(n).padStart(2, '0');
  return `${days[d.getUTCDay()]}, ${p2(d.getUTCDate())} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}:${p2(d.getUTCSeconds())} +0000`;
}

function mapLines(label: string, m: Record<string, string> | undefined, sep: string): string[] {
  const entries = Object.entries(m ?? {}).sort(([a], [b]) => compareStrings(a, b));
  if (entries.length === 0) return [`${label}\t<none>`];
  return entries.map(([k, v], i) => `${i === 0 ? label : ''}\t${k}${sep}${v}`);
}

function stateLines(indent: string, label: string, s: ContainerState | undefined): string[] {
  if (s?.running)
    return [`${indent}${label}:\tRunning`, `${indent}  Started:\t${rfc1123z(s.running.startedAt)}`];
  if (s?.waiting)
    return [
      `${indent}${label}:\tWaiting`,
      ...(s.waiting.reason ? [`${indent}  Reason:\t${s.waiting.reason}`] : []),
      ...(s.waiting.message ? [`${indent}  Message:\t${s.waiting.message}`] : []),
    ];
  if (s?.terminated) {
    const t = s.terminated;
    return [
      `${indent}${label}:\tTerminated`,
      ...(t.reason ? [`${indent}  Reason:\t${t.reason}`] : []),
      ...(t.message ? [`${indent}  Message:\t${t.message}`] : []),
      `${indent}  Exit Code:\t${t.exitCode}`,
      ...(t.signal ? [`${indent}  Signal:\t${t.signal}`] : []),
      `${indent}  Started:\t${rfc1123z(t.startedAt)}`,
      `${indent}  Finished:\t${rfc1123z(t.finishedAt)}`,
    ];
  }
  return label === 'State' ? [`${indent}${label}:\tWaiting`] : [];
}

function probeText(p: Probe): string {
  const a = p as Probe & {
    exec?: { command?: string[] };
    httpGet?: { path?: string; port?: number | string; host?: string; scheme?: string };
    tcpSocket?: { port?: number | string; host?: string };
    grpc?: { port?: number; service?: string };
  };
  let how = 'unknown';
  if (a.exec) how = `exec [${(a.exec.command ?? []).join(' ')}]`;
  else if (a.httpGet)
    how = `http-get ${(a.httpGet.scheme ?? 'HTTP').toLowerCase()}://${a.httpGet.host ?? ''}:${a.httpGet.port ?? ''}${a.httpGet.path ?? ''}`;
  else if (a.tcpSocket) how = `tcp-socket ${a.tcpSocket.host ?? ''}:${a.tcpSocket.port ?? ''}`;
  else if (a.grpc) how = `grpc <pod>:${a.grpc.port ?? ''} ${a.grpc.service ?? ''}`.trimEnd();
  return `${how} delay=${p.initialDelaySeconds ?? 0}s timeout=${p.timeoutSeconds ?? 1}s period=${p.periodSeconds ?? 10}s #success=${p.successThreshold ?? 1} #failure=${p.failureThreshold ?? 3}`;
}

function containerLines(c: Container, cs: ContainerStatus | undefined): string[] {
  const lines = [`  ${c.name}:`];
  if (cs?.containerID) lines.push(`    Container ID:\t${cs.containerID}`);
  lines.push(`    Image:\t${c.image ?? ''}`);
  lines.push(`    Image ID:\t${cs?.imageID ?? ''}`);
  const ports = c.ports ?? [];
  lines.push(
    `    Port:\t${ports.length ? ports.map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'}`).join(', ') : '<none>'}`,
  );
  lines.push(
    `    Host Port:\t${ports.length ? ports.map((p) => `${p.hostPort ?? 0}/${p.protocol ?? 'TCP'}`).join(', ') : '<none>'}`,
  );
  if (c.command?.length) lines.push('    Command:', ...c.command.map((x) => `      ${x}`));
  if (c.args?.length) lines.push('    Args:', ...c.args.map((x) => `      ${x}`));
  lines.push(...stateLines('    ', 'State', cs?.state));
  lines.push(...stateLines('    ', 'Last State', cs?.lastState));
  lines.push(`    Ready:\t${cs?.ready ? 'True' : 'False'}`);
  lines.push(`    Restart Count:\t${cs?.restartCount ?? 0}`);
  const res = c.resources;
  if (res?.limits && Object.keys(res.limits).length)
    lines.push('    Limits:', ...Object.entries(res.limits).map(([k, v]) => `      ${k}:\t${v}`));
  if (res?.requests && Object.keys(res.requests).length)
    lines.push('    Requests:', ...Object.entries(res.requests).map(([k, v]) => `      ${k}:\t${v}`));
  if (c.livenessProbe) lines.push(`    Liveness:\t${probeText(c.livenessProbe)}`);
  if (c.readinessProbe) lines.push(`    Readiness:\t${probeText(c.readinessProbe)}`);
  if (c.startupProbe) lines.push(`    Startup:\t${probeText(c.startupProbe)}`);
  const env = c.env ?? [];
  if (env.length === 0) lines.push('    Environment:\t<none>');
  else
    lines.push(
      '    Environment:',
      ...env.map((e) => `      ${e.name}:\t${e.value ?? (e.valueFrom ? '<set from a reference>' : '')}`),
    );
  const mounts = c.volumeMounts ?? [];
  if (mounts.length === 0) lines.push('    Mounts:\t<none>');
  else
    lines.push(
      '    Mounts:',
      ...mounts.map((m) => `      ${m.mountPath} from ${m.name} (${m.readOnly ? 'ro' : 'rw'})`),
    );
  return lines;
}

function qosClass(pod: Pod): string {
  const q = (pod.status as { qosClass?: string } | undefined)?.qosClass;
  return q ?? 'BestEffort';
}

/** `kubectl describe pod`, with the events the node keeps for it. */
export function describePod(pod: Pod, events: CoreEvent[], nowMs: number): string {
  const m = pod.metadata;
  const s = pod.status ?? {};
  const lines: string[] = [
    `Name:\t${m.name ?? ''}`,
    `Namespace:\t${m.namespace ?? ''}`,
    `Priority:\t${pod.spec.priority ?? 0}`,
    ...(pod.spec.priorityClassName ? [`Priority Class Name:\t${pod.spec.priorityClassName}`] : []),
    `Service Account:\t${pod.spec.serviceAccountName ?? ''}`,
    `Node:\t${pod.spec.nodeName ?? '<none>'}${s.hostIP ? `/${s.hostIP}` : ''}`,
    `Start Time:\t${rfc1123z(s.startTime)}`,
    ...mapLines('Labels:', m.labels, '='),
    ...mapLines('Annotations:', m.annotations, ': '),
    `Status:\t${m.deletionTimestamp ? 'Terminating' : (s.phase ?? 'Pending')}`,
    ...(s.reason ? [`Reason:\t${s.reason}`] : []),
    ...(s.message ? [`Message:\t${s.message}`] : []),
    `IP:\t${s.podIP ?? ''}`,
    'IPs:',
    ...(s.podIPs?.length ? s.podIPs.map((ip) => `  IP:\t${ip.ip}`) : ['  <none>']),
  ];
  const find = (list: ContainerStatus[] | undefined, name: string) => list?.find((c) => c.name === name);
  if (pod.spec.initContainers?.length) {
    lines.push('Init Containers:');
    for (const c of pod.spec.initContainers)
      lines.push(...containerLines(c, find(s.initContainerStatuses, c.name)));
  }
  lines.push('Containers:');
  for (const c of pod.spec.containers) lines.push(...containerLines(c, find(s.containerStatuses, c.name)));
  if (s.conditions?.length)
    lines.push('Conditions:', '  Type\tStatus', ...s.conditions.map((c) => `  ${c.type}\t${c.status}`));
  const volumes = pod.spec.volumes ?? [];
  if (volumes.length === 0) lines.push('Volumes:\t<none>');
  else {
    lines.push('Volumes:');
    for (const v of volumes) {
      const kind = Object.keys(v).find((k) => k !== 'name') ?? 'unknown';
      lines.push(`  ${v.name}:`, `    Type:\t${kind}`);
    }
  }
  lines.push(`QoS Class:\t${qosClass(pod)}`);
  lines.push(...mapLines('Node-Selectors:', pod.spec.nodeSelector, '='));
  const tol = pod.spec.tolerations ?? [];
  if (tol.length === 0) lines.push('Tolerations:\t<none>');
  else
    tol.forEach((t, i) => {
      const key = t.key ?? '';
      const op = t.operator === 'Exists' ? (key ? ` op=Exists` : 'op=Exists') : t.value ? `=${t.value}` : '';
      const eff = t.effect ? `:${t.effect}` : '';
      const secs = t.tolerationSeconds !== undefined ? ` for ${t.tolerationSeconds}s` : '';
      lines.push(`${i === 0 ? 'Tolerations:' : ''}\t${key}${op}${eff}${secs}`);
    });
  if (events.length === 0) lines.push('Events:\t<none>');
  let out = tabwrite(`${lines.join('\n')}\n`, DESCRIBE);
  if (events.length === 0) return out;
  const sorted = [...events].sort(
    (a, b) =>
      Date.parse(a.lastTimestamp || a.firstTimestamp) - Date.parse(b.lastTimestamp || b.firstTimestamp),
  );
  const rows = ['  Type\tReason\tAge\tFrom\tMessage', '  ----\t------\t----\t----\t-------'];
  for (const e of sorted) {
    const age =
      e.count > 1
        ? `${ageText(e.lastTimestamp, nowMs)} (x${e.count} over ${ageText(e.firstTimestamp, nowMs)})`
        : ageText(e.firstTimestamp, nowMs);
    rows.push(`  ${e.type}\t${e.reason}\t${age}\t${e.source.component ?? ''}\t${e.message.trim()}`);
  }
  out += `Events:\n${tabwrite(`${rows.join('\n')}\n`, DESCRIBE)}`;
  return out;
}
