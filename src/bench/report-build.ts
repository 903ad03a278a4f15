/**
 * Builds a {@link BenchReport} from what the bench runner measured: every derived figure (medians, rates,
 * percentiles, ratios, break-even, projections) is computed here, once, so report.json, report.md and report.html
 * can never disagree.
 */
import { projectEpoch } from './profiles.js';
import type { EpochOperationCounts, StorageProfile } from './profiles.js';
import { BENCH_REPORT_VERSION } from './report.js';
import type {
  BenchOptions,
  BenchReport,
  Comparison,
  DatasetFacts,
  EpochCounters,
  FirstAndSteady,
  LatencySummary,
  MachineInfo,
  Projections,
  SideName,
  SideResult,
  StraceCheck,
} from './report.js';
import { formatRunEpoch } from './report-format.js';
import { ratioSpread } from './report-spread.js';
import { downsampledCdf, median, percentileSorted } from './report-stats.js';
import { throttledSection, type ThrottledMeasurement } from './report-throttled.js';
import type { NodeModelSection, RemoteSection } from './remote-section.js';
import type { ThrottleUnavailable } from './report.js';

/** What the runner measured for one side. */
export interface SideMeasurement {
  side: SideName;
  label: string;
  /** Wall seconds of each timed epoch. */
  epochSeconds: number[];
  /** Every per-sample latency of every timed epoch, in seconds. */
  latenciesSeconds: number[];
  latencyWhat?: string;
  /** In-process counters of each epoch (syscallsPerSample is derived). */
  counters: Omit<EpochCounters, 'syscallsPerSample'>[];
  /** `strace -c` call counts for one epoch, or null when strace was not available. */
  straceCalls: Record<string, number> | null;
  peakRssBytes: number;
  mappedDataBytes: number | null;
}

export interface BenchMeasurements {
  command: string[];
  machine: MachineInfo;
  options: BenchOptions;
  dataset: Omit<DatasetFacts, 'overhead'>;
  raw: SideMeasurement;
  shards: SideMeasurement;
  lmdb?: SideMeasurement;
  profiles: readonly StorageProfile[];
  /** Throttled epochs, when asked for: what they measured, or why they could not run. */
  throttled?: ThrottledMeasurement | ThrottleUnavailable;
  /** With --remote or --cache-dir: the shard side's epochs against the source (measured). */
  remote?: RemoteSection;
  /** With --remote or --cache-dir: the many-nodes projection (a model). */
  model?: NodeModelSection;
  notes?: string[];
  /** Defaults to now. */
  createdAt?: Date;
}

/** Syscalls that count as sample I/O when cross-checking with strace. */
export const STRACE_IO_CALLS = ['open', 'openat', 'openat2', 'read', 'pread64', 'readv', 'preadv', 'preadv2', 'stat', 'lstat', 'fstat', 'newfstatat', 'statx', 'close'] as const;

/** A warm epoch that fetched more than this from storage, and more than {@link WARM_STORAGE_READ_SHARE} of what it read, was not warm. */
export const WARM_STORAGE_READ_FLOOR = 1 << 20;
export const WARM_STORAGE_READ_SHARE = 0.01;

/** Positions (in run order) of a side's epochs that read from storage although the cache was meant to be warm. */
export function epochsReadFromStorage(counters: readonly Pick<EpochCounters, 'storageReadBytes' | 'bytesRead'>[]): number[] {
  const out: number[] = [];
  counters.forEach((c, i) => {
    if (c.storageReadBytes !== null && c.storageReadBytes > Math.max(WARM_STORAGE_READ_FLOOR, WARM_STORAGE_READ_SHARE * c.bytesRead)) out.push(i);
  });
  return out;
}

/** Notes naming every warm epoch that was not served from the page cache. */
function warmCheckNotes(sides: readonly SideResult[], epochsPerRun: number): string[] {
  const notes: string[] = [];
  for (const s of sides) {
    const bad = epochsReadFromStorage(s.counters);
    if (bad.length === 0) continue;
    const list = bad.map((i) => `${formatRunEpoch(i, epochsPerRun)} ${((s.counters[i]!.storageReadBytes ?? 0) / 1e6).toFixed(1)} MB`).join(', ');
    notes.push(
      `NOT warm: ${s.side} epochs read from storage although --cache warm (${list}; flagged above ${WARM_STORAGE_READ_FLOOR / 2 ** 20} MiB and ${WARM_STORAGE_READ_SHARE * 100} % of the bytes read from the files): the page cache did not hold the data, so these epochs are partly cold.`,
    );
  }
  return notes;
}

/** a / b, or null when b is zero: JSON has no Infinity, and 'no ratio' is the honest answer. */
const ratio = (a: number, b: number): number | null => (b === 0 ? null : a / b);

