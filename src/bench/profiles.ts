import { readFile } from 'node:fs/promises';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectInteger } from './expect-option.js';

/**
 * Storage profiles: what one epoch's operations would cost on storage we cannot measure here. Measured counts
 * (opens, stats, read requests, closes, bytes) from a local run are priced with per-operation latencies and a
 * bandwidth. The figures are TYPICAL values for the class of system, not measurements of any one installation:
 * the projection shows which side wins and roughly by how much, not an epoch time to plan a cluster on. Users
 * pass their own measured figures with `--profile FILE.json` (see {@link loadProfiles}).
 */

/** Latency of one operation of each kind, in milliseconds. */
export interface OperationLatencyMs {
  /** open(2): path lookup and permission check; on NFS/Lustre a metadata RPC; on object storage a HEAD/lookup. */
  open: number;
  /** stat(2)/fstat(2): attributes; on Lustre also a size glimpse to the data servers. */
  stat: number;
  /** One read request: read(2)/pread(2) that misses the page cache; on object storage a (ranged) GET to first byte. */
  read: number;
  /** close(2): free locally; an RPC on NFSv4 and Lustre; nothing on object storage. */
  close: number;
}

export interface StorageProfile {
  /** Short id used on the command line and in reports (`nfs`, `lustre`, ...). */
  name: string;
  /** What to call it in a table. */
  label: string;
  /** 'object-store' means: an open is a lookup request, a read request is a GET, a close costs nothing. */
  kind: 'filesystem' | 'object-store';
  latencyMs: OperationLatencyMs;
  /** Sustained transfer rate for one client, in MB/s (10^6 bytes per second). */
  bandwidthMBps: number;
  /** How many metadata operations (open, stat, close) one client keeps in flight at most. */
  metadataInFlight: number;
  /** How many read requests one client keeps in flight at most. */
  dataInFlight: number;
  /** Where the figures come from. */
  source: string;
}

/** Operation counts of one epoch, as the bench counts them. */
export interface EpochOperationCounts {
  opens: number;
  stats: number;
  reads: number;
  closes: number;
  bytes: number;
  samples: number;
}

export const BUILTIN_PROFILES: readonly StorageProfile[] = [
  {
    name: 'nvme',
    label: 'Local NVMe SSD (cold page cache)',
    kind: 'filesystem',
    // A cold open pays an inode/dentry read; a 4 KiB random read at queue depth 1 takes ~50-100 us on current
    // TLC NVMe drives (vendor datasheets quote 10-20 K IOPS at QD1); close and cached stat are microseconds.
    latencyMs: { open: 0.02, stat: 0.005, read: 0.08, close: 0.002 },
    // PCIe 3.0 x4 sequential read, ~3-3.5 GB/s on datasheets.
    bandwidthMBps: 3000,
    metadataInFlight: 64,
    dataInFlight: 64,
    source: 'typical: NVMe datasheets (QD1 4 KiB random read ~80 us, ~3 GB/s sequential); open/stat/close syscall costs',
  },
  {
    name: 'nfs',
    label: 'NFSv4 over 10 GbE',
    kind: 'filesystem',
    // Close-to-open consistency makes every open a LOOKUP/OPEN plus GETATTR round trip (~0.2-0.3 ms each on a
    // LAN); stat is a GETATTR when the attribute cache misses; NFSv4 CLOSE is an RPC too.
    latencyMs: { open: 0.5, stat: 0.25, read: 0.4, close: 0.25 },
    // 10 GbE line rate is 1250 MB/s; ~1100 MB/s after protocol overhead.
    bandwidthMBps: 1100,
    metadataInFlight: 64,
    dataInFlight: 64,
    source: 'typical: LAN RTT 0.1-0.3 ms per RPC (RFC 7530 close-to-open semantics), 10 GbE line rate',
  },
  {
    name: 'lustre',
    label: 'Lustre-like parallel FS (busy MDS)',
    kind: 'filesystem',
    // Metadata goes to one metadata server shared by every client of the job: millisecond opens under load are
    // the norm; stat adds a size glimpse to the object servers; close is an MDS RPC.
    latencyMs: { open: 1.0, stat: 1.0, read: 0.5, close: 0.5 },
    // A client with one 25 Gb/s or HDR InfiniBand link streams a few GB/s from striped files.
    bandwidthMBps: 2500,
    // Lustre's defaults: mdc.*.max_rpcs_in_flight = 8; osc.*.max_rpcs_in_flight = 8 per object server (x8 here).
    metadataInFlight: 8,
    dataInFlight: 64,
    source: 'typical: Lustre manual defaults (max_rpcs_in_flight 8), ms-scale MDS latency under shared load as in HPC I/O studies of DL training',
  },
  {
    name: 's3',
    label: 'Object storage (S3-like, via ranged GETs)',
    kind: 'object-store',
    // AWS S3 performance guidelines: requests under ~512 KB see median latencies "in the range of tens of
    // milliseconds"; a mount (Mountpoint for S3, s3fs) turns an open into a HEAD/LIST lookup.
    latencyMs: { open: 20, stat: 20, read: 30, close: 0 },
    // One instance with a 10 Gb/s network link.
    bandwidthMBps: 1250,
    // 5,500 GET/HEAD per second per prefix (S3 guidelines) at ~30 ms each is ~165 requests in flight.
    metadataInFlight: 128,
    dataInFlight: 128,
    source: 'typical: AWS S3 performance guidelines (tens of ms per small GET, 5,500 GET/HEAD/s per prefix), 10 Gb/s instance network',
  },
];

