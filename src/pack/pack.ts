/**
 * `pack`: walk a source tree, run the preprocessing passes once, and write a dataset. Samples reach the writer in
 * walk order whatever the concurrency, so the same input and options give the same bytes; memory stays bounded
 * (two directory listings per level, a window of in-flight samples, the writer's bounded index runs).
 */
import { withResumeAdvice } from './fs-errors.js';
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { expectLocalPath } from '../io/location.js';
import { isInside, realPathOf } from './paths.js';
import { defaultOutDir } from './output-dir.js';
import type { Layout } from '../../formats/index-layout.js';
import { Codec } from '../../formats/index-entry.js';
import type { Manifest } from '../../formats/manifest.js';
import type { Pass } from '../passes/pass.js';
import { imageConcurrency } from '../passes/image-concurrency.js';
import { DatasetWriter, type WriterStats } from './dataset-writer.js';
import { RunGrouper, walkSamples } from './group-samples.js';
import { batchSamples, sampleError, type SampleInputError } from './source-batches.js';
import { openSourceBatches, type ReaderThreads, type SourceBatches } from './source-threads.js';
import { DEFAULT_READ_THREADS, initialReadThreads, workerAvailable } from './reader-start.js';
import { memberPath, splitKey, type KeyRule } from '../../formats/sample.js';
import { nativeAvailable, useNativeCrc32c } from '../native/native.js';
import { runPipeline, settle, settleEncoded, settleStreamed, validateConcurrency, validateOnError, type PipelineCounters, type PipelineItem } from './sample-pipeline.js';
import { partOfKey, partShardPrefix, type PartSpec } from './partition.js';
import { checkDeclaredOutputs, finishWithPassOutputs, passStatsOf, preparedOption, preparePasses } from './run-passes.js';
import { walkSource, type WalkOptions, type WalkSkipReason, type WalkStats } from './walk.js';
import { writePackReport } from './pack-report.js';
import { validatePackOptions } from './pack-options.js';

export interface PackProgress {
  /** Input samples done (written or skipped) and their source bytes. */
  samples: number;
  bytes: number;
  skipped: number;
  shards: number;
  /** Samples of the whole pack, once the pre-scan counted them (`prescan: true`), for an ETA. */
  totalSamples?: number;
  elapsedMs: number;
}

export interface PackOptions {
  /** Source directory. */
  source: string;
  /** Output directory; default `<source>.shards`. */
  out?: string;
  shardBytes?: number;
  layout?: Layout;
  compress?: 'none' | 'lz4';
  pageSize?: number;
  /**
   * Preprocessing passes, run in this order: Pass objects, as the pass factories, customPass, loadPassModule and
   * parsePassSpec (`parsePassSpec('resize=224x224', { cwd })`, a `--pass` spec) make them.
   */
  passes?: Pass[];
  /** Samples in flight (reading + passes); default: the image concurrency for this machine's cores. */
  concurrency?: number;
  /**
   * Files named `stem.N.ext` (more than MAX_NUMBERED_MEMBERS of one stem) stop the pack by default: WebDataset's key
   * rule folds Kaggle-style names (`dog.0.jpg` ... `dog.249.jpg`) into one sample `dog`. True keeps that grouping,
   * for files that are parts of one sample (the frames of one clip).
   */
  groupNumbered?: boolean;
  /**
   * Where a file's key ends (see KeyRule): 'webdataset' (default, the first dot of its name) or 'path' (the last dot:
   * `dog.0.jpg` -> key `dog.0`, ext `jpg`). Recorded in the manifest's `extra.keyRule` when 'path'.
   */
  keyRule?: KeyRule;
  /** 'fail' (default): the first unreadable file or undecodable image stops the pack. 'skip': leave it out, list it. */
  onError?: 'fail' | 'skip';
  resume?: boolean;
  force?: boolean;
  /** Pack only part I of N (see partition.ts); merge the parts with `merge`. */
  part?: PartSpec;
  followSymlinks?: boolean;
  includeHidden?: boolean;
  include?: string[];
  exclude?: string[];
  /** fsync shards and index before the manifest. */
  sync?: boolean;
  /**
   * Read every source file twice and compare their CRC32C: INPUT_CHANGED when they differ. Without it, a file is
   * refused when its size, mtime or ctime moved while it was read (GNU tar's check): a write through a shared
   * memory map (mmap) can change the bytes without moving any of them, and is then packed torn. With it, such a
   * change is caught when it falls between the two reads; a change after the second read, or one that is undone
   * before it, is not. Costs a second read of every file (from the page cache, for files that fit in memory).
   */
  verifySource?: boolean;
  /**
   * Count the samples for progress totals (`totalSamples`) with a walk of its own that runs alongside the pack
   * (names only, no stat per file), so the pack does not wait for it. Passes with prepare() walk the keys before
   * the pack anyway, and count them on the way.
   */
  prescan?: boolean;
  /**
   * Worker threads that read the source ahead of the writer, taking groups of samples in turn (more keep more reads
   * in flight on a cold or remote disk); 0 reads in the calling thread. By default, where the compiled worker script
   * is present (shardkit running from its build): {@link initialReadThreads} (two on two cores or more), and up
   * to {@link DEFAULT_READ_THREADS} once the reads are seen coming from storage or waiting on it; else 0.
   */
  readThreads?: number;
  onProgress?: (p: PackProgress) => void;
  /** @internal The number in the first shard's name (see DatasetWriterOptions.firstShard); `append` sets it. */
  firstShard?: number;
  /** @internal What the output directory's lock names as its writer (default `pack`). */
  command?: string;
}