export function summarizeLatency(seconds: readonly number[], what = 'sample fetch (request to bytes ready)'): LatencySummary {
  if (seconds.length === 0) return { what, count: 0, p50: 0, p99: 0, mean: 0, max: 0, cdf: [] };
  const sorted = [...seconds].sort((a, b) => a - b);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    what,
    count: sorted.length,
    p50: percentileSorted(sorted, 0.5),
    p99: percentileSorted(sorted, 0.99),
    mean: sum / sorted.length,
    max: sorted[sorted.length - 1]!,
    cdf: downsampledCdf(sorted),
  };
}

function withSyscallsPerSample(c: Omit<EpochCounters, 'syscallsPerSample'>): EpochCounters {
  return { ...c, syscallsPerSample: c.samples === 0 ? 0 : (c.opens + c.reads - c.mappedReads + c.stats + c.closes) / c.samples };
}

/** Per-field median of a side's epoch counters: the operation counts projections price. */
export function medianCounts(counters: readonly EpochCounters[]): EpochOperationCounts {
  const m = (f: (c: EpochCounters) => number): number => (counters.length === 0 ? 0 : median(counters.map(f)));
  return { opens: m((c) => c.opens), stats: m((c) => c.stats), reads: m((c) => c.reads), closes: m((c) => c.closes), bytes: m((c) => c.bytesRead), samples: m((c) => c.samples) };
}

function straceCheck(calls: Record<string, number> | null, counters: readonly EpochCounters[]): StraceCheck | null {
  if (calls === null) return null;
  const totalCalls = Object.values(calls).reduce((s, v) => s + v, 0);
  const io = STRACE_IO_CALLS.reduce((s, name) => s + (calls[name] ?? 0), 0);
  const first = counters[0];
  const samples = first?.samples ?? 0;
  const ioCallsPerSample = samples === 0 ? 0 : io / samples;
  // agreement leaves close out on both sides: a dataset closes its shards when the child tears down, after the epoch
  // its counters cover, and the traced setup-only child opened none to subtract (the shards' closes read as 1.2-1.3x)
  const tracedNoClose = samples === 0 ? 0 : (io - (calls.close ?? 0)) / samples;
  const inProcessNoClose = first === undefined || first.samples === 0 ? 0 : (first.opens + first.reads - first.mappedReads + first.stats) / first.samples;
  return { calls: { ...calls }, totalCalls, ioCallsPerSample, agreement: ratio(tracedNoClose, inProcessNoClose) };
}

/**
 * A per-epoch figure over the epochs each process ran first and over its later ones. A side's epochs are listed
 * process by process, `epochsPerProcess` each.
 */
export function firstAndSteady(values: readonly number[], epochsPerProcess: number): FirstAndSteady {
  const per = Math.max(1, epochsPerProcess);
  const first = values.filter((_, i) => i % per === 0);
  const later = values.filter((_, i) => i % per !== 0);
  return { firstEpoch: first.length === 0 ? 0 : median(first), steadyState: later.length === 0 ? null : median(later) };
}

export function summarizeSide(m: SideMeasurement, epochsPerProcess = m.epochSeconds.length): SideResult {
  if (m.epochSeconds.length === 0) throw new RangeError(`${m.side}: no timed epochs`);
  const counters = m.counters.map(withSyscallsPerSample);
  const medianSeconds = median(m.epochSeconds);
  const counts = medianCounts(counters);
  const payloadBytes = median(counters.map((c) => c.payloadBytes));
  return {
    side: m.side,
    label: m.label,
    epochSeconds: [...m.epochSeconds],
    medianSeconds,
    minSeconds: Math.min(...m.epochSeconds),
    maxSeconds: Math.max(...m.epochSeconds),
    samplesPerSecond: counts.samples / medianSeconds,
    // payload, not bytesRead: a shard side's reads include tar headers and merged spans, a raw side's do not
    megabytesPerSecond: payloadBytes / medianSeconds / 1e6,
    bytesReadPerEpoch: counts.bytes,
    latency: summarizeLatency(m.latenciesSeconds, m.latencyWhat),
    syscallsPerSample: firstAndSteady(counters.map((c) => c.syscallsPerSample), epochsPerProcess),
    opensPerEpoch: firstAndSteady(counters.map((c) => c.opens), epochsPerProcess),
    counters,
    strace: straceCheck(m.straceCalls, counters),
    peakRssBytes: m.peakRssBytes,
    mappedDataBytes: m.mappedDataBytes,
  };
}

