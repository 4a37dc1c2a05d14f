/**
 * The CPU manager's checkpoint, `<root-dir>/cpu_manager_state`, in upstream's v2 format
 * (cpumanager/state/checkpoint.go):
 *
 *   {"policyName":"static","defaultCpuSet":"0,3","entries":{"<pod uid>":{"<container>":"1-2"}},"checksum":<uint32>}
 *
 * with "entries" left out when empty (omitempty). The checksum is upstream's checksum.New: FNV-32a
 * over go-spew's own `%#v` rendering (apimachinery dump.ForHash: keys sorted, no methods, no pointer
 * addresses) of the *CPUManagerCheckpoint with Checksum zeroed, e.g.
 *
 *   (*state.CPUManagerCheckpoint){PolicyName:(string)static DefaultCPUSet:(string)0-1
 *   Entries:(map[string]map[string]string)map[uid1:map[c1:2-3]] Checksum:(checksum.Checksum)0}
 *
 * (one line), checked byte for byte against files the upstream kubelet v1.28.7 wrote (the unit
 * test keeps two). A checksum of 0 is accepted unchecked, as upstream does for old files. The v1 format
 * (entries keyed by container ID) is not read: a file in it is reported as corrupt.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fnv32a } from '../../lib/fnv32a.js';
import { CorruptCheckpointError } from '../devicemanager/checkpoint.js';

export const CPU_MANAGER_CHECKPOINT = 'cpu_manager_state';

export interface CPUManagerCheckpoint {
  policyName: string;
  defaultCpuSet: string;
  /** podUID → container name → CPU list. */
  entries: Record<string, Record<string, string>>;
}

/** spew sorts string keys by their bytes. */
function sortedKeys(o: object): string[] {
  return Object.keys(o).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/** go-spew's `%#v` of the checkpoint with Checksum 0 (dump.ForHash). */
export function spewOf(cp: CPUManagerCheckpoint): string {
  const inner = (m: Record<string, string>): string =>
    `map[${sortedKeys(m)
      .map((k) => `${k}:${m[k] ?? ''}`)
      .join(' ')}]`;
  const entries = `map[${sortedKeys(cp.entries)
    .map((uid) => `${uid}:${inner(cp.entries[uid] ?? {})}`)
    .join(' ')}]`;
  return (
    `(*state.CPUManagerCheckpoint){PolicyName:(string)${cp.policyName} ` +
    `DefaultCPUSet:(string)${cp.defaultCpuSet} ` +
    `Entries:(map[string]map[string]string)${entries} Checksum:(checksum.Checksum)0}`
  );
}

export function checkpointChecksum(cp: CPUManagerCheckpoint): number {
  return fnv32a(Buffer.from(spewOf(cp), 'utf8'));
}

/** Go's encoding/json string escaping: JSON.stringify's plus <, >, & and U+2028/9 as \u escapes. */
function goJSONString(s: string): string {
  return JSON.stringify(s).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The file's bytes as Go's json.Marshal writes them (struct field order, map keys sorted). */
export function marshalCheckpoint(cp: CPUManagerCheckpoint): string {
  const fields = [
    `"policyName":${goJSONString(cp.policyName)}`,
    `"defaultCpuSet":${goJSONString(cp.defaultCpuSet)}`,
  ];
  const uids = sortedKeys(cp.entries);
  if (uids.length > 0) {
    const pods = uids.map((uid) => {
      const m = cp.entries[uid] ?? {};
      const containers = sortedKeys(m).map((c) => `${goJSONString(c)}:${goJSONString(m[c] ?? '')}`);
      return `${goJSONString(uid)}:{${containers.join(',')}}`;
    });
    fields.push(`"entries":{${pods.join(',')}}`);
  }
  fields.push(`"checksum":${checkpointChecksum(cp)}`);
  return `{${fields.join(',')}}`;
}

/** Go's encoding/json finds a field by its exact key, else by a key equal to it ignoring case. */
function field(o: Record<string, unknown>, key: string): unknown {
  if (key in o) return o[key];
  const folded = Object.keys(o).find((k) => k.toLowerCase() === key.toLowerCase());
  return folded === undefined ? undefined : o[folded];
}

function stringField(o: Record<string, unknown>, key: string): string {
  const v = field(o, key);
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new CorruptCheckpointError(`${key} is not a string`);
  return v;
}

function parseEntries(v: unknown): Record<string, Record<string, string>> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new CorruptCheckpointError('entries is not an object');
  const out: Record<string, Record<string, string>> = {};
  for (const [uid, containers] of Object.entries(v as Record<string, unknown>)) {
    if (typeof containers !== 'object' || containers === null || Array.isArray(containers))
      throw new CorruptCheckpointError(`entries[${uid}] is not an object of container → cpuset`);
    const m: Record<string, string> = {};
    for (const [name, cpus] of Object.entries(containers as Record<string, unknown>)) {
      if (typeof cpus !== 'string')
        throw new CorruptCheckpointError(`entries[${uid}][${name}] is not a string`);
      m[name] = cpus;
    }
    out[uid] = m;
  }
  return out;
}

/** Parses and verifies the file's text; throws CorruptCheckpointError when it cannot be trusted. */
export function unmarshalCheckpoint(text: string): CPUManagerCheckpoint {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CorruptCheckpointError(`not JSON: ${(err as Error).message}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new CorruptCheckpointError('not a JSON object');
  const o = json as Record<string, unknown>;
  const cp: CPUManagerCheckpoint = {
    policyName: stringField(o, 'policyName'),
    defaultCpuSet: stringField(o, 'defaultCpuSet'),
    entries: parseEntries(field(o, 'entries')),
  };
  const sum = field(o, 'checksum') ?? 0;
  if (sum !== 0 && sum !== checkpointChecksum(cp))
    throw new CorruptCheckpointError(
      `checkpoint is corrupted: checksum ${String(sum)} does not match the data's ${checkpointChecksum(cp)}`,
    );
  return cp;
}

/** The checkpoint in rootDir; undefined when there is none yet (a first start). */
export async function readCPUManagerCheckpoint(rootDir: string): Promise<CPUManagerCheckpoint | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(rootDir, CPU_MANAGER_CHECKPOINT), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return unmarshalCheckpoint(text);
}

/** Writes atomically (a temporary file renamed over the old one), as upstream's file store does. */
export async function writeCPUManagerCheckpoint(rootDir: string, cp: CPUManagerCheckpoint): Promise<void> {
  const file = path.join(rootDir, CPU_MANAGER_CHECKPOINT);
  const tmp = `${file}.tmp-${process.pid}`;
  // Upstream's file store makes its folder first.
  await mkdir(rootDir, { recursive: true, mode: 0o755 });
  await writeFile(tmp, marshalCheckpoint(cp), { mode: 0o600 });
  await rename(tmp, file);
}