export interface PackResult {
  out: string;
  manifest: Manifest;
  seconds: number;
  /** What the walk found and left out. No `bytes`: pack walks names only (sizes come from the reads: sourceBytes). */
  walk: Omit<WalkStats, 'bytes'>;
  writer: WriterStats;
  /**
   * Directories inside the source left out because they hold a shardkit dataset or a write of one (an earlier pack's
   * output), relative to the source, in walk order (see WalkStats.skippedDatasets).
   */
  datasetDirs: string[];
  /** Samples of this pack that a resume found already written. */
  resumedSamples: number;
  /** Bytes read from the source by this run (a resume reads only what was left). */
  sourceBytes: number;
  /** Reader threads the pack ended with (by default 1, or 2 when the reads waited on the disk); 0: none. */
  readThreads: number;
  /**
   * Whether shardkit's native addon was in use: directory listings, CRC32C, and the reads of a pack without passes
   * or LZ4. False: it was not built, or SHARDKIT_NATIVE=0 (the same bytes, slower).
   */
  native: boolean;
  passStats: Record<string, Record<string, number>>;
}

export { defaultOutDir };

/**
 * Packs a directory of files into a dataset (see PackOptions).
 * @throws ShardkitError INVALID_ARG for options of the wrong type or value (naming the option; `passes` must be
 *   Pass objects: a spec string goes through parsePassSpec), before anything is walked or written; INPUT and
 *   others as the pack meets them.
 */