export interface EpochProjection {
  /** Metadata latency (open + stat + close) divided over the metadata operations in flight. */
  metadataSeconds: number;
  /** Read-request latency divided over the read requests in flight. */
  requestSeconds: number;
  /** bytes / bandwidth. */
  transferSeconds: number;
  /** The sum: the projected epoch time. */
  seconds: number;
}

/**
 * Projects one epoch's time from its operation counts:
 *
 *   metadata = (opens x open + stats x stat + closes x close) / min(concurrency, metadataInFlight)
 *   requests = reads x read / min(concurrency, dataInFlight)
 *   transfer = bytes / bandwidth
 *   seconds  = metadata + requests + transfer
 *
 * Latencies are divided over the operations a loader with `concurrency` workers keeps in flight, capped by what
 * the storage client allows. Adding the three terms assumes they do not overlap, the pessimistic end; a loader that
 * overlaps them perfectly would take max() instead. CPU work (decode, checksums) is not storage and is not in it.
 */
export function projectEpochBreakdown(counts: EpochOperationCounts, profile: StorageProfile, concurrency: number): EpochProjection {
  expectInteger('concurrency', concurrency, 1, 1_000_000);
  const { latencyMs } = profile;
  const metadataMs = counts.opens * latencyMs.open + counts.stats * latencyMs.stat + counts.closes * latencyMs.close;
  const metadataSeconds = metadataMs / 1000 / Math.min(concurrency, profile.metadataInFlight);
  const requestSeconds = (counts.reads * latencyMs.read) / 1000 / Math.min(concurrency, profile.dataInFlight);
  const transferSeconds = counts.bytes / (profile.bandwidthMBps * 1e6);
  return { metadataSeconds, requestSeconds, transferSeconds, seconds: metadataSeconds + requestSeconds + transferSeconds };
}

/** Projected seconds for one epoch: see {@link projectEpochBreakdown} for the model. */
export function projectEpoch(counts: EpochOperationCounts, profile: StorageProfile, concurrency: number): number {
  return projectEpochBreakdown(counts, profile, concurrency).seconds;
}

function bad(file: string, where: string, what: string): ShardkitError {
  return new ShardkitError(ErrorCodes.INVALID_ARG, `${file}: ${where}: ${what}`, { file });
}

