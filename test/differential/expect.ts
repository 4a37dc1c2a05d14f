/**
 * The vocabulary of the differential harness: a pod's status and events brought to a canonical form
 * (times, IDs and addresses replaced by placeholders, everything else kept, unknown fields included),
 * the matchers an expectation may use where upstream's own value varies (a message with a duration, a
 * restart count that depends on timing), and a field-by-field diff a person can read.
 */
import type { ContainerStatus, Pod, PodStatus } from '../../src/api/core-v1.js';
import type { CoreEvent } from '../../src/events/event-types.js';

/** A value an expectation accepts other than by equality. */
export abstract class Matcher {
  abstract test(actual: unknown): boolean;
  abstract describe(): string;
}

class PatternMatcher extends Matcher {
  constructor(private readonly pattern: RegExp) {
    super();
  }
  test(actual: unknown): boolean {
    return typeof actual === 'string' && this.pattern.test(actual);
  }
  describe(): string {
    return String(this.pattern);
  }
}

class RangeMatcher extends Matcher {
  constructor(
    private readonly min: number,
    private readonly max: number,
  ) {
    super();
  }
  test(actual: unknown): boolean {
    return typeof actual === 'number' && actual >= this.min && actual <= this.max;
  }
  describe(): string {
    return `a number in [${this.min}, ${this.max}]`;
  }
}

class OneOfMatcher extends Matcher {
  constructor(private readonly alternatives: unknown[]) {
    super();
  }
  test(actual: unknown): boolean {
    return this.alternatives.some((a) => diffValues(a, actual).length === 0);
  }
  describe(): string {
    return `one of ${this.alternatives.map((a) => show(a)).join(' | ')}`;
  }
}

/** Any of these values (each compared as a whole): where upstream's own value depends on timing. */
export const oneOf = (...alternatives: unknown[]): Matcher => new OneOfMatcher(alternatives);

/** A string matching the pattern. */
export const re = (pattern: RegExp): Matcher => new PatternMatcher(pattern);
/** A number between min and max, both included. */
export const range = (min: number, max = Number.MAX_SAFE_INTEGER): Matcher => new RangeMatcher(min, max);

/** Escapes text for a RegExp: expectations quote upstream's messages literally around their variable parts. */
export function lit(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

export const TIME = '<time>';
export const IP = '<ip>';
export const CONTAINER_ID = '<containerID>';
export const IMAGE_ID = '<imageID>';

function normaliseState(state: Record<string, unknown> | undefined): unknown {
  if (!state) return state;
  const out: Record<string, unknown> = {};
  for (const [kind, detail] of Object.entries(state)) {
    if (detail === null || detail === undefined) continue;
    const d: Record<string, unknown> = { ...(detail as Record<string, unknown>) };
    for (const t of ['startedAt', 'finishedAt']) if (d[t]) d[t] = TIME;
    if (d.containerID) d.containerID = CONTAINER_ID;
    out[kind] = d;
  }
  return out;
}

function normaliseContainerStatus(cs: ContainerStatus): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(cs as unknown as Record<string, unknown>) };
  out.state = normaliseState(cs.state as Record<string, unknown> | undefined);
  out.lastState = normaliseState(cs.lastState as Record<string, unknown> | undefined);
  if (out.containerID) out.containerID = CONTAINER_ID;
  if (out.imageID) out.imageID = IMAGE_ID;
  return out;
}

/**
 * The whole status with what changes from run to run replaced: times, container and image IDs, IP
 * addresses. Conditions keep type, status, reason and message (their times are dropped) and are
 * sorted by type, since a merge patch may reorder them.
 */
export function normaliseStatus(status: PodStatus | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { ...((status ?? {}) as unknown as Record<string, unknown>) };
  if (out.startTime) out.startTime = TIME;
  for (const key of ['hostIP', 'podIP']) if (out[key]) out[key] = IP;
  for (const key of ['hostIPs', 'podIPs'])
    if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map(() => ({ ip: IP }));
  if (status?.conditions) {
    out.conditions = [...status.conditions]
      .map((c) => {
        const n: Record<string, unknown> = { type: c.type, status: c.status };
        if (c.reason) n.reason = c.reason;
        if (c.message) n.message = c.message;
        return n;
      })
      .sort((a, b) => String(a.type).localeCompare(String(b.type)));
  }
  for (const key of ['containerStatuses', 'initContainerStatuses'] as const) {
    const list = status?.[key];
    if (list) out[key] = list.map(normaliseContainerStatus);
  }
  return out;
}

/** An event as the harness compares it. fieldPath is '' for events about the pod itself. */
export interface EventView {
  type: string;
  reason: string;
  fieldPath: string;
  message: string;
  count: number;
}

