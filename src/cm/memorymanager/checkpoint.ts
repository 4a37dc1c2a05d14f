/**
 * The memory manager's checkpoint, `<root-dir>/memory_manager_state`, in upstream's format
 * (memorymanager/state/checkpoint.go, Go's json.Marshal of MemoryManagerCheckpoint):
 *
 *   {"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"memory":
 *    {"total":…,"systemReserved":…,"allocatable":…,"reserved":…,"free":…}},"cells":[0]}},
 *    "entries":{"<pod uid>":{"<container>":[{"numaAffinity":[0],"type":"memory","size":…}]}},
 *    "checksum":<uint32>}
 *
 * with "entries" left out when empty (omitempty) and map keys sorted as strings ("10" before "2"),
 * as encoding/json sorts them. The checksum is upstream's checksum.New: FNV-32a over go-spew's `%#v`
 * (apimachinery dump.ForHash: keys sorted, integer keys by value, no methods, no pointer addresses)
 * of the *MemoryManagerCheckpoint with Checksum zeroed, one line:
 *
 *   (*state.MemoryManagerCheckpoint){PolicyName:(string)Static MachineState:(state.NUMANodeMap)map[
 *   0:<*>{NumberOfAssignments:(int)1 MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[memory:<*>{
 *   TotalMemSize:(uint64)… SystemReserved:(uint64)… Allocatable:(uint64)… Reserved:(uint64)… Free:(uint64)…}]
 *   Cells:([]int)[0]}] Entries:(state.ContainerMemoryAssignments)map[<uid>:map[<name>:[{NUMAAffinity:
 *   ([]int)[0] Type:(v1.ResourceName)memory Size:(uint64)…}]]] Checksum:(checksum.Checksum)0}
 *
 * Spew writes a pointer met as a map value as `<*>` (its type is not shown there) and nil as `<nil>`,
 * so null and empty are kept apart here too. Unlike the CPU manager's, a checksum of 0 is not
 * accepted: upstream's memory manager has no older format to let through.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fnv32a } from '../../lib/fnv32a.js';
import { CorruptCheckpointError } from '../devicemanager/checkpoint.js';
import type {
  ContainerMemoryAssignments,
  MemoryBlock,
  MemoryTable,
  NUMANodeMap,
  NUMANodeState,
} from './memory-state.js';

export const MEMORY_MANAGER_CHECKPOINT = 'memory_manager_state';

export interface MemoryManagerCheckpoint {
  policyName: string;
  /** null: the file's `"machineState":null` (Go's nil map). */
  machineState: NUMANodeMap | null;
  /** null: the file's `"entries":null`; an absent field reads as empty, as upstream's decoder leaves it. */
  entries: ContainerMemoryAssignments | null;
}

// ---- go-spew's %#v ------------------------------------------------------------------------------

/** Byte order, as spew and encoding/json sort string keys. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

const spewInts = (list: readonly number[] | null): string =>
  list === null ? '<nil>' : `[${list.join(' ')}]`;

function spewTable(t: MemoryTable): string {
  return (
    `<*>{TotalMemSize:(uint64)${t.total} SystemReserved:(uint64)${t.systemReserved} ` +
    `Allocatable:(uint64)${t.allocatable} Reserved:(uint64)${t.reserved} Free:(uint64)${t.free}}`
  );
}

function spewNode(s: NUMANodeState): string {
  const map =
    s.memoryMap === null
      ? '<nil>'
      : `map[${[...s.memoryMap.keys()]
          .sort(byBytes)
          .map((k) => `${k}:${spewTable(s.memoryMap!.get(k)!)}`)
          .join(' ')}]`;
  return (
    `<*>{NumberOfAssignments:(int)${s.numberOfAssignments} ` +
    `MemoryMap:(map[v1.ResourceName]*state.MemoryTable)${map} Cells:([]int)${spewInts(s.cells)}}`
  );
}

function spewBlock(b: MemoryBlock): string {
  return `{NUMAAffinity:([]int)${spewInts(b.numaAffinity)} Type:(v1.ResourceName)${b.type} Size:(uint64)${b.size}}`;
}

function spewEntries(entries: ContainerMemoryAssignments | null): string {
  if (entries === null) return '<nil>';
  const pods = [...entries.keys()].sort(byBytes).map((uid) => {
    const containers = entries.get(uid)!;
    const inner = [...containers.keys()]
      .sort(byBytes)
      .map((name) => `${name}:[${containers.get(name)!.map(spewBlock).join(' ')}]`);
    return `${uid}:map[${inner.join(' ')}]`;
  });
  return `map[${pods.join(' ')}]`;
}

/** go-spew's `%#v` of the checkpoint with Checksum 0 (dump.ForHash). */
export function spewOf(cp: MemoryManagerCheckpoint): string {
  const machine =
    cp.machineState === null
      ? '<nil>'
      : `map[${[...cp.machineState.keys()]
          .sort((a, b) => a - b)
          .map((id) => `${id}:${spewNode(cp.machineState!.get(id)!)}`)
          .join(' ')}]`;
  return (
    `(*state.MemoryManagerCheckpoint){PolicyName:(string)${cp.policyName} ` +
    `MachineState:(state.NUMANodeMap)${machine} ` +
    `Entries:(state.ContainerMemoryAssignments)${spewEntries(cp.entries)} Checksum:(checksum.Checksum)0}`
  );
}

