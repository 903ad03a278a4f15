/**
 * The bench report: what `shardkit bench` measured, raw files vs shards (and optionally LMDB), written as
 * report.json (this shape; schema in report-schema.json), report.md and report.html. Measured and projected
 * figures live in separate sections: `sides` and `comparison` are measured here; `projections` are a model;
 * `throttled` (when asked for) is measured too, but on a device limited to N read IOPS, and kept apart from both.
 * Times are in seconds, sizes in bytes, rates in samples/s and MB/s (10^6 bytes/s), unless a name says otherwise.
 */
import type { StorageProfile } from './profiles.js';
import type { NodeModelSection, RemoteSection } from './remote-section.js';
import type { RatioSpread } from './report-spread.js';

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
  /** Warm mode: every data file of every side was read once, untimed, before the first timed epoch. */
  warmUp?: { files: number; bytes: number; seconds: number };
}

export interface BenchOptions {
  /** Timed epochs per run (--epochs); a side times epochs x repeat epochs in all. */
  epochs: number;
  /** Runs per side (--repeat), alternated between the sides. */
  repeat: number;
  /** Timed epochs each fresh child process ran: 1 with a cold cache (every epoch maps the data anew), else `epochs`. */
  epochsPerProcess: number;
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
  /** Seconds the pack took, from pack-report.json; null if missing or the pack was resumed (only the last run's seconds are recorded). */
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
  /** Read requests: read/pread calls, or copies out of a memory map. */
  reads: number;
  /** The reads served by copying out of a memory map (shardkit's native addon, LMDB): no system call. */
  mappedReads: number;
  stats: number;
  closes: number;
  /**
   * Bytes read from the side's files: what the read calls returned and the copies out of a memory map, so tar
   * headers and padding, and the bytes between samples a merged read spans, are included (LMDB: its records).
   */
  bytesRead: number;
  /** Payload: the sum of the member sizes of the samples the epoch delivered, the same bytes on every side. */
  payloadBytes: number;
  /** Bytes the epoch's process caused to be fetched from storage (/proc/self/io read_bytes: page-cache misses and read-ahead); null where unknown. */
  storageReadBytes: number | null;
  /** (opens + reads - mappedReads + stats + closes) / samples. */
  syscallsPerSample: number;
}