export async function pack(options: PackOptions): Promise<PackResult> {
  const started = performance.now();
  validatePackOptions(options);
  useNativeCrc32c();
  const source = path.resolve(expectLocalPath('the source', options.source));
  if (!fs.existsSync(source) || !fs.statSync(source).isDirectory()) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `source ${options.source} is not a directory`, { file: options.source });
  }
  const out = path.resolve(expectLocalPath('--out', options.out ?? defaultOutDir(source)));
  // compared as real paths: a symlink must not lead the output into the source
  const realSource = realPathOf(source);
  const realOut = realPathOf(out);
  if (realOut === realSource) throw new ShardkitError(ErrorCodes.INVALID_ARG, `--out must not be the source directory ${source}`);
  const passes = options.passes ?? [];
  const onError = validateOnError(options.onError ?? 'fail');
  const concurrency = validateConcurrency(options.concurrency ?? imageConcurrency().jobs * 2);
  const walkOptions = {
    followSymlinks: options.followSymlinks ?? false,
    includeHidden: options.includeHidden ?? false,
    // a name that is not UTF-8, or a file name that gives no key (`.x`, `q.`), can be no key: the first one stops the
    // pack, or with skip it is listed as skipped
    badNames: onError,
    ...(options.include === undefined ? {} : { include: options.include }),
    ...(options.exclude === undefined ? {} : { exclude: options.exclude }),
    ...(options.keyRule === undefined ? {} : { keyRule: options.keyRule }),
    // an output directory inside the source is never packed into itself (its exact path: a glob would match that
    // name anywhere in the tree)
    ...(isInside(realOut, realSource) ? { excludePaths: [path.relative(realSource, realOut).split(path.sep).join('/')] } : {}),
  };
  const readThreads: ReaderThreads = options.readThreads ?? (workerAvailable() ? { auto: true, initial: initialReadThreads(), max: DEFAULT_READ_THREADS } : 0);
  if (typeof readThreads === 'number' && (!Number.isSafeInteger(readThreads) || readThreads < 0 || readThreads > 64)) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected an integer between 0 and 64 for readThreads but received ${readThreads}`);
  }
  checkDeclaredOutputs(passes);
  const inPart = (key: string): boolean => options.part === undefined || partOfKey(key, options.part.count) === options.part.index;

  const groupNumbered = options.groupNumbered ?? false;
  await expectSomeFile(options.source, source, walkOptions, options.command ?? 'pack');
  const prepared = passes.some((p) => p.prepare) ? await prescan(source, { ...walkOptions, groupNumbered }, inPart, passes) : undefined;

  const writer = new DatasetWriter({
    dir: out,
    ...(options.layout === undefined ? {} : { layout: options.layout }),
    ...(options.keyRule === undefined ? {} : { keyRule: options.keyRule }),
    ...(options.compress === undefined ? {} : { compress: options.compress }),
    ...(options.shardBytes === undefined ? {} : { shardBytes: options.shardBytes }),
    ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
    ...(options.part === undefined ? {} : { shardPrefix: partShardPrefix(options.part), part: options.part }),
    passes: passes.map((p) => ({ name: p.name, params: p.params })),
    ...(options.firstShard === undefined ? {} : { firstShard: options.firstShard }),
    ...(options.command === undefined ? {} : { command: options.command }),
    resume: options.resume ?? false,
    // a resume skips as many samples as the interrupted walk had let through: the same filters must choose them
    resumeOptions: {
      include: options.include ?? [],
      exclude: options.exclude ?? [],
      includeHidden: walkOptions.includeHidden,
      followSymlinks: walkOptions.followSymlinks,
      ...(groupNumbered ? { groupNumbered } : {}),
      ...(options.keyRule === 'path' ? { keyRule: 'path' } : {}),
    },
    ...preparedOption(passes),
    force: options.force ?? false,
    sync: options.sync ?? false,
  });
  // a resumed pack counts only what is left
  const left = (samples: number): number => Math.max(0, samples - writer.resumedCursor);
  const progress: PackProgress = { samples: 0, bytes: 0, skipped: 0, shards: 0, elapsedMs: 0, ...(prepared === undefined ? {} : { totalSamples: left(prepared) }) };
  // the count for an ETA runs beside the pack; a walk failure is the pack's own walk's to report
  const counting = { stop: false };
  if (options.prescan && prepared === undefined) {
    void countSamples(source, walkOptions, inPart, counting, groupNumbered).then(
      (n) => {
        if (n !== undefined) progress.totalSamples = left(n);
      },
      () => undefined,
    );
  }
  let lastReport = 0;
  const report = (force = false): void => {
    const now = performance.now();
    if (!options.onProgress || (!force && now - lastReport < 200)) return;
    lastReport = now;
    progress.elapsedMs = now - started;
    progress.shards = writer.stats.shards;
    options.onProgress({ ...progress });
  };

  const resumed = writer.resumedCursor;
  const datasetDirs: string[] = [];
  const batches = openSourceBatches(
    {
      root: source,
      ...walkOptions,
      groupNumbered,
      ...(options.part === undefined ? {} : { part: options.part }),
      skip: resumed,
      ...(options.verifySource === true ? { verifySource: true } : {}),
      // the walk that makes the tasks lists the names it refused (each once: the other walks only count samples)
      onSkip: (relPath: string, reason: WalkSkipReason, error?: ShardkitError) => {
        if (reason === 'dataset') datasetDirs.push(relPath);
        if ((reason !== 'not-utf8' && reason !== 'no-key') || !inPart(splitKey(relPath, options.keyRule).key)) return;
        if (reason === 'not-utf8') writer.refuse(relPath, `${ErrorCodes.INPUT}: the name is not valid UTF-8 (shown with \\xNN for its bad bytes); keys and member names must be UTF-8`);
        else if (error !== undefined) writer.refuse(relPath, `${error.code}: ${error.message}`);
      },
      ...(writer.resumedLast === undefined ? {} : { skipCheck: writer.resumedLast }),
      skipProof: writer.resumedInputs,
      // without passes, the reader thread encodes samples for the writer too
      ...(passes.length === 0 ? { encode: { layout: writer.layout, codec: writer.compress === 'lz4' ? Codec.lz4 : Codec.none, pageSize: writer.pageSize, keyRule: writer.keyRule } } : {}),
    },
    readThreads,
  );
  try {
    const onEach = (c: PipelineCounters): void => {
      progress.samples = c.samples;
      progress.bytes = c.bytes;
      progress.skipped = c.skipped;
      report();
    };
    const counted = passes.length === 0 ? await writeBatches(batches, writer, { root: source, onError, verifySource: options.verifySource === true }, onEach) : await runPipeline(pipelineItems(batches), passes, writer, { concurrency, onError, onEach });
    const manifest = await finishWithPassOutputs(writer, passes);
    report(true);
    const result: PackResult = {
      out,
      manifest,
      seconds: (performance.now() - started) / 1000,
      walk: walkCounts(batches.stats),
      datasetDirs,
      writer: { ...writer.stats },
      resumedSamples: resumed,
      sourceBytes: counted.bytes,
      readThreads: batches.readers,
      native: nativeAvailable(),
      passStats: passStatsOf(passes),
    };
    writePackReport(out, result);
    return result;
  } catch (err) {
    writer.abort(err);
    throw withResumeAdvice(err);
  } finally {
    counting.stop = true;
  }
}

/**
 * Without passes there is nothing to wait for between reading and writing: each batch goes straight to the writer
 * (no promise per sample), and its buffers go back to the reader for the next one. A sample with a file too large
 * to hold is streamed by the writer from its files under `root` (see DatasetWriter.addStreamed).
 */
async function writeBatches(
  batches: SourceBatches,
  writer: DatasetWriter,
  o: { root: string; onError: 'fail' | 'skip'; verifySource: boolean },
  onEach: (c: PipelineCounters) => void,
): Promise<PipelineCounters> {
  const counters: PipelineCounters = { samples: 0, bytes: 0, skipped: 0 };
  const { onError } = o;
  for await (const batch of batches) {
    for (const s of batchSamples(batch, true)) {
      if (s.encoded !== undefined) settleEncoded(s.key, s.exts[0] as string, s.encoded, s.keyBytes, s.sourceBytes, writer, onError, counters);
      else if (s.error?.stream === true) settleStreamed(s.key, s.exts, s.exts.map((ext) => path.join(o.root, memberPath(s.key, ext))), writer, onError, counters, o.verifySource);
      else settle({ name: memberPath(s.key, s.exts[0] as string), bytes: 0, kind: 'failed', error: sampleError(s.error as SampleInputError) }, writer, onError, counters);
      writer.inputDigest.note(s.key, s.exts);
    }
    // the writer may still reference the batch's buffers: let go before they go back to the reader
    writer.release();
    onEach(counters);
    batches.recycle(batch);
  }
  return counters;
}

function walkCounts(stats: WalkStats): Omit<WalkStats, 'bytes'> {
  const { bytes: _unmeasured, ...counts } = stats;
  return counts;
}

/** Pipeline items over the read batches; passes may hold a sample's bytes, so its buffers are not recycled. */
async function* pipelineItems(batches: SourceBatches): AsyncGenerator<PipelineItem> {
  for await (const batch of batches) {
    for (const s of batchSamples(batch, false)) {
      yield {
        name: memberPath(s.key, s.exts[0] as string),
        input: { key: s.key, exts: s.exts },
        load: () => {
          if (s.error !== undefined) throw sampleError(s.error);
          const paths = Object.fromEntries(s.exts.map((ext) => [ext, memberPath(s.key, ext)]));
          return { sample: { key: s.key, members: Object.fromEntries(s.exts.map((ext, i) => [ext, s.parts[i] as Uint8Array])) }, ctx: { paths } };
        },
      };
    }
  }
}

/**
 * Walks the source before packing for passes with prepare(): feeds them the keys straight from the walk, never
 * holding them (each such pass gets a walk of its own), and counts the samples of this part on the first walk.
 * Passes see every key of the whole dataset (all parts), so class lists agree across parts.
 */
async function prescan(source: string, walkOptions: WalkOptions & { groupNumbered: boolean }, inPart: (key: string) => boolean, passes: readonly Pass[]): Promise<number> {
  let samples = 0;
  let first = true;
  async function* keys(count: boolean): AsyncGenerator<string> {
    for await (const s of walkSamples(source, { ...walkOptions, stat: false })) {
      if (count && inPart(s.key)) samples++;
      yield s.key;
    }
  }
  await preparePasses(passes, () => {
    const it = keys(first);
    first = false;
    return it;
  });
  return samples;
}

/**
 * Refuses a source without a file to pack (INPUT), before anything is written: an empty dataset made without a
 * word hides a wrong path or filter. Says what the walk left out and the option that lets it in. Stops at the
 * first file found, so a large tree costs a listing or two. (A part may still come out empty: a file of another part
 * counts here.)
 */
export async function expectSomeFile(shown: string, source: string, walkOptions: WalkOptions, verb = 'pack'): Promise<void> {
  const walk = walkSource(source, { ...walkOptions, badNames: 'skip', stat: false });
  for await (const run of walk.runs()) if (run.names.length > 0) return;
  const s = walk.stats;
  const left = [
    s.skippedHidden > 0 && `${s.skippedHidden} hidden (--include-hidden takes them)`,
    s.skippedExcluded > 0 && `${s.skippedExcluded} left out by --include/--exclude`,
    s.skippedSymlinks > 0 && `${s.skippedSymlinks} symbolic link${s.skippedSymlinks === 1 ? '' : 's'} (--follow-symlinks follows them)`,
    s.skippedDatasets > 0 && `${s.skippedDatasets} shardkit dataset director${s.skippedDatasets === 1 ? 'y' : 'ies'}`,
    s.skippedBadNames > 0 && `${s.skippedBadNames} name${s.skippedBadNames === 1 ? '' : 's'} that give no key`,
    s.skippedOther > 0 && `${s.skippedOther} special file${s.skippedOther === 1 ? '' : 's'}`,
  ].filter((x): x is string => typeof x === 'string');
  const why = left.length === 0 ? `${shown} holds no files` : `the walk left out ${left.join(', ')}`;
  throw new ShardkitError(ErrorCodes.INPUT, `no files to ${verb} under ${shown}: ${why}`, { file: source });
}

/** The samples of this part, by a walk of names only (no stat per file); undefined when told to stop first. */
async function countSamples(source: string, walkOptions: WalkOptions, inPart: (key: string) => boolean, control: { stop: boolean }, groupNumbered: boolean): Promise<number | undefined> {
  let samples = 0;
  const grouper = new RunGrouper({ groupNumbered, ...(walkOptions.keyRule === undefined ? {} : { keyRule: walkOptions.keyRule }) });
  for await (const run of walkSource(source, { ...walkOptions, order: 'sample', stat: false }).runs()) {
    if (control.stop) return undefined;
    for (const key of grouper.group(run).keys) if (inPart(key)) samples++;
  }
  return samples;
}