export function checkpointChecksum(cp: MemoryManagerCheckpoint): number {
  return fnv32a(Buffer.from(spewOf(cp), 'utf8'));
}

// ---- Go's json.Marshal --------------------------------------------------------------------------

/** Go's string escaping: JSON.stringify's plus <, >, & and U+2028/9 as \u escapes. */
function goJSONString(s: string): string {
  return JSON.stringify(s).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const jsonInts = (list: readonly number[] | null): string => (list === null ? 'null' : `[${list.join(',')}]`);

/** An object of sorted keys, each value already marshalled. */
function jsonObject(entries: Iterable<[string, string]>): string {
  const list = [...entries].sort(([a], [b]) => byBytes(a, b));
  return `{${list.map(([k, v]) => `${goJSONString(k)}:${v}`).join(',')}}`;
}

function jsonNode(s: NUMANodeState): string {
  const map =
    s.memoryMap === null
      ? 'null'
      : jsonObject(
          [...s.memoryMap].map(([k, t]) => [
            k,
            `{"total":${t.total},"systemReserved":${t.systemReserved},"allocatable":${t.allocatable},` +
              `"reserved":${t.reserved},"free":${t.free}}`,
          ]),
        );
  return `{"numberOfAssignments":${s.numberOfAssignments},"memoryMap":${map},"cells":${jsonInts(s.cells)}}`;
}

function jsonBlock(b: MemoryBlock): string {
  return `{"numaAffinity":${jsonInts(b.numaAffinity)},"type":${goJSONString(b.type)},"size":${b.size}}`;
}

/** The file's bytes as Go's json.Marshal writes them. */
export function marshalCheckpoint(cp: MemoryManagerCheckpoint): string {
  const fields = [`"policyName":${goJSONString(cp.policyName)}`];
  fields.push(
    `"machineState":${
      cp.machineState === null
        ? 'null'
        : jsonObject([...cp.machineState].map(([id, s]) => [String(id), jsonNode(s)]))
    }`,
  );
  if (cp.entries !== null && cp.entries.size > 0) {
    const pods = [...cp.entries].map(([uid, containers]): [string, string] => [
      uid,
      jsonObject([...containers].map(([name, blocks]) => [name, `[${blocks.map(jsonBlock).join(',')}]`])),
    ]);
    fields.push(`"entries":${jsonObject(pods)}`);
  }
  fields.push(`"checksum":${checkpointChecksum(cp)}`);
  return `{${fields.join(',')}}`;
}

// ---- reading ------------------------------------------------------------------------------------

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function objectAt(v: unknown, what: string): Json {
  if (!isObject(v)) throw new CorruptCheckpointError(`${what} is not an object`);
  return v;
}

/** A uint64 (int for counts) as Go's decoder takes it; absent reads as 0. */
function count(v: unknown, what: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new CorruptCheckpointError(`${what} is not a non-negative integer`);
  return v;
}

function intList(v: unknown, what: string): number[] | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v) || !v.every((n) => typeof n === 'number' && Number.isSafeInteger(n)))
    throw new CorruptCheckpointError(`${what} is not a list of integers`);
  return v as number[];
}

