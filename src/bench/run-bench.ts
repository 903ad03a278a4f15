/**
 * `shardkit bench`: raw files vs shards (and optionally LMDB), each side in fresh child processes, alternated
 * run by run so machine drift hits every side; then the strace cross-check; then the report. Every figure in the
 * report comes from what the children measured or from the files on disk: nothing is assumed.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { sharpLib } from '../passes/sharp-lib.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { memberPath } from '../../formats/sample.js';
import { readPackSeconds } from '../pack/pack-report.js';
import { openDataset } from '../read/dataset.js';
import { resolveBenchOptions, type ResolvedBenchOptions, type RunBenchOptions } from './bench-options.js';
import type { CacheDropResult, EpochJob, EpochResult } from './child-protocol.js';
import { directoryBytes, filesystemOf, listSamples, rawFileFacts, type SampleList } from './dataset-facts.js';
import { readFilesOnce } from './cache.js';
import { throttleSupport } from './io-throttle.js';
import type { ThrottleUnavailable } from './report.js';
import type { ThrottledMeasurement } from './report-throttled.js';
import { runThrottledEpochs } from './throttled-runs.js';
import { buildLmdb } from './lmdb-side.js';
import { collectMachineInfo } from './machine-info.js';
import { BUILTIN_PROFILES, loadProfiles, mergeProfiles } from './profiles.js';
import type { BenchReport, CacheInfo, SideName } from './report.js';
import { buildReport, type SideMeasurement } from './report-build.js';
import { runEpochChild } from './spawn-child.js';
import { BenchCacheDirs, expectSameDataset, remoteEpochs } from './remote-runs.js';
import { nodeModelSection } from './node-model-run.js';
import type { NodeModelSection, RemoteEpoch, RemoteSection } from './remote-section.js';
import { redactLocation } from '../io/location.js';
import { straceAvailable, subtractCalls } from './strace.js';

export type { BenchProgress, RunBenchOptions } from './bench-options.js';

const SIDE_LABELS: Record<SideName, string> = {
  raw: 'raw files (open + fstat + read + close per file)',
  shards: 'shards (shardkit loader)',
  lmdb: 'LMDB (lmdb-js, one record per sample)',
};

/** Most files given to `strace -P` (one argument each); above it the whole process is counted. */
const MAX_TRACE_PATHS = 20_000;

interface SideAccumulator {
  epochs: EpochResult[];
  peakRssBytes: number;
  /** Of the child with that peak: its mapped data pages after the epochs (see mapped-memory.ts). */
  mappedDataBytes: number | null;
  straceCalls: Record<string, number> | null;
}

/**
 * The epochs each child process of a run times, in order. Cold: one per child, because a process keeps what it
 * mapped (the native addon's shard maps, LMDB's data.mdb) and eviction does not drop mapped pages, so a second
 * epoch in the same process would be warm. Warm: all of them in one child.
 */
export function childEpochs(cache: 'warm' | 'cold', epochs: number): number[][] {
  const all = Array.from({ length: epochs }, (_, i) => i);
  return cache === 'cold' ? all.map((e) => [e]) : [all];
}

/**
 * Runs the bench and returns the report (write it with `writeReport`).
 *
 * @example
 * const report = await runBench({ rawDir: 'imagenet-raw', dataset: 'imagenet-raw.shards', epochs: 2, repeat: 3 });
 * await writeReport('bench-out', report);
 */