function parseProfile(file: string, where: string, value: unknown): StorageProfile {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad(file, where, 'expected an object');
  const v = value as Record<string, unknown>;
  const known = new Set(['name', 'label', 'kind', 'latencyMs', 'bandwidthMBps', 'metadataInFlight', 'dataInFlight', 'source']);
  for (const key of Object.keys(v)) if (!known.has(key)) throw bad(file, `${where}.${key}`, `unknown key (expected one of ${[...known].join(', ')})`);
  const name = v.name;
  if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9_-]{0,63}$/i.test(name)) {
    throw bad(file, `${where}.name`, `expected a short id of letters, digits, - or _ but received ${JSON.stringify(name)}`);
  }
  const text = (key: string, fallback: string): string => {
    const t = v[key] ?? fallback;
    if (typeof t !== 'string') throw bad(file, `${where}.${key}`, `expected a string but received ${JSON.stringify(t)}`);
    return t;
  };
  const number = (path: string, x: unknown, min: number, integer = false): number => {
    if (typeof x !== 'number' || !Number.isFinite(x) || x < min || (integer && !Number.isInteger(x))) {
      throw bad(file, path, `expected ${integer ? 'an integer' : 'a number'} >= ${min} but received ${JSON.stringify(x)}`);
    }
    return x;
  };
  const kind = v.kind ?? 'filesystem';
  if (kind !== 'filesystem' && kind !== 'object-store') throw bad(file, `${where}.kind`, `expected filesystem or object-store but received ${JSON.stringify(kind)}`);
  const lat = v.latencyMs;
  if (typeof lat !== 'object' || lat === null || Array.isArray(lat)) throw bad(file, `${where}.latencyMs`, 'expected an object { open, stat, read, close } in milliseconds');
  const l = lat as Record<string, unknown>;
  const latencyMs: OperationLatencyMs = {
    open: number(`${where}.latencyMs.open`, l.open, 0),
    stat: number(`${where}.latencyMs.stat`, l.stat, 0),
    read: number(`${where}.latencyMs.read`, l.read, 0),
    close: number(`${where}.latencyMs.close`, l.close, 0),
  };
  const bandwidthMBps = number(`${where}.bandwidthMBps`, v.bandwidthMBps, Number.MIN_VALUE);
  return {
    name,
    label: text('label', name),
    kind,
    latencyMs,
    bandwidthMBps,
    metadataInFlight: number(`${where}.metadataInFlight`, v.metadataInFlight ?? 64, 1, true),
    dataInFlight: number(`${where}.dataInFlight`, v.dataInFlight ?? 64, 1, true),
    source: text('source', `user profile from ${file}`),
  };
}

/**
 * Reads storage profiles from a JSON file: `[profile, ...]` or `{ "profiles": [profile, ...] }`, each
 * `{ name, label?, kind?, latencyMs: { open, stat, read, close }, bandwidthMBps, metadataInFlight?, dataInFlight?,
 * source? }` (in-flight limits default to 64). Throws INVALID_ARG naming the file and the offending key.
 *
 * @example
 * // lab-nfs.json: [{ "name": "lab-nfs", "latencyMs": { "open": 0.8, "stat": 0.3, "read": 0.6, "close": 0.3 }, "bandwidthMBps": 900 }]
 * const profiles = await loadProfiles('lab-nfs.json');
 */
export async function loadProfiles(file: string): Promise<StorageProfile[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Cannot read profile file ${file}: ${(err as Error).message}`, { file, cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `${file} is not valid JSON: ${(err as Error).message}`, { file, cause: err });
  }
  const list = Array.isArray(json) ? json : (json as { profiles?: unknown } | null)?.profiles;
  if (!Array.isArray(list) || list.length === 0) throw bad(file, 'profiles', 'expected a non-empty array of profiles (or an object with one under "profiles")');
  const profiles = list.map((p, i) => parseProfile(file, `profiles[${i}]`, p));
  const seen = new Set<string>();
  for (const [i, p] of profiles.entries()) {
    if (seen.has(p.name)) throw bad(file, `profiles[${i}].name`, `duplicate name ${JSON.stringify(p.name)}`);
    seen.add(p.name);
  }
  return profiles;
}

/** Built-in profiles with user profiles added; a user profile replaces the built-in one of the same name. */
export function mergeProfiles(builtin: readonly StorageProfile[], user: readonly StorageProfile[]): StorageProfile[] {
  const names = new Set(user.map((p) => p.name));
  return [...builtin.filter((p) => !names.has(p.name)), ...user];
}