function parseTable(v: unknown, what: string): MemoryTable {
  const o = objectAt(v, what);
  return {
    total: count(o.total, `${what}.total`),
    systemReserved: count(o.systemReserved, `${what}.systemReserved`),
    allocatable: count(o.allocatable, `${what}.allocatable`),
    reserved: count(o.reserved, `${what}.reserved`),
    free: count(o.free, `${what}.free`),
  };
}

function parseMachineState(v: unknown): NUMANodeMap | null {
  if (v === null) return null;
  const out: NUMANodeMap = new Map();
  if (v === undefined) return out;
  for (const [key, node] of Object.entries(objectAt(v, 'machineState'))) {
    if (!/^-?\d+$/.test(key))
      throw new CorruptCheckpointError(`machineState key ${key} is not a NUMA node ID`);
    const what = `machineState[${key}]`;
    const o = objectAt(node, what);
    const memoryMap =
      o.memoryMap === null || o.memoryMap === undefined
        ? null
        : new Map(
            Object.entries(objectAt(o.memoryMap, `${what}.memoryMap`)).map(([k, t]) => [
              k,
              parseTable(t, `${what}.memoryMap[${k}]`),
            ]),
          );
    out.set(Number(key), {
      numberOfAssignments: count(o.numberOfAssignments, `${what}.numberOfAssignments`),
      memoryMap,
      cells: intList(o.cells, `${what}.cells`),
    });
  }
  return out;
}

function parseBlock(v: unknown, what: string): MemoryBlock {
  const o = objectAt(v, what);
  if (o.type !== undefined && o.type !== null && typeof o.type !== 'string')
    throw new CorruptCheckpointError(`${what}.type is not a string`);
  return {
    numaAffinity: intList(o.numaAffinity, `${what}.numaAffinity`),
    type: typeof o.type === 'string' ? o.type : '',
    size: count(o.size, `${what}.size`),
  };
}

function parseEntries(v: unknown): ContainerMemoryAssignments | null {
  if (v === null) return null;
  const out: ContainerMemoryAssignments = new Map();
  if (v === undefined) return out;
  for (const [uid, containers] of Object.entries(objectAt(v, 'entries'))) {
    const m = new Map<string, MemoryBlock[]>();
    for (const [name, blocks] of Object.entries(objectAt(containers, `entries[${uid}]`))) {
      const what = `entries[${uid}][${name}]`;
      if (!Array.isArray(blocks)) throw new CorruptCheckpointError(`${what} is not a list of blocks`);
      m.set(
        name,
        blocks.map((b, i) => parseBlock(b, `${what}[${i}]`)),
      );
    }
    out.set(uid, m);
  }
  return out;
}

/** Parses and verifies the file's text; throws CorruptCheckpointError when it cannot be trusted. */
export function unmarshalCheckpoint(text: string): MemoryManagerCheckpoint {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CorruptCheckpointError(`not JSON: ${(err as Error).message}`);
  }
  const o = objectAt(json, 'the checkpoint');
  if (o.policyName !== undefined && o.policyName !== null && typeof o.policyName !== 'string')
    throw new CorruptCheckpointError('policyName is not a string');
  const cp: MemoryManagerCheckpoint = {
    policyName: typeof o.policyName === 'string' ? o.policyName : '',
    machineState: parseMachineState(o.machineState),
    entries: parseEntries(o.entries),
  };
  const want = checkpointChecksum(cp);
  if (o.checksum !== want)
    throw new CorruptCheckpointError(
      `checkpoint is corrupted: checksum ${String(o.checksum)} does not match the data's ${want}`,
    );
  return cp;
}

/** The checkpoint in rootDir; undefined when there is none yet (a first start). */
export async function readMemoryManagerCheckpoint(
  rootDir: string,
): Promise<MemoryManagerCheckpoint | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(rootDir, MEMORY_MANAGER_CHECKPOINT), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return unmarshalCheckpoint(text);
}

/** Writes atomically (a temporary file renamed over the old one), as upstream's file store does. */
export async function writeMemoryManagerCheckpoint(
  rootDir: string,
  cp: MemoryManagerCheckpoint,
): Promise<void> {
  const file = path.join(rootDir, MEMORY_MANAGER_CHECKPOINT);
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, marshalCheckpoint(cp), { mode: 0o600 });
  await rename(tmp, file);
}
