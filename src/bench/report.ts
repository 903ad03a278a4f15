/**
 * The bench report: what `shardkit bench` measured, raw files vs shards (and optionally LMDB), written as
 * report.json (this shape; schema in report-schema.json), report.md and report.html. Measured and projected
 * figures live in separate sections: `sides` and `comparison` are measured here; `projections` are a model.
 * Times are in seconds, sizes in bytes, rates in samples/s and MB/s (10^6 bytes/s), unless a name says otherwise.
 */
import type { StorageProfile } from './profiles.js';

export const BENCH_REPORT_VERSION = 1;

/** The sides a bench compares. */
export type SideName = 'raw' | 'shards' | 'lmdb';

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  os: { platform: string; release: string; arch: string };
  node: string;
  shardkit: string;
  /** Versions of libraries that affect the numbers (sharp, libvips, lmdb, ...). */
  versions: Record<string, string>;
  /** File system type of the raw and dataset directories, when known (e.g. from /proc/mounts). */
  filesystem?: { raw: string; dataset: string };
}

export interface CacheInfo {
  /** What was asked for. */
  mode: 'warm' | 'cold';
  /** True only if the page cache was verifiably dropped before each timed epoch (cold mode). */
  coldVerified: boolean;
  /** How: e.g. 'posix_fadvise(DONTNEED) on every file, checked with mincore', 'echo 3 > /proc/sys/vm/drop_caches', 'none'. */
  method: string;
  /** Anything the reader should know, e.g. why cold could not be verified. */
  detail?: string;
}

export interface BenchOptions {
  epochs: number;
  order: 'random' | 'sequential';
  batch: number;
  concurrency: number;
  /** Which decode ran per sample ('none' = bytes only). */
  decode: string;
  seed: number;
  cache: CacheInfo;
}

export interface DatasetFacts {
  rawDir: string;
  dataset: string;
  samples: number;
  /** Files under rawDir (members). */
  rawFiles: number;
  /** Sum of raw file sizes. */
  rawBytes: number;
  /** Bytes the raw files occupy on disk (st_blocks x 512): small files waste partial blocks. */
  rawAllocatedBytes: number;
  shards: number;
  shardBytes: number;
  indexBytes: number;
  layout: string;
  compress: string;
  /** Seconds the pack took, from the manifest; null if it did not record it. */
  packSeconds: number | null;
  overhead: {
    /** rawAllocatedBytes / rawBytes. */
    rawAllocatedVsRaw: number | null;
    /** shardBytes / rawBytes. */
    shardsVsRaw: number | null;
    /** indexBytes / rawBytes. */
    indexVsRaw: number | null;
    /** (shardBytes + indexBytes) / rawBytes. */
    totalVsRaw: number | null;
  };
}

/** Operations of one epoch, counted in-process. */
export interface EpochCounters {
  samples: number;
  /** open/openat calls (files opened). */
  opens: number;
  /** read/pread calls (read requests). */
  reads: number;
  stats: number;
  closes: number;
  bytesRead: number;
  /** (opens + reads + stats + closes) / samples. */
  syscallsPerSample: number;
}

/** `strace -c -f` over one epoch: an independent count of what the process really asked the kernel. */
export interface StraceCheck {
  /** Calls by syscall name (openat, read, pread64, statx, fstat, close, ...). */
  calls: Record<string, number>;
  totalCalls: number;
  /** I/O-related calls per sample (openat, read, pread64, statx/fstat/newfstatat, close). */
  ioCallsPerSample: number;
  /** ioCallsPerSample / the in-process syscallsPerSample of the same epoch; near 1 means the counters agree. */
  agreement: number | null;
}

export interface LatencySummary {
  /** What one latency measures, e.g. 'sample fetch (request to bytes ready)'. */
  what: string;
  count: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
  /** Downsampled CDF: points (seconds, fraction of samples at or under it), fraction ascending, at most ~100 points. */
  cdf: { seconds: number; fraction: number }[];
}

export interface SideResult {
  side: SideName;
  label: string;
  /** Wall seconds of each timed epoch, in run order. */
  epochSeconds: number[];
  medianSeconds: number;
  minSeconds: number;
  maxSeconds: number;
  /** samples / medianSeconds. */
  samplesPerSecond: number;
  /** median bytes read per epoch / medianSeconds / 10^6. */
  megabytesPerSecond: number;
  latency: LatencySummary;
  /** One entry per epoch, same order as epochSeconds. */
  counters: EpochCounters[];
  strace: StraceCheck | null;
  peakRssBytes: number;
}

export interface Comparison {
  /** raw median / shards median: how many times faster an epoch is on shards. */
  speedup: number | null;
  /** shards samples/s / raw samples/s. */
  throughputRatio: number | null;
  /** shards syscalls per sample / raw syscalls per sample. */
  syscallsPerSampleRatio: number | null;
  /** shards files opened per epoch / raw files opened per epoch. */
  opensRatio: number | null;
  /** packSeconds / (raw median - shards median); null if pack time is unknown or shards are not faster. */
  breakEvenEpochs: number | null;
  /** LMDB vs shards, when LMDB was measured: lmdb median / shards median. */
  lmdbVsShards?: number | null;
}

export interface ProfileProjection {
  profile: StorageProfile;
  /** Projected epoch seconds per side, from the per-field median of its epoch counters. */
  seconds: Partial<Record<SideName, number>> & { raw: number; shards: number };
  /** raw / shards projected. */
  speedup: number | null;
  /** packSeconds / (raw - shards) projected; null if not faster or pack time unknown. */
  breakEvenEpochs: number | null;
}

export interface Projections {
  /** Always true: a reminder that nothing in this section was measured. */
  projected: true;
  model: string;
  concurrency: number;
  rows: ProfileProjection[];
}

/** Ratios are null where the denominator is zero (nothing to compare against). */
export interface BenchReport {
  version: typeof BENCH_REPORT_VERSION;
  createdAt: string;
  /** argv of the bench command as typed (without the node binary). */
  command: string[];
  machine: MachineInfo;
  options: BenchOptions;
  dataset: DatasetFacts;
  sides: { raw: SideResult; shards: SideResult; lmdb?: SideResult };
  comparison: Comparison;
  projections: Projections;
  notes: string[];
}