export async function runBench(options: RunBenchOptions): Promise<BenchReport> {
  const o = resolveBenchOptions(options);
  const userProfiles = [...(options.profiles ?? []), ...(options.profileFile === undefined ? [] : await loadProfiles(options.profileFile))];
  const profiles = mergeProfiles(BUILTIN_PROFILES, userProfiles);
  const rawDir = path.resolve(o.rawDir);
  const dataset = path.resolve(o.dataset);
  if (!fs.statSync(rawDir, { throwIfNoEntry: false })?.isDirectory()) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `${rawDir} is not a directory: pass the raw files the dataset was packed from as <raw-dir>`, { file: rawDir });
  }
  const ds = await openDataset(dataset);
  let list: SampleList;
  const manifest = ds.manifest;
  try {
    list = await listSamples(ds);
  } finally {
    await ds.close();
  }
  if (list.keys.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${dataset} holds no samples: nothing to bench`, { file: dataset });
  if (o.remote !== null) await expectSameDataset(o.remote, manifest, dataset);
  if (o.throttle !== null && (o.remote !== null || o.shardCache !== null)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, '--throttle-iops limits the reads of this machine\'s disk, which a remote or cached shard side does not make: drop --throttle-iops, or --remote and --cache-dir');
  }
  const raw = rawFileFacts(rawDir, list, manifest.passes.map((p) => p.name));
  const notes = describeComparison(o, manifest.passes.map((p) => p.name), raw.bytes, manifest.totals.bytes);

  const ownWorkDir = options.workDir === undefined;
  const workDir = ownWorkDir ? fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-bench-')) : path.resolve(options.workDir as string);
  fs.mkdirSync(workDir, { recursive: true });
  const cacheDirs = new BenchCacheDirs(o.shardCache);
  const remoteRows: RemoteEpoch[] = [];
  try {
    const lmdbPath = path.join(workDir, 'lmdb');
    const versions: Record<string, string> = { sharp: sharpLib().versions.sharp ?? 'unknown', libvips: sharpLib().versions.vips };
    if (o.lmdb) {
      const copy = await openDataset(dataset);
      let seconds: number;
      try {
        seconds = await buildLmdb(copy, lmdbPath, (done) => options.onProgress?.({ phase: 'lmdb', done, total: list.keys.length }));
      } finally {
        await copy.close();
      }
      versions.lmdb = lmdbVersion();
      notes.push(
        `LMDB side: the samples were copied into a new LMDB environment (${(directoryBytes(lmdbPath) / 1e6).toFixed(1)} MB on ${filesystemOf(lmdbPath)}, ` +
          `built in ${seconds.toFixed(2)} s) keyed by sample key; it reads through mmap, so its "reads" are get() calls (one per sample) and its opens/stats/closes are 0; its major page faults are in the note on LMDB page faults.`,
      );
    }
    const sides: SideName[] = o.lmdb ? ['raw', 'shards', 'lmdb'] : ['raw', 'shards'];
    const shardFiles = [path.join(dataset, manifest.index.file), ...manifest.shards.map((s) => path.join(dataset, s.file))];
    const jobOf = (side: SideName, epochs: number[], extra: Partial<EpochJob> = {}): EpochJob => ({
      side,
      rawDir,
      dataset,
      lmdbPath,
      keys: list.keys,
      exts: list.exts,
      sampleBytes: list.sampleBytes,
      shardSizes: list.shardSizes,
      epochs,
      order: o.order,
      seed: o.seed,
      batch: o.batch,
      concurrency: o.concurrency,
      decode: o.decode,
      cold: o.cache === 'cold',
      evictDirs: side === 'raw' ? [rawDir] : side === 'shards' ? [dataset] : [lmdbPath],
      probeFiles: side === 'raw' ? raw.probeFiles : side === 'shards' ? shardFiles.slice(0, 32) : [path.join(lmdbPath, 'data.mdb')],
      setupOnly: false,
      ...(side === 'shards' && o.remote !== null ? { remote: o.remote } : {}),
      ...(side === 'shards' ? cacheDirs.next() : {}),
      ...extra,
    });

    const dataFiles = (side: SideName): string[] =>
      side === 'raw' ? list.keys.flatMap((key, i) => (list.exts[i] ?? []).map((ext) => path.join(rawDir, memberPath(key, ext)))) : side === 'shards' ? shardFiles : [path.join(lmdbPath, 'data.mdb')];
    const tracePaths = (side: SideName): string[] | null => {
      const files = dataFiles(side);
      return files.length <= MAX_TRACE_PATHS ? files : null;
    };
    // Warm means cached from the first timed epoch on: read every side's data once, untimed, whatever ran before.
    const warmUp = o.cache === 'warm' ? readFilesOnce(sides.flatMap(dataFiles)) : undefined;
    const acc = new Map<SideName, SideAccumulator>(sides.map((s) => [s, { epochs: [], peakRssBytes: 0, mappedDataBytes: null, straceCalls: null }]));
    const children = childEpochs(o.cache, o.epochs);
    const n = list.keys.length;
    const total = o.repeat * sides.length * o.epochs * n;
    let done = 0;
    for (let run = 0; run < o.repeat; run++) {
      for (const epochs of children) {
        for (const side of sides) {
          const base = done;
          const { result } = await runEpochChild(jobOf(side, epochs), workDir, {
            onDone: (d) => options.onProgress?.({ phase: 'epochs', side, done: base + d, total }),
          });
          done = base + epochs.length * n;
          options.onProgress?.({ phase: 'epochs', side, done, total });
          if (side === 'shards' && (o.remote !== null || o.shardCache !== null)) remoteRows.push(...remoteEpochs(result.epochs));
          cacheDirs.removeAll();
          const a = acc.get(side) as SideAccumulator;
          a.epochs.push(...result.epochs);
          if (result.peakRssBytes >= a.peakRssBytes) {
            a.peakRssBytes = result.peakRssBytes;
            a.mappedDataBytes = result.mappedDataBytes;
          }
        }
      }
    }

    let throttled: ThrottledMeasurement | ThrottleUnavailable | undefined;
    if (o.throttle !== null) {
      // throttled epochs are cold: one per child, like --cache cold
      const throttledChildren = childEpochs('cold', o.epochs);
      const perChild = n;
      throttled = await runThrottledEpochs({
        limits: o.throttle,
        sides,
        labels: SIDE_LABELS,
        repeat: o.repeat,
        childEpochs: throttledChildren,
        dataPaths: [rawDir, dataset, ...(o.lmdb ? [lmdbPath] : [])],
        jobOf,
        workDir,
        onDone: (side, child, d) => options.onProgress?.({ phase: 'throttled', side, done: child * perChild + d, total: o.repeat * sides.length * throttledChildren.length * perChild }),
      });
      notes.push(...throttledNotes(throttled));
    }

    const traced = o.strace === false ? false : straceAvailable();
    if (o.strace === true && !traced) throw new ShardkitError(ErrorCodes.INVALID_ARG, 'strace was asked for but does not run here (not installed, or ptrace is not allowed)');
    if (traced) {
      for (const [i, side] of sides.entries()) {
        // Warm cache and one epoch: the count of calls does not depend on the cache, and drop_caches would add its own.
        const trace = { paths: tracePaths(side) };
        const setup = await runEpochChild(jobOf(side, [0], { cold: false, setupOnly: true }), workDir, { trace });
        const epoch = await runEpochChild(jobOf(side, [0], { cold: false }), workDir, {
          trace,
          onDone: (d) => options.onProgress?.({ phase: 'strace', side, done: i * n + d, total: sides.length * n }),
        });
        (acc.get(side) as SideAccumulator).straceCalls = subtractCalls(epoch.straceCalls ?? {}, setup.straceCalls ?? {});
      }
      // said side by side: a raw tree too big to name on the command line is counted whole, the shards still filtered
      const filtered = sides.filter((s) => tracePaths(s) !== null);
      const whole = sides.filter((s) => tracePaths(s) === null);
      notes.push(
        'strace: calls of one traced epoch (a child running one warm epoch under `strace -f -c`, minus a traced child doing the same setup without the epoch)' +
          (filtered.length > 0 ? `; for ${filtered.join(', ')}, only calls on the side's own data files (\`strace -P\` on each of them)` : '') +
          (whole.length > 0
            ? `; for ${whole.join(', ')}, every call of the process (more than ${MAX_TRACE_PATHS} files: no -P filter), reads of pipes and event fds by the runtime included`
            : '') +
          '.',
      );
    } else {
      notes.push(o.strace === false ? 'strace cross-check skipped (--no-strace).' : 'strace cross-check skipped: strace is not installed or not allowed here.');
    }

    // with a remote side, the many-nodes projection (a model, kept apart from the measurements)
    let model: NodeModelSection | undefined;
    if (o.remote !== null || o.shardCache !== null) {
      const got = nodeModelSection({
        shardBytes: manifest.shards.map((s) => s.bytes),
        shardSamples: list.shardSizes,
        sampleBytes: list.sampleBytes,
        order: o.order,
        seed: o.seed,
        cacheBytesPerNode: o.shardCache?.maxBytes ?? Math.ceil(manifest.totals.shardBytes / 2),
        cacheSaid: o.shardCache === null ? 'no --cache-size was given, so each node is modelled with a cache of half the dataset' : 'each node with a cache of --cache-size',
      });
      if (typeof got === 'string') notes.push(`${got}.`);
      else model = got;
    }
    const packTime = readPackSeconds(dataset);
    if (packTime.why !== undefined) notes.push(`Pack time unknown, so no break-even: ${packTime.why}.`);
    const cache = cacheInfo(o, [...acc.values()].flatMap((a) => a.epochs.map((e) => e.cache)), warmUp);
    notes.push(...sideNotes(o, acc));
    if (throttled?.status !== 'measured') notes.push(throttleSupport(o.throttle !== null));
    const measurement = (side: SideName): SideMeasurement => {
      const a = acc.get(side) as SideAccumulator;
      return {
        side,
        label: SIDE_LABELS[side],
        epochSeconds: a.epochs.map((e) => e.seconds),
        latenciesSeconds: a.epochs.flatMap((e) => e.batchWaits),
        latencyWhat: o.batch === 1 ? 'sample wait (next() to sample in hand)' : `batch wait (next() to a batch of ${o.batch} in hand)`,
        counters: a.epochs.map((e) => ({ samples: e.samples, opens: e.opens, reads: e.reads, mappedReads: e.mappedReads, stats: e.stats, closes: e.closes, bytesRead: e.bytesRead, payloadBytes: e.payloadBytes, storageReadBytes: e.storageReadBytes })),
        straceCalls: a.straceCalls,
        peakRssBytes: a.peakRssBytes,
        mappedDataBytes: a.mappedDataBytes,
      };
    };
    return buildReport({
      command: options.command ?? [],
      machine: collectMachineInfo(versions, { raw: filesystemOf(rawDir), dataset: filesystemOf(dataset) }),
      options: { epochs: o.epochs, repeat: o.repeat, epochsPerProcess: children[0]?.length ?? o.epochs, order: o.order, batch: o.batch, concurrency: o.concurrency, decode: o.decode, seed: o.seed, cache },
      dataset: {
        rawDir,
        dataset,
        samples: n,
        rawFiles: raw.files,
        rawBytes: raw.bytes,
        rawAllocatedBytes: raw.allocatedBytes,
        shards: manifest.shards.length,
        shardBytes: manifest.totals.shardBytes,
        indexBytes: manifest.index.bytes,
        layout: manifest.layout,
        compress: manifest.compress,
        packSeconds: packTime.seconds,
      },
      raw: measurement('raw'),
      shards: measurement('shards'),
      ...(o.lmdb ? { lmdb: measurement('lmdb') } : {}),
      profiles,
      ...(throttled === undefined ? {} : { throttled }),
      ...(o.remote === null && o.shardCache === null ? {} : { remote: remoteSectionOf(o, dataset, manifest.totals.shardBytes, remoteRows) }),
      ...(model === undefined ? {} : { model }),
      notes,
    });
  } finally {
    cacheDirs.removeAll();
    if (ownWorkDir) fs.rmSync(workDir, { recursive: true, force: true });
    else fs.rmSync(path.join(workDir, 'lmdb'), { recursive: true, force: true });
  }
}

