/**
 * The JSON body of `/pods`, with each pod serialised again only when it or its status changed.
 * Pollers (a monitoring agent, `kubectl get --raw`, the density bench) ask for it many times a
 * second, and serialising every pod each time was the kubelet API's main cost while pods start: a
 * start changes a few statuses between two polls, not all of them. It relies on the kubelet's
 * contract that pods and statuses are replaced, never changed in place (PodManager, the status
 * manager): the same objects mean the same JSON.
 */
import type { Pod } from '../api/core-v1.js';

interface Serialised {
  metadata: unknown;
  spec: unknown;
  status: unknown;
  json: string;
}

const HEAD = '{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[';
const TAIL = ']}';

export class PodListBody {
  /** By UID, the last serialisation of each pod; pods gone from the list are dropped. */
  private pods = new Map<string, Serialised>();
  private last: { parts: string[]; body: Buffer } | undefined;

  /** The serialised PodList of pods; the same buffer again when nothing in it changed. */
  for(pods: readonly Pod[]): Buffer {
    const next = new Map<string, Serialised>();
    const parts: string[] = [];
    for (const p of pods) {
      const key = p.metadata.uid ?? `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`;
      let s = this.pods.get(key);
      if (!s || s.metadata !== p.metadata || s.spec !== p.spec || s.status !== p.status) {
        s = { metadata: p.metadata, spec: p.spec, status: p.status, json: JSON.stringify(p) };
      }
      next.set(key, s);
      parts.push(s.json);
    }
    this.pods = next;
    if (this.last && sameParts(this.last.parts, parts)) return this.last.body;
    const body = Buffer.from(HEAD + parts.join(',') + TAIL);
    this.last = { parts, body };
    return body;
  }
}

/** The same strings in the same order (an unchanged pod keeps its very string: a pointer check). */
function sameParts(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