export function withOverhead(d: Omit<DatasetFacts, 'overhead'>): DatasetFacts {
  return {
    ...d,
    overhead: {
      rawAllocatedVsRaw: ratio(d.rawAllocatedBytes, d.rawBytes),
      shardsVsRaw: ratio(d.shardBytes, d.rawBytes),
      indexVsRaw: ratio(d.indexBytes, d.rawBytes),
      totalVsRaw: ratio(d.shardBytes + d.indexBytes, d.rawBytes),
    },
  };
}

/** Epochs after which packing has paid for itself; null when it never does or pack time is unknown. */
export function breakEvenEpochs(packSeconds: number | null, rawEpochSeconds: number, shardEpochSeconds: number): number | null {
  if (packSeconds === null) return null;
  const saved = rawEpochSeconds - shardEpochSeconds;
  return saved > 0 ? packSeconds / saved : null;
}

export function compareSides(options: BenchOptions, raw: SideResult, shards: SideResult, packSeconds: number | null, lmdb?: SideResult): Comparison {
  const steadyShards = shards.syscallsPerSample.steadyState;
  const steadyRaw = raw.syscallsPerSample.steadyState;
  return {
    speedup: ratio(raw.medianSeconds, shards.medianSeconds),
    speedupSpread: ratioSpread({ options }, raw, shards),
    throughputRatio: ratio(shards.samplesPerSecond, raw.samplesPerSecond),
    syscallsPerSampleRatio: ratio(shards.syscallsPerSample.firstEpoch, raw.syscallsPerSample.firstEpoch),
    steadyStateSyscallsPerSampleRatio: steadyShards === null || steadyRaw === null ? null : ratio(steadyShards, steadyRaw),
    opensRatio: ratio(shards.opensPerEpoch.firstEpoch, raw.opensPerEpoch.firstEpoch),
    breakEvenEpochs: breakEvenEpochs(packSeconds, raw.medianSeconds, shards.medianSeconds),
    ...(lmdb ? { lmdbVsShards: ratio(lmdb.medianSeconds, shards.medianSeconds), lmdbVsShardsSpread: ratioSpread({ options }, lmdb, shards) } : {}),
  };
}

export const PROJECTION_MODEL =
  'per epoch: (opens x open + stats x stat + closes x close) / min(concurrency, metadata in flight) + reads x read / min(concurrency, data in flight) + bytes / bandwidth; counts are the measured per-epoch medians; latencies are typical figures for each storage class, not measurements';

export function projectSides(sides: BenchReport['sides'], profiles: readonly StorageProfile[], concurrency: number, packSeconds: number | null): Projections {
  const rows = profiles.map((profile) => {
    const raw = projectEpoch(medianCounts(sides.raw.counters), profile, concurrency);
    const shards = projectEpoch(medianCounts(sides.shards.counters), profile, concurrency);
    const lmdb = sides.lmdb ? projectEpoch(medianCounts(sides.lmdb.counters), profile, concurrency) : undefined;
    return {
      profile,
      seconds: { raw, shards, ...(lmdb === undefined ? {} : { lmdb }) },
      speedup: ratio(raw, shards),
      breakEvenEpochs: breakEvenEpochs(packSeconds, raw, shards),
    };
  });
  return { projected: true, model: PROJECTION_MODEL, concurrency, rows };
}

/** Assembles the whole report from measurements. */
export function buildReport(input: BenchMeasurements): BenchReport {
  const dataset = withOverhead(input.dataset);
  const per = input.options.epochsPerProcess;
  const raw = summarizeSide(input.raw, per);
  const shards = summarizeSide(input.shards, per);
  const lmdb = input.lmdb ? summarizeSide(input.lmdb, per) : undefined;
  const sides = { raw, shards, ...(lmdb ? { lmdb } : {}) };
  const notes = [...(input.notes ?? [])];
  if (input.options.cache.mode === 'cold' && !input.options.cache.coldVerified) {
    notes.push(`Cold cache was requested but could not be verified (${input.options.cache.method}): epochs may have been served from the page cache.`);
  }
  if (input.options.cache.mode === 'warm') notes.push(...warmCheckNotes(Object.values(sides), input.options.epochs));
  return {
    version: BENCH_REPORT_VERSION,
    createdAt: (input.createdAt ?? new Date()).toISOString(),
    command: [...input.command],
    machine: input.machine,
    options: input.options,
    dataset,
    sides,
    comparison: compareSides(input.options, raw, shards, dataset.packSeconds, lmdb),
    projections: projectSides(sides, input.profiles, input.options.concurrency, dataset.packSeconds),
    ...(input.throttled === undefined ? {} : { throttled: throttledSection(input.throttled) }),
    ...(input.remote === undefined ? {} : { remote: input.remote }),
    ...(input.model === undefined ? {} : { model: input.model }),
    notes,
  };
}
