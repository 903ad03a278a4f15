/**
 * Bench measurements generated from a seed, for report tests: plausible numbers (shards faster than raw, fewer
 * operations), never hard-coded results. Tests compute what the report should say from these inputs.
 */
import { BUILTIN_PROFILES } from '../../src/bench/profiles.js';
import type { BenchMeasurements, SideMeasurement } from '../../src/bench/report-build.js';
import type { SideName } from '../../src/bench/report.js';
import { SeededRandom } from '../../src/bench/seeded-random.js';

export interface MeasurementShape {
  samples?: number;
  /** Timed epochs per run. */
  epochs?: number;
  /** Runs per side: each side gets epochs x repeat timed epochs. */
  repeat?: number;
  lmdb?: boolean;
  strace?: boolean;
  packSeconds?: number | null;
  coldVerified?: boolean;
}

interface Ops {
  opens: number;
  stats: number;
  reads: number;
  /** Of the reads, those served from a memory map (no system call). */
  mapped?: number;
  closes: number;
}

/** `perSample` operations scale with the samples; `perEpoch` ones (opening each shard once) do not. */
function side(random: SeededRandom, name: SideName, label: string, samples: number, epochs: number, perSampleSeconds: number, perSample: Ops, perEpoch: Ops, strace: boolean): SideMeasurement {
  const epochSeconds = Array.from({ length: epochs }, () => samples * perSampleSeconds * (0.9 + 0.2 * random.float()));
  const latenciesSeconds = Array.from({ length: samples * epochs }, () => perSampleSeconds * Math.exp(0.6 * random.normal()));
  const bytesPerSample = 90_000 + random.int(20_000);
  const counters = Array.from({ length: epochs }, () => ({
    samples,
    opens: Math.round(samples * perSample.opens) + perEpoch.opens,
    stats: Math.round(samples * perSample.stats) + perEpoch.stats,
    reads: Math.round(samples * perSample.reads) + perEpoch.reads + random.int(5),
    mappedReads: Math.round(samples * (perSample.mapped ?? 0)),
    closes: Math.round(samples * perSample.closes) + perEpoch.closes,
    // the shard side's reads also return tar headers and padding: more bytes read than payload
    bytesRead: samples * (bytesPerSample + (name === 'raw' ? 0 : 1024)),
    payloadBytes: samples * bytesPerSample,
    storageReadBytes: 0,
  }));
  const first = counters[0]!;
  const straceCalls = strace
    ? { openat: first.opens, read: first.reads - first.mappedReads, statx: first.stats, close: first.closes, futex: 100 + random.int(100), mmap: 20 }
    : null;
  const peakRssBytes = (60 + random.int(200)) * 2 ** 20;
  // the raw side reads into the heap; the others map their data files
  const mappedDataBytes = name === 'raw' ? 0 : Math.floor(peakRssBytes * random.float());
  return { side: name, label, epochSeconds, latenciesSeconds, counters, straceCalls, peakRssBytes, mappedDataBytes };
}

export function makeMeasurements(seed: number, shape: MeasurementShape = {}): BenchMeasurements {
  const random = new SeededRandom(seed);
  const samples = shape.samples ?? 200 + random.int(300);
  const epochsPerRun = shape.epochs ?? 3;
  const repeat = shape.repeat ?? 1;
  const epochs = epochsPerRun * repeat;
  const strace = shape.strace ?? true;
  const rawPerSample = 2e-4 + random.float() * 3e-4;
  const shardPerSample = rawPerSample * (0.15 + 0.3 * random.float());
  const packSeconds = shape.packSeconds === undefined ? samples * rawPerSample * (1 + 2 * random.float()) : shape.packSeconds;
  const rawBytes = samples * 100_000;
  const shards = 1 + random.int(4);
  const none: Ops = { opens: 0, stats: 0, reads: 0, closes: 0 };
  const openEachShard: Ops = { opens: shards + 1, stats: shards + 1, reads: 2, closes: shards + 1 }; // + the index
  return {
    command: ['shardkit', 'bench', '/data/raw', '/data/raw.shards', '--epochs', String(epochsPerRun), '--repeat', String(repeat)],
    machine: {
      cpus: 2,
      cpuModel: 'Test CPU',
      memoryBytes: 8 * 2 ** 30,
      os: { platform: 'linux', release: '6.1.0', arch: 'x64' },
      node: 'v20.20.2',
      shardkit: '0.1.0',
      versions: { sharp: '0.35.5', vips: '8.18.7' },
      filesystem: { raw: 'ext4', dataset: 'ext4' },
    },
    options: {
      epochs: epochsPerRun,
      repeat,
      epochsPerProcess: 1,
      order: 'random',
      batch: 32,
      concurrency: 8,
      decode: 'none',
      seed: 0,
      cache: { mode: 'cold', coldVerified: shape.coldVerified ?? true, method: 'posix_fadvise(DONTNEED) + mincore check' },
    },
    dataset: {
      rawDir: '/data/raw',
      dataset: '/data/raw.shards',
      samples,
      rawFiles: samples,
      rawBytes,
      rawAllocatedBytes: rawBytes + samples * 2048,
      shards,
      shardBytes: rawBytes + samples * 512,
      indexBytes: samples * 40,
      layout: 'tar',
      compress: 'none',
      packSeconds,
    },
    raw: side(random, 'raw', 'raw files', samples, epochs, rawPerSample, { opens: 1, stats: 1, reads: 2, closes: 1 }, none, strace),
    // most shard reads copy out of memory maps (the native addon), a few are preads
    shards: side(random, 'shards', 'shards', samples, epochs, shardPerSample, { ...none, reads: 1, mapped: 0.75 }, openEachShard, strace),
    ...(shape.lmdb ? { lmdb: side(random, 'lmdb', 'lmdb', samples, epochs, shardPerSample * 1.3, { ...none, reads: 0.1, mapped: 0.1 }, { opens: 2, stats: 2, reads: 1, closes: 0 }, strace) } : {}),
    profiles: BUILTIN_PROFILES,
    notes: ['generated by test/helpers/bench-measurements.ts'],
    createdAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)),
  };
}
