/**
 * The device manager's checkpoint, `kubelet_internal_checkpoint` in the device plugin folder, in
 * upstream's JSON shape (pkg/kubelet/cm/devicemanager/checkpoint, v1.30):
 *
 *   {"Data":{"PodDeviceEntries":[{"PodUID","ContainerName","ResourceName",
 *            "DeviceIDs":{"<numa node>":["id",…]},"AllocResp":"<base64 protobuf>"}],
 *            "RegisteredDevices":{"<resource>":["id",…]}},
 *    "Checksum":<uint32>}
 *
 * The checksum is upstream's: FNV-32a over go-spew's own `%#v` of the checkpointData struct
 * (checksum.New → apimachinery's dump.ForHash: spew with SortKeys and DisableMethods), the format the
 * CPU manager's checkpoint was checked against a file the upstream kubelet wrote. Rendering that text
 * here lets either kubelet read the other's file. Spew keeps nil and empty apart (`<nil>` vs `[]`),
 * so null and empty are kept apart here too. Files written by tskubelet before this used Go's fmt
 * `%#v` text instead (`goSyntaxOf`); their checksum is still accepted on read, so an upgrade keeps
 * its devices.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { KubeletError } from '../../lib/errors.js';
import { fnv32a } from '../../lib/fnv32a.js';
import { goQuote } from '../../lib/go-quote.js';

export { goQuote };

/** Upstream's kubeletDeviceManagerCheckpoint. */
export const DEVICE_MANAGER_CHECKPOINT = 'kubelet_internal_checkpoint';
/** The NUMA node of a device whose plugin reports no topology (upstream's nodeWithoutTopology). */
export const NODE_WITHOUT_TOPOLOGY = -1;

/** Device IDs per NUMA node (upstream's DevicesPerNUMA, map[int64][]string); null is Go's nil map. */
export type DevicesPerNUMA = Record<string, string[] | null> | null;

export interface PodDevicesEntry {
  PodUID: string;
  ContainerName: string;
  ResourceName: string;
  DeviceIDs: DevicesPerNUMA;
  /** The plugin's ContainerAllocateResponse, protobuf-encoded; null is Go's nil slice. */
  AllocResp: Uint8Array | null;
}

export interface CheckpointData {
  PodDeviceEntries: PodDevicesEntry[] | null;
  RegisteredDevices: Record<string, string[] | null> | null;
}

/** Why a checkpoint was not read: no file is not an error (a first start). */
export class CorruptCheckpointError extends KubeletError {
  constructor(message: string) {
    super('CHECKPOINT_CORRUPT', message);
    this.name = 'CorruptCheckpointError';
  }
}

// ---- Go's %#v, for the shapes of checkpointData --------------------------------------------------

function goStrings(list: string[] | null): string {
  return list === null ? '[]string(nil)' : `[]string{${list.map(goQuote).join(', ')}}`;
}

function goBytes(bytes: Uint8Array | null): string {
  if (bytes === null) return '[]uint8(nil)';
  return `[]uint8{${Array.from(bytes, (b) => '0x' + b.toString(16)).join(', ')}}`;
}

/** fmt prints map keys sorted (internal/fmtsort): integers by value, strings by bytes. */
function compareGoStrings(a: string, b: string): number {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return Buffer.compare(x, y);
}

function goDevicesPerNUMA(m: DevicesPerNUMA): string {
  if (m === null) return 'checkpoint.DevicesPerNUMA(nil)';
  const keys = Object.keys(m).sort((a, b) => Number(a) - Number(b));
  return `checkpoint.DevicesPerNUMA{${keys.map((k) => `${Number(k)}:${goStrings(m[k] ?? null)}`).join(', ')}}`;
}

function goEntry(e: PodDevicesEntry): string {
  return (
    `checkpoint.PodDevicesEntry{PodUID:${goQuote(e.PodUID)}, ContainerName:${goQuote(e.ContainerName)}, ` +
    `ResourceName:${goQuote(e.ResourceName)}, DeviceIDs:${goDevicesPerNUMA(e.DeviceIDs)}, ` +
    `AllocResp:${goBytes(e.AllocResp)}}`
  );
}