export function eventViews(events: CoreEvent[], pod: Pod): EventView[] {
  return events
    .filter((e) => e.involvedObject.name === pod.metadata.name && e.involvedObject.kind === 'Pod')
    .map((e) => ({
      type: e.type ?? '',
      reason: e.reason ?? '',
      fieldPath: e.involvedObject.fieldPath ?? '',
      message: e.message ?? '',
      count: e.count ?? 1,
    }));
}

/** One expected event: all events with its type, reason and fieldPath must match the message. */
export interface ExpectedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  fieldPath?: string;
  message: string | Matcher;
  /** Upstream may or may not have emitted it yet at the settled moment (a back-off, a retry). */
  optional?: boolean;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Matcher);
}

function isEmpty(v: unknown): boolean {
  return (Array.isArray(v) && v.length === 0) || (isPlainObject(v) && Object.keys(v).length === 0);
}

function show(v: unknown): string {
  if (v instanceof Matcher) return v.describe();
  if (v === undefined) return '(absent)';
  return JSON.stringify(v);
}

/** Every difference between expected and actual, one line each, as `path: expected …, got …`. */
export function diffValues(expected: unknown, actual: unknown, at = ''): string[] {
  if (expected instanceof Matcher)
    return expected.test(actual) ? [] : [`${at}: expected ${expected.describe()}, got ${show(actual)}`];
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${at}: expected ${show(expected)}, got ${show(actual)}`];
    const out: string[] = [];
    const n = Math.max(expected.length, actual.length);
    for (let i = 0; i < n; i++) {
      const key = (expected[i] as { name?: string; type?: string } | undefined) ?? actual[i];
      const label = key?.name ?? key?.type ?? String(i);
      if (i >= expected.length) out.push(`${at}[${label}]: unexpected ${show(actual[i])}`);
      else if (i >= actual.length) out.push(`${at}[${label}]: missing ${show(expected[i])}`);
      else out.push(...diffValues(expected[i], actual[i], `${at}[${label}]`));
    }
    return out;
  }
  if (isPlainObject(expected)) {
    if (!isPlainObject(actual)) return [`${at}: expected ${show(expected)}, got ${show(actual)}`];
    const out: string[] = [];
    const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
    for (const k of [...keys].sort()) {
      const e = expected[k];
      const a = actual[k];
      // An absent field and an empty one read the same in `kubectl get -o yaml`'s omitempty output.
      if ((e === undefined || e === '' || e === false) && (a === undefined || a === '' || a === false))
        continue;
      if ((e === undefined || isEmpty(e)) && (a === undefined || isEmpty(a))) continue;
      if (e === undefined) {
        out.push(`${at}.${k}: unexpected ${show(a)}`);
        continue;
      }
      out.push(...diffValues(e, a, `${at}.${k}`));
    }
    return out;
  }
  return expected === actual ? [] : [`${at}: expected ${show(expected)}, got ${show(actual)}`];
}

function eventKey(e: { type: string; reason: string; fieldPath?: string }): string {
  return `${e.type} ${e.reason} ${e.fieldPath ?? ''}`.trim();
}

/** The events' differences: each expected (type, reason, fieldPath) present with matching messages, no others. */
export function diffEvents(expected: ExpectedEvent[], actual: EventView[]): string[] {
  const out: string[] = [];
  const byKey = new Map<string, EventView[]>();
  for (const a of actual) byKey.set(eventKey(a), [...(byKey.get(eventKey(a)) ?? []), a]);
  const expectedKeys = new Map<string, ExpectedEvent[]>();
  for (const e of expected) expectedKeys.set(eventKey(e), [...(expectedKeys.get(eventKey(e)) ?? []), e]);
  for (const [key, exps] of expectedKeys) {
    const seen = byKey.get(key) ?? [];
    if (seen.length === 0) {
      if (exps.some((e) => !e.optional))
        out.push(`event ${key}: missing (${exps.map((e) => show(e.message)).join(' | ')})`);
      continue;
    }
    for (const a of seen) {
      const ok = exps.some((e) =>
        e.message instanceof Matcher ? e.message.test(a.message) : e.message === a.message,
      );
      if (!ok)
        out.push(
          `event ${key}: message ${JSON.stringify(a.message)} matches none of ${exps.map((e) => show(e.message)).join(' | ')}`,
        );
    }
    for (const e of exps) {
      if (e.optional) continue;
      const hit = seen.some((a) =>
        e.message instanceof Matcher ? e.message.test(a.message) : e.message === a.message,
      );
      if (!hit && exps.length > 1) out.push(`event ${key}: none with message ${show(e.message)}`);
    }
  }
  for (const [key, seen] of byKey)
    if (!expectedKeys.has(key)) out.push(`event ${key}: unexpected (${JSON.stringify(seen[0]?.message)})`);
  return out;
}
