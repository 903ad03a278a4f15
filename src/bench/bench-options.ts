/** `runBench` options: documentation, defaults, and validation at the boundary (sharp-style messages). */
import { isRemote, expectLocalPath } from '../io/location.js';
import type { StorageProfile } from './profiles.js';
import type { SideName } from './report.js';
import { expectInteger, expectOneOf, expectString, invalidOption } from './expect-option.js';
import type { ThrottleLimits } from './io-throttle.js';

export interface BenchProgress {
  /** 'lmdb': copying samples into LMDB; 'epochs': timed epochs; 'throttled': epochs on the IOPS-limited device; 'strace': the traced cross-check epochs. */
  phase: 'lmdb' | 'epochs' | 'throttled' | 'strace';
  side?: SideName;
  /** Samples done and in all, over the phase. */
  done: number;
  total: number;
}

export interface RunBenchOptions {
  /** The raw files: the directory the dataset was packed from. */
  rawDir: string;
  /** The dataset directory. */
  dataset: string;
  /** Timed epochs per run (each run is a fresh process per side). Default 2. */
  epochs?: number;
  /** 'random' (a seeded full shuffle, different each epoch) or 'sequential' (key order). Default 'random'. */
  order?: 'random' | 'sequential';
  /** Samples per batch. Default 32. */
  batch?: number;
  /** Reads in flight (the loader's `concurrency`; the raw side uses the same bound). Default 4. */
  concurrency?: number;
  /** 'image' decodes image members with sharp on every side. Default 'none'. */
  decode?: 'none' | 'image';
  /** 'cold' drops the page cache before every epoch where the machine allows it. Default 'warm'. */
  cache?: 'warm' | 'cold';
  /** Runs per side, alternated raw, shards(, lmdb), raw, shards, ... Default 3. */
  repeat?: number;
  /** Also measure LMDB (lmdb-js). */
  vs?: 'lmdb';
  /** Seed of the epoch orders. Default 0. */
  seed?: number;
  /** Storage profiles added to (or replacing, by name) the built-in ones for projections. */
  profiles?: readonly StorageProfile[];
  /** A JSON file of storage profiles (see loadProfiles). */
  profileFile?: string;
  /** Run the strace cross-check: 'auto' (when strace works here; default), true (fail if it does not), false. */
  strace?: boolean | 'auto';
  /**
   * Also measure on an IOPS-limited device: each side's epochs again (same epochs and repeat), cold cache, in a
   * fresh cgroup limiting reads of the disk holding the data to `readIops` requests/s (and `readBps` bytes/s).
   * Needs root and cgroup v1 blkio or v2 io; where not allowed the report says why and the bench goes on.
   */
  throttle?: { readIops: number; readBps?: number };
  /**
   * The same dataset behind an http(s) URL: the shard side reads it from there (through `shardCache` when given),
   * while the raw side still reads `rawDir` and the dataset directory gives the facts. Its manifest must be the
   * local one's (same index CRC32C).
   */
  remote?: string;
  /**
   * A node-local shard cache for the shard side (openDataset's `cache`): each shard-side process starts with an
   * empty one, a fresh subdirectory of `dir` removed after it, so every process's first epoch fills it.
   */
  shardCache?: { dir: string; maxBytes: number; policy?: 'clairvoyant' | 'lru' };
  /** Where job files and the LMDB copy go; default a fresh directory under the OS temp dir, removed afterwards. */
  workDir?: string;
  /** The command line, recorded in the report. */
  command?: string[];
  onProgress?: (p: BenchProgress) => void;
}

export interface ResolvedBenchOptions {
  rawDir: string;
  dataset: string;
  epochs: number;
  order: 'random' | 'sequential';
  batch: number;
  concurrency: number;
  decode: 'none' | 'image';
  cache: 'warm' | 'cold';
  repeat: number;
  lmdb: boolean;
  seed: number;
  strace: boolean | 'auto';
  throttle: ThrottleLimits | null;
  remote: string | null;
  shardCache: { dir: string; maxBytes: number; policy: 'clairvoyant' | 'lru' } | null;
}