/** `fmt.Sprintf("%#v", data)` for upstream's checkpoint.checkpointData. */
export function goSyntaxOf(data: CheckpointData): string {
  const entries =
    data.PodDeviceEntries === null
      ? '[]checkpoint.PodDevicesEntry(nil)'
      : `[]checkpoint.PodDevicesEntry{${data.PodDeviceEntries.map(goEntry).join(', ')}}`;
  let registered: string;
  if (data.RegisteredDevices === null) registered = 'map[string][]string(nil)';
  else {
    const devices = data.RegisteredDevices;
    const keys = Object.keys(devices).sort(compareGoStrings);
    registered = `map[string][]string{${keys.map((k) => `${goQuote(k)}:${goStrings(devices[k] ?? null)}`).join(', ')}}`;
  }
  return `checkpoint.checkpointData{PodDeviceEntries:${entries}, RegisteredDevices:${registered}}`;
}

export { fnv32a };

// ---- go-spew's %#v (what upstream hashes) -------------------------------------------------------

function spewStrings(list: string[] | null): string {
  return list === null ? '<nil>' : `[${list.join(' ')}]`;
}

function spewEntry(e: PodDevicesEntry): string {
  let devices: string;
  if (e.DeviceIDs === null) devices = '<nil>';
  else {
    const ids = e.DeviceIDs;
    const keys = Object.keys(ids).sort((a, b) => Number(a) - Number(b));
    devices = `map[${keys.map((k) => `${Number(k)}:${spewStrings(ids[k] ?? null)}`).join(' ')}]`;
  }
  const alloc = e.AllocResp === null ? '<nil>' : `[${Array.from(e.AllocResp).join(' ')}]`;
  return (
    `{PodUID:(string)${e.PodUID} ContainerName:(string)${e.ContainerName} ` +
    `ResourceName:(string)${e.ResourceName} DeviceIDs:(checkpoint.DevicesPerNUMA)${devices} ` +
    `AllocResp:([]uint8)${alloc}}`
  );
}

/** go-spew's `%#v` of upstream's checkpoint.checkpointData, as dump.ForHash renders it. */
export function spewOf(data: CheckpointData): string {
  const entries =
    data.PodDeviceEntries === null ? '<nil>' : `[${data.PodDeviceEntries.map(spewEntry).join(' ')}]`;
  let registered: string;
  if (data.RegisteredDevices === null) registered = '<nil>';
  else {
    const devices = data.RegisteredDevices;
    const keys = Object.keys(devices).sort(compareGoStrings);
    registered = `map[${keys.map((k) => `${k}:${spewStrings(devices[k] ?? null)}`).join(' ')}]`;
  }
  return (
    `(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)${entries} ` +
    `RegisteredDevices:(map[string][]string)${registered}}`
  );
}

export function checkpointChecksum(data: CheckpointData): number {
  return fnv32a(Buffer.from(spewOf(data), 'utf8'));
}

/** The checksum tskubelet wrote before it matched upstream's (fmt's `%#v`): still read, never written. */
function legacyChecksum(data: CheckpointData): number {
  return fnv32a(Buffer.from(goSyntaxOf(data), 'utf8'));
}

// ---- the file -----------------------------------------------------------------------------------

/** The file's text: Go's json.Marshal of checkpoint.Data ([]byte as base64). */
export function marshalCheckpoint(data: CheckpointData): string {
  const json = {
    Data: {
      PodDeviceEntries:
        data.PodDeviceEntries?.map((e) => ({
          PodUID: e.PodUID,
          ContainerName: e.ContainerName,
          ResourceName: e.ResourceName,
          DeviceIDs: e.DeviceIDs,
          AllocResp: e.AllocResp === null ? null : Buffer.from(e.AllocResp).toString('base64'),
        })) ?? null,
      RegisteredDevices: data.RegisteredDevices,
    },
    Checksum: checkpointChecksum(data),
  };
  return JSON.stringify(json);
}

