/**
 * What the bench parent hands an epoch child (a JSON job file) and what the child hands back (a JSON result
 * file). Files, not IPC: the same child runs under `strace -f -c`, which sits between parent and child.
 */
import type { GroupIoStatSource, GroupReads } from './cgroup-io-stat.js';
import type { CacheStats } from '../cache/shard-cache.js';
import type { EpochCounters, SideName } from './report.js';

export interface EpochJob {
  side: SideName;
  /** Raw side: the directory the sample files are in (file = rawDir/key.ext). */
  rawDir: string;
  /** Shard side: the dataset directory. */
  dataset: string;
  /** Shard side: read the dataset from this URL instead of `dataset` (bench --remote). */
  remote?: string;
  /** Shard side: read through this shard cache (the directory is this process's own, empty at start). */
  shardCache?: { dir: string; maxBytes: number; policy: 'clairvoyant' | 'lru' };
  /** LMDB side: the environment directory. */
  lmdbPath: string;
  /** Sample keys in key order (position i = the dataset's i-th sample). */
  keys: string[];
  /** Member extensions of each sample, same order as keys. */
  exts: string[][];
  /** Shard side: payload bytes of each sample per the index, same order as keys (members decoded to pixels have no byte length to sum). */
  sampleBytes: number[];
  /** Samples per shard, in shard order: what the epoch order is computed from (same as the loader's). */
  shardSizes: number[];
  /** Epoch numbers to run, in order; each has its own order (a function of seed and epoch). */
  epochs: number[];
  order: 'random' | 'sequential';
  seed: number;
  batch: number;
  concurrency: number;
  decode: 'none' | 'image';
  /** Drop the page cache before each epoch. */
  cold: boolean;
  /** Directories to evict when drop_caches is not allowed (vmtouch -e), and files to check residency on. */
  evictDirs: string[];
  probeFiles: string[];
  /** Do everything but the epochs: the baseline subtracted from a traced epoch. */
  setupOnly: boolean;
  /**
   * Throttled runs: after setup, print {@link CHILD_READY_LINE} and wait for {@link CHILD_START_LINE} on stdin
   * before the first epoch, so the parent can move this process into the throttle cgroup before it reads.
   */
  waitForStart?: boolean;
  /** Throttled runs: the group whose read counters are taken before and after each epoch. */
  groupIo?: GroupIoStatSource;
}

/** What a waiting child prints once set up, and the line the parent answers with when the child may start. */
export const CHILD_READY_LINE = '{"ready":true}';
export const CHILD_START_LINE = 'start';

/** How one attempt to drop the page cache went. */
export interface CacheDropResult {
  /** True when a method ran without error. */
  dropped: boolean;
  /** True when fincore saw none of the probe files resident afterwards. */
  verified: boolean;
  method: string;
  detail?: string;
}

/** One epoch as a child reports it: the report's counters (syscallsPerSample is derived later), plus timings. */
export interface EpochResult extends Omit<EpochCounters, 'syscallsPerSample'> {
  epoch: number;
  seconds: number;
  /** Wait of each batch: next() called to batch in hand (seconds). */
  batchWaits: number[];
  /** Major page faults during the epoch (LMDB reads through mmap fault pages in instead of calling read). */
  majorPageFaults: number;
  cache: CacheDropResult | null;
  /** Shard side with a remote source or a shard cache: HTTP requests, and the cache's counters over the epoch. */
  remote?: { requests: number; cache: CacheStats | null };
  /** Throttled runs: reads the kernel charged to the throttle group during the epoch; null when unreadable. */
  groupReads?: GroupReads | null;
}

export type ChildResult =
  | {
      ok: true;
      side: SideName;
      epochs: EpochResult[];
      peakRssBytes: number;
      /** Resident bytes of the side's data files mapped into the child after its epochs (see mapped-memory.ts); null where unknown. */
      mappedDataBytes: number | null;
    }
  | { ok: false; code: string; message: string };

/** A line the child prints on stdout after each batch: `{"done": samples}`. */
export interface ChildProgress {
  done: number;
}