/** How the throttled epochs ran (or why they did not), for the notes. */
function throttledNotes(t: ThrottledMeasurement | ThrottleUnavailable): string[] {
  if (t.status === 'unavailable') return [`Throttled epochs (--throttle-iops ${t.readIops}) did not run: ${t.reason}.`];
  return [
    `Throttled epochs: each side's epochs again in fresh children, cold cache, each child moved into a new cgroup (${t.version === 2 ? 'v2 io.max' : 'v1 blkio.throttle'}) after opening its data and before its first read; ` +
      `limits as read back: ${t.limits.join('; ')}; devices: ${t.devices.map((d) => d.via).join('; ')}. The group was removed afterwards.`,
  ];
}

function lmdbVersion(): string {
  try {
    return (createRequire(import.meta.url)('lmdb/package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** What exactly is compared, said up front. */
function describeComparison(o: ResolvedBenchOptions, passes: string[], rawBytes: number, datasetBytes: number): string[] {
  const notes = [
    `Compared: the same ${o.order === 'random' ? 'seeded random' : 'key-ordered'} sequence of samples, read from the raw files under the raw directory and from the dataset's shards; every epoch reads every sample once.`,
    'Raw side I/O: open, fstat, read, close for every member file, blocking calls for files up to 64 KiB and thread-pool reads (bounded by --concurrency) above, the same policy the shard reader uses for its reads.',
    'Shard side: the shardkit loader (CRC32C of every member checked); each child opens the dataset before its first epoch (manifest, index header: not timed), then opens each shard once, on first use, so later epochs in the same process open nothing.',
  ];
  if (passes.length > 0 || rawBytes !== datasetBytes) {
    notes.push(
      `Caution: the dataset was made with passes (${passes.join(', ') || 'none'}); the raw side reads the unprocessed source files (${rawBytes} bytes) while the shards hold ${datasetBytes} bytes of processed samples, so the two sides do not read the same content.`,
    );
  }
  return notes;
}

function cacheInfo(o: ResolvedBenchOptions, drops: (CacheDropResult | null)[], warmUp: CacheInfo['warmUp']): CacheInfo {
  if (o.cache === 'warm' && warmUp !== undefined) {
    return {
      mode: 'warm',
      coldVerified: false,
      method: 'none',
      detail: `warm page cache: every data file of every side (${warmUp.files} files, ${(warmUp.bytes / 1e6).toFixed(1)} MB) was read once, untimed, before the first timed epoch (${warmUp.seconds.toFixed(2)} s), and nothing was evicted; epochs that still read from storage are flagged in the notes`,
      warmUp,
    };
  }
  if (o.cache === 'warm') return { mode: 'warm', coldVerified: false, method: 'none', detail: 'warm page cache, with no warm-up read' };
  const done = drops.filter((d): d is CacheDropResult => d !== null);
  const verified = done.length > 0 && done.every((d) => d.verified);
  const first = done[0];
  const failed = done.find((d) => !d.verified);
  return {
    mode: 'cold',
    coldVerified: verified,
    method: first?.method ?? 'none',
    detail: verified ? `dropped before each of ${done.length} epochs; ${first?.detail ?? ''}` : `not cold for every epoch: ${failed?.detail ?? 'no drop attempted'}`,
  };
}

function sideNotes(o: ResolvedBenchOptions, acc: Map<SideName, SideAccumulator>): string[] {
  const notes: string[] = [];
  const lmdb = acc.get('lmdb');
  if (lmdb !== undefined) {
    const faults = lmdb.epochs.map((e) => e.majorPageFaults);
    notes.push(`LMDB major page faults per epoch: ${faults.join(', ')} (each one a read the kernel did for the mmap).`);
  }
  if (o.cache === 'cold') {
    for (const [side, a] of acc) {
      const drops = a.epochs.map((e) => e.cache).filter((d): d is CacheDropResult => d !== null);
      const ok = drops.filter((d) => d.verified).length;
      const bad = drops.find((d) => !d.verified);
      notes.push(`${side}: cold cache verified before ${ok} of ${drops.length} epochs${bad === undefined ? '' : ` (${bad.detail ?? bad.method})`}.`);
    }
    if (o.epochs > 1) {
      notes.push(
        'Cold epochs: each timed epoch ran in a fresh process of its own (a process keeps what it has mapped, the shards or data.mdb, and eviction does not drop mapped pages); the shard side opens and maps each shard on first use, after the eviction, so every epoch includes opening the shards.',
      );
    }
  }
  for (const [side, a] of acc) {
    const bytes = a.epochs.map((e) => e.storageReadBytes);
    if (bytes.every((b): b is number => b !== null)) {
      const read = a.epochs.map((e) => e.bytesRead);
      notes.push(
        `${side}: bytes fetched from storage per epoch (/proc/self/io read_bytes, page-cache misses plus kernel read-ahead): ${bytes.map((b) => (b / 1e6).toFixed(1)).join(', ')} MB, for ${read.map((b) => (b / 1e6).toFixed(1)).join(', ')} MB the program read.`,
      );
    }
  }
  if (o.epochs > 1 && o.cache === 'warm') notes.push('Counters per epoch: the first epoch of each shard-side process includes opening each shard (open, fstat, one 4 KiB fingerprint read); later epochs reuse the handles.');
  return notes;
}

function remoteSectionOf(o: ResolvedBenchOptions, dataset: string, datasetBytes: number, epochs: RemoteEpoch[]): RemoteSection {
  return {
    source: o.remote === null ? `${dataset} (local, through the cache)` : redactLocation(o.remote).replace(/\?\.\.\.$/, ''),
    cache: o.shardCache === null ? null : { maxBytes: o.shardCache.maxBytes, policy: o.shardCache.policy },
    datasetBytes,
    epochs,
  };
}