function stringList(v: unknown, what: string): string[] | null {
  if (v === null || v === undefined) return null;
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string'))
    throw new CorruptCheckpointError(`${what} is not a list of strings`);
  return v as string[];
}

function stringListMap(v: unknown, what: string): Record<string, string[] | null> | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object' || Array.isArray(v)) throw new CorruptCheckpointError(`${what} is not an object`);
  const out: Record<string, string[] | null> = {};
  for (const [k, list] of Object.entries(v as Record<string, unknown>))
    out[k] = stringList(list, `${what}[${k}]`);
  return out;
}

function str(v: unknown, what: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new CorruptCheckpointError(`${what} is not a string`);
  return v;
}

/** Parses and verifies a checkpoint's text; throws CorruptCheckpointError when it cannot be trusted. */
export function unmarshalCheckpoint(text: string): CheckpointData {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CorruptCheckpointError(`not JSON: ${(err as Error).message}`);
  }
  if (typeof json !== 'object' || json === null) throw new CorruptCheckpointError('not a JSON object');
  const top = json as { Data?: unknown; Checksum?: unknown };
  const raw = (top.Data ?? {}) as { PodDeviceEntries?: unknown; RegisteredDevices?: unknown };
  if (typeof raw !== 'object' || raw === null) throw new CorruptCheckpointError('Data is not an object');
  let entries: PodDevicesEntry[] | null = null;
  if (raw.PodDeviceEntries !== null && raw.PodDeviceEntries !== undefined) {
    if (!Array.isArray(raw.PodDeviceEntries))
      throw new CorruptCheckpointError('PodDeviceEntries is not a list');
    entries = raw.PodDeviceEntries.map((e: unknown, i: number) => {
      if (typeof e !== 'object' || e === null)
        throw new CorruptCheckpointError(`PodDeviceEntries[${i}] is not an object`);
      const o = e as Record<string, unknown>;
      const alloc = o.AllocResp;
      if (alloc !== null && alloc !== undefined && typeof alloc !== 'string')
        throw new CorruptCheckpointError(`PodDeviceEntries[${i}].AllocResp is not base64 text`);
      return {
        PodUID: str(o.PodUID, 'PodUID'),
        ContainerName: str(o.ContainerName, 'ContainerName'),
        ResourceName: str(o.ResourceName, 'ResourceName'),
        DeviceIDs: stringListMap(o.DeviceIDs, `PodDeviceEntries[${i}].DeviceIDs`),
        AllocResp: typeof alloc === 'string' ? new Uint8Array(Buffer.from(alloc, 'base64')) : null,
      };
    });
  }
  const data: CheckpointData = {
    PodDeviceEntries: entries,
    RegisteredDevices: stringListMap(raw.RegisteredDevices, 'RegisteredDevices'),
  };
  const want = checkpointChecksum(data);
  if (top.Checksum !== want && top.Checksum !== legacyChecksum(data)) {
    throw new CorruptCheckpointError(
      `checkpoint is corrupted: checksum ${String(top.Checksum)} does not match the data's ${want}`,
    );
  }
  return data;
}

/** Reads the checkpoint in dir; undefined when there is none yet. */
export async function readCheckpointFile(dir: string): Promise<CheckpointData | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(dir, DEVICE_MANAGER_CHECKPOINT), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return unmarshalCheckpoint(text);
}

/** Writes the checkpoint in dir atomically (a temporary file renamed over it), as upstream's file store does. */
export async function writeCheckpointFile(dir: string, data: CheckpointData): Promise<void> {
  const file = path.join(dir, DEVICE_MANAGER_CHECKPOINT);
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, marshalCheckpoint(data), { mode: 0o600 });
  await rename(tmp, file);
}
