/** The loader's options: documentation, defaults, and validation at the boundary (sharp-style messages). */
import { availableParallelism } from 'node:os';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectBoolean, expectIntegerInRange } from '../io/io-options.js';
import type { DecodeOption } from './decode-image.js';
import { imageExtTest } from './decode-image.js';
import type { Partition } from './epoch-plan.js';
import { DEFAULT_COALESCE_GAP_BYTES, DEFAULT_LOCAL_COALESCE_GAP_BYTES, DEFAULT_MAX_READ_BYTES } from './fetch-plan.js';
import type { LoaderState } from './loader-state.js';
import { expectShuffleName, type Seed, type ShuffleName } from './shuffle/index.js';

/** Default for {@link LoaderOptions.syncReadMaxBytes}. */
export const DEFAULT_LOADER_SYNC_READ_BYTES = 1 << 20;

export interface LoaderOptions {
  /** Samples per batch. Default 1. */
  batchSize?: number;
  /** 'none' (key order), 'full' (a seeded permutation of all samples) or 'block' (shards permuted, samples mixed
   * inside windows of `windowShards` shards: locality for disks and remote storage). Default 'none'. */
  shuffle?: ShuffleName;
  /** Safe integer or string: the same seed gives the same order on every machine. Default 0. */
  seed?: Seed;
  /** Each epoch has its own order; a loader reads one epoch (make one loader per epoch). Default 0. */
  epoch?: number;
  /** 'block' only: shards per window. Default 4. */
  windowShards?: number;
  /** This process's rank in [0, worldSize). Default 0. */
  rank?: number;
  /** Processes sharing the epoch; each sample goes to exactly one rank. Default 1. */
  worldSize?: number;
  /** When samples do not divide by worldSize: 'pad' repeats a few, 'drop' leaves a few out. Default 'pad'. */
  partition?: Partition;
  /** Drop the last batch when it is short. Default false. */
  dropLast?: boolean;
  /** Read ahead of consumption, up to this many bytes of shard data fetched but not yet yielded (at least one
   * batch is always fetched). 0 reads each batch when it is asked for. Default 64 MiB for http(s) datasets, where
   * requests take milliseconds; 4 MiB for local ones, where most reads are synchronous preads that gain nothing
   * from running early and a deep queue only evicts the CPU caches. */
  prefetch?: number;
  /** Reads in flight at once (http requests, or thread-pool reads of local runs over 64 KiB).
   * Default 16 for http(s) datasets, 4 for local ones (libuv's default thread pool). */
  concurrency?: number;
  /** Decode members: 'none' (default), 'image' (image extensions to raw pixels), or `{ [ext]: 'image' | 'none' }`. */
  decode?: DecodeOption;
  /** Images decoded at once. Default: the number of cores. */
  decodeConcurrency?: number;
  /** Check members' CRC32C. Default: the dataset's `verify` (true unless it was opened with verify: false). */
  verify?: boolean;
  /**
   * No-allocation mode for local datasets: uncompressed member bytes are views into buffers the loader reuses.
   * Such bytes are valid only until the next batch is requested (the next `next()` / loop iteration) or the
   * loader is closed; copy (`bytes.slice()`) what you keep longer. Default false: every batch owns its bytes.
   * No effect on http(s) datasets, whose bytes are response bodies the caller owns anyway.
   */
  view?: boolean;
  /**
   * Spans in one shard at most this many bytes apart are read together. Default 1 KiB locally (neighbours in a tar
   * shard; copying a larger hole costs more than the read it saves), 64 KiB over http(s). Shards read through memory
   * maps (the native addon) in copy mode with verify copy one-member uncompressed samples one by one, each with its
   * checksum in the same pass: there a joined read saves no system call, only adds a second pass over the bytes.
   */
  coalesceGapBytes?: number;
  /** Largest read made by joining spans (a larger sample is read alone). 0: one read per sample. Default 1 MiB. */
  maxReadBytes?: number;
  /**
   * Local reads up to this many bytes are synchronous preads inside the batch (no thread-pool round trip: on a warm
   * page cache that is the fast path, measured 1.7x faster per sample at 1-100 KiB); larger ones go to the thread
   * pool, `concurrency` at a time. Default 1 MiB (every coalesced read). On network file systems or cold disks set
   * 0 here and `syncReadMaxBytes: 0` in openDataset: reads in flight then overlap the device latency that a
   * synchronous read would wait out.
   */
  syncReadMaxBytes?: number;
  /** Continue an epoch from `loader.state()` (or `mergeLoaderStates(...)`) with otherwise the same options. */
  resumeFrom?: LoaderState;
}

export const DEFAULT_REMOTE_PREFETCH_BYTES = 64 * 1024 * 1024;
export const DEFAULT_LOCAL_PREFETCH_BYTES = 4 * 1024 * 1024;
export const DEFAULT_LOCAL_CONCURRENCY = 4;
export const DEFAULT_REMOTE_CONCURRENCY = 16;
const MAX_INT32 = 2 ** 31 - 1;

/** Options with defaults filled in, after validation. Order-related ones are validated by planEpoch. */
export interface ResolvedLoaderOptions {
  batchSize: number;
  prefetch: number;
  concurrency: number;
  decodeConcurrency: number;
  isImage: ((ext: string) => boolean) | undefined;
  verify: boolean;
  view: boolean;
  coalesceGapBytes: number;
  maxReadBytes: number;
  syncReadMaxBytes: number;
}

export function resolveLoaderOptions(options: unknown, remote: boolean, datasetVerify: boolean): ResolvedLoaderOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected object for loader options but received ${String(options)} of type ${typeof options}`);
  }
  const o = options as LoaderOptions;
  if (o.windowShards !== undefined && expectShuffleName(o.shuffle ?? 'none') !== 'block') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `windowShards applies to shuffle "block" only but shuffle is ${JSON.stringify(o.shuffle ?? 'none')}`);
  }
  return {
    batchSize: expectIntegerInRange('batchSize', o.batchSize ?? 1, 1, MAX_INT32),
    prefetch: expectIntegerInRange('prefetch', o.prefetch ?? (remote ? DEFAULT_REMOTE_PREFETCH_BYTES : DEFAULT_LOCAL_PREFETCH_BYTES), 0, Number.MAX_SAFE_INTEGER),
    concurrency: expectIntegerInRange('concurrency', o.concurrency ?? (remote ? DEFAULT_REMOTE_CONCURRENCY : DEFAULT_LOCAL_CONCURRENCY), 1, 65_536),
    decodeConcurrency: expectIntegerInRange('decodeConcurrency', o.decodeConcurrency ?? availableParallelism(), 1, 65_536),
    isImage: imageExtTest(o.decode),
    verify: expectBoolean('verify', o.verify ?? datasetVerify),
    view: expectBoolean('view', o.view ?? false),
    coalesceGapBytes: expectIntegerInRange('coalesceGapBytes', o.coalesceGapBytes ?? (remote ? DEFAULT_COALESCE_GAP_BYTES : DEFAULT_LOCAL_COALESCE_GAP_BYTES), 0, Number.MAX_SAFE_INTEGER),
    maxReadBytes: expectIntegerInRange('maxReadBytes', o.maxReadBytes ?? DEFAULT_MAX_READ_BYTES, 0, MAX_INT32),
    syncReadMaxBytes: expectIntegerInRange('syncReadMaxBytes', o.syncReadMaxBytes ?? DEFAULT_LOADER_SYNC_READ_BYTES, 0, MAX_INT32),
  };
}