/** `strace -c -f` over one epoch: an independent count of what the process really asked the kernel. */
export interface StraceCheck {
  /** Calls by syscall name (openat, read, pread64, statx, fstat, close, ...). */
  calls: Record<string, number>;
  totalCalls: number;
  /** I/O-related calls per sample (openat, read, pread64, statx/fstat/newfstatat, close). */
  ioCallsPerSample: number;
  /**
   * The traced I/O calls per sample but close / the in-process count of the same epoch but closes; near 1 means the
   * counters agree. close is left out: the shards close at teardown, after the epoch the counters cover.
   */
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

/** A per-epoch figure over the first epoch of each process, and over the later ones (null when there are none). */
export interface FirstAndSteady {
  firstEpoch: number;
  steadyState: number | null;
}

export interface SideResult {
  side: SideName;
  label: string;
  /** Wall seconds of each timed epoch, run by run (run 1's epochs in order, then run 2's, ...): epochs x repeat. */
  epochSeconds: number[];
  medianSeconds: number;
  minSeconds: number;
  maxSeconds: number;
  /** samples / medianSeconds. */
  samplesPerSecond: number;
  /** Median payload bytes per epoch (member sizes, see EpochCounters.payloadBytes) / medianSeconds / 10^6. */
  megabytesPerSecond: number;
  /** Median bytes read from the side's files per epoch (EpochCounters.bytesRead): framing and merged reads included. */
  bytesReadPerEpoch: number;
  latency: LatencySummary;
  /**
   * System calls per sample, the one definition every output uses: the median over the epochs each process ran
   * first (they open the data: shards, index) and, apart, over the later epochs of a process (steady state; null
   * when every process ran a single epoch, as with a cold cache).
   */
  syscallsPerSample: FirstAndSteady;
  /** Files opened per epoch, split the same way. */
  opensPerEpoch: FirstAndSteady;
  /** One entry per epoch, same order as epochSeconds. */
  counters: EpochCounters[];
  strace: StraceCheck | null;
  peakRssBytes: number;
  /**
   * Of peakRssBytes: the side's data files mapped into the child (shards, LMDB's data.mdb), resident after its epochs.
   * Page cache, shared and reclaimable, yet counted in the RSS. null where /proc/self/smaps is unavailable.
   */
  mappedDataBytes: number | null;
}

export interface Comparison {
  /** raw median / shards median (medians of all epochs, runs pooled): how many times faster an epoch is on shards. */
  speedup: number | null;
  /**
   * raw / shards epoch time per alternated run (the ratio of that run's medians), or per paired epoch with one run:
   * their median, min and max. The text prints this median with this range, never `speedup`, which can fall
   * outside it. null when the epochs do not pair up or a time is zero.
   */
  speedupSpread: RatioSpread | null;
  /** shards samples/s / raw samples/s. */
  throughputRatio: number | null;
  /** shards / raw syscalls per sample, first epoch of a process (syscallsPerSample.firstEpoch). */
  syscallsPerSampleRatio: number | null;
  /** shards / raw syscalls per sample in the later epochs of a process; null when each process ran one epoch. */
  steadyStateSyscallsPerSampleRatio: number | null;
  /** shards / raw files opened, first epoch of a process (opensPerEpoch.firstEpoch). */
  opensRatio: number | null;
  /** packSeconds / (raw median - shards median); null if pack time is unknown or shards are not faster. */
  breakEvenEpochs: number | null;
  /** LMDB vs shards, when LMDB was measured: lmdb median / shards median. */
  lmdbVsShards?: number | null;
  /** LMDB vs shards, when LMDB was measured, per run as {@link Comparison.speedupSpread} is: what the text prints. */
  lmdbVsShardsSpread?: RatioSpread | null;
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

/** A disk the throttle limited. */
export interface ThrottledDevice {
  /** e.g. /dev/vda. */
  devPath: string;
  /** `MAJ:MIN` as the cgroup files name it. */
  majorMinor: string;
  /** How it was found from the data's paths (st_dev, partition -> disk, mount source). */
  via: string;
}

/** One side's cold-cache epochs inside the throttle group. */
export interface ThrottledSide extends Pick<SideResult, 'side' | 'label' | 'epochSeconds' | 'medianSeconds' | 'minSeconds' | 'maxSeconds' | 'samplesPerSecond'> {
  /** Samples per epoch (median). */
  samples: number;
  /** Read requests the kernel charged to the group on the throttled devices, per epoch; null where unreadable. */
  deviceReads: (number | null)[];
  /** Bytes of those reads, per epoch. */
  deviceReadBytes: (number | null)[];
  /** deviceReads / epoch seconds, per epoch: at most the limit when the throttle held. */
  achievedIops: (number | null)[];
  /** True when the page cache was verifiably dropped before every epoch of this side. */
  coldVerified: boolean;
  /** True when every epoch's reads reached the device through the group, at no more than the limit allows. */
  throttleConfirmed: boolean;
}

/** Epochs measured for real inside a cgroup with a read limit: measurements, never projections. */
export interface ThrottledMeasured {
  status: 'measured';
  /** True only when the limit was confirmed for every epoch of every side; only then are these throttled figures. */
  confirmed: boolean;
  /** The section title; says 'NOT confirmed' when `confirmed` is false. */
  title: string;
  /** e.g. 'cgroup v1 blkio.throttle.read_iops_device' or 'cgroup v2 io.max'. */
  mechanism: string;
  readIops: number;
  /** Read bandwidth limit in bytes/s, or null when only IOPS were limited. */
  readBytesPerSecond: number | null;
  devices: ThrottledDevice[];
  /** The limit lines as the kernel read them back from the group. */
  limits: string[];
  /** How the throttle was confirmed (or why it was not), in words. */
  confirmation: string;
  sides: { raw: ThrottledSide; shards: ThrottledSide; lmdb?: ThrottledSide };
  /** raw median / shards median under the throttle. */
  speedup: number | null;
  /** shards samples/s / raw samples/s under the throttle. */
  throughputRatio: number | null;
  lmdbVsShards?: number | null;
}

/** Throttled epochs were asked for but this machine does not allow them. */
export interface ThrottleUnavailable {
  status: 'unavailable';
  readIops: number;
  readBytesPerSecond: number | null;
  /** Exactly why (not root, no controller, no block device, the kernel refused the limit, ...). */
  reason: string;
}

export type ThrottledSection = ThrottledMeasured | ThrottleUnavailable;

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
  /** Present when throttled epochs were asked for (--throttle-iops): measured on an IOPS-limited device, or why not. */
  throttled?: ThrottledSection;
  /** Present with --remote or --cache-dir: the shard side read from the source (or through a shard cache), measured. */
  remote?: RemoteSection;
  /** With --remote or --cache-dir: N nodes reading one remote store, projected by a model (never measured). */
  model?: NodeModelSection;
  notes: string[];
}