const MAX_EPOCHS = 1000;
const MAX_REPEAT = 100;
const MAX_BATCH = 1 << 20;
const MAX_CONCURRENCY = 1024;
const MAX_THROTTLE_IOPS = 10_000_000;
const MAX_THROTTLE_BPS = 1e13;

function resolveThrottle(t: unknown): ThrottleLimits | null {
  if (t === undefined) return null;
  if (typeof t !== 'object' || t === null) throw invalidOption('object { readIops, readBps? }', 'throttle', t);
  const { readIops, readBps } = t as { readIops?: unknown; readBps?: unknown };
  return {
    readIops: expectInteger('throttle.readIops', readIops, 1, MAX_THROTTLE_IOPS),
    ...(readBps === undefined ? {} : { readBps: expectInteger('throttle.readBps', readBps, 1, MAX_THROTTLE_BPS) }),
  };
}

export function resolveBenchOptions(o: RunBenchOptions): ResolvedBenchOptions {
  if (typeof o !== 'object' || o === null) throw invalidOption('object', 'bench options', o);
  const strace = o.strace ?? 'auto';
  if (strace !== 'auto' && typeof strace !== 'boolean') throw invalidOption("boolean or 'auto'", 'strace', strace);
  if (o.vs !== undefined) expectOneOf('vs', o.vs, ['lmdb']);
  return {
    // the bench times this machine's reads of both sides (system calls, opens, the page cache): no http(s) dataset
    rawDir: expectLocalPath("bench's <raw-dir>", expectString('rawDir', o.rawDir)),
    dataset: expectLocalPath("bench's <dataset>", expectString('dataset', o.dataset), 'pass a local copy as <dataset> and the URL as --remote'),
    epochs: expectInteger('epochs', o.epochs ?? 2, 1, MAX_EPOCHS),
    order: expectOneOf('order', o.order ?? 'random', ['random', 'sequential']),
    batch: expectInteger('batch', o.batch ?? 32, 1, MAX_BATCH),
    concurrency: expectInteger('concurrency', o.concurrency ?? 4, 1, MAX_CONCURRENCY),
    decode: expectOneOf('decode', o.decode ?? 'none', ['none', 'image']),
    cache: expectOneOf('cache', o.cache ?? 'warm', ['warm', 'cold']),
    repeat: expectInteger('repeat', o.repeat ?? 3, 1, MAX_REPEAT),
    lmdb: o.vs === 'lmdb',
    seed: expectInteger('seed', o.seed ?? 0, 0, Number.MAX_SAFE_INTEGER),
    strace,
    throttle: resolveThrottle(o.throttle),
    remote: resolveRemote(o.remote),
    shardCache: resolveShardCache(o.shardCache),
  };
}

function resolveRemote(r: unknown): string | null {
  if (r === undefined) return null;
  const url = expectString('remote', r);
  if (!isRemote(url)) throw invalidOption('http(s) URL of the dataset', 'remote', r);
  return url;
}

function resolveShardCache(c: unknown): ResolvedBenchOptions['shardCache'] {
  if (c === undefined) return null;
  if (typeof c !== 'object' || c === null) throw invalidOption('object { dir, maxBytes, policy? }', 'shardCache', c);
  const { dir, maxBytes, policy } = c as { dir?: unknown; maxBytes?: unknown; policy?: unknown };
  return {
    dir: expectLocalPath('shardCache.dir', expectString('shardCache.dir', dir)),
    maxBytes: expectInteger('shardCache.maxBytes', maxBytes, 1, Number.MAX_SAFE_INTEGER),
    policy: expectOneOf('shardCache.policy', policy ?? 'clairvoyant', ['clairvoyant', 'lru']),
  };
}
