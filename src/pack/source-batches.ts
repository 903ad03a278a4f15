/**
 * The source side of a pack, as data and work: the walk cut into tasks of consecutive samples (sourceTasks), the
 * reading and encoding of tasks into compact batches (readTasks), and their decoding on the writer's side
 * (batchSamples). source-threads.ts runs the walk and the reads in threads; with no threads, the same code runs in
 * the calling thread.
 */
import { ErrorCodes, ShardkitError, isShardkitError, type ErrorCode } from '../../formats/errors.js';
import { walkSamples } from './group-samples.js';
import { partOfKey, type PartSpec } from './partition.js';
import { readSourceFileInto } from './read-source.js';
import type { WalkEntry, WalkStats } from './walk.js';
import { memberPath, setMember } from '../../formats/sample.js';
import type { CodecId, MemberEntry } from '../../formats/index-entry.js';
import type { Layout } from '../../formats/index-layout.js';
import { encodeSampleTo, type EncodedSample, type SampleSink } from '../../formats/sample-layout.js';
import { encodeFileHeader, encodeShortFileHeaderInto, TAR_BLOCK } from '../../formats/tar-header.js';
import { assertKeyFits } from '../../formats/index-page.js';

/** Bytes a batch holds before it is handed over (one large file may make one batch larger). */
export const BATCH_BYTES = 4 << 20;
/** Samples a batch holds at most (bounds the per-batch metadata of tiny files). */
export const BATCH_SAMPLES = 1024;
/** An empty view (no free room). */
const NOTHING = new Uint8Array(0);

export interface SourceBatchOptions {
  /** Absolute source directory. */
  root: string;
  followSymlinks: boolean;
  includeHidden: boolean;
  include?: string[];
  exclude?: string[];
  /** Only the samples of this part. */
  part?: PartSpec;
  /** Samples (of this part) to pass over without reading: written already by the run a `--resume` continues. */
  skip: number;
  /**
   * Encode each sample for the writer too (tar headers, LZ4, member CRCs; see encodeSample), so that work runs on
   * the reader's thread. Without it, batches carry the members' raw bytes (for passes).
   */
  encode?: { layout: Layout; codec: CodecId; pageSize: number };
}

/**
 * Samples per task: the walk cuts the samples (after the part and skip filters) into tasks of this many, and
 * reader thread i of n reads the tasks t with t mod n = i.
 */
export const TASK_SAMPLES = 256;

/**
 * One task: consecutive samples of the walk, read by one reader. Compact for the trip between threads: per sample
 * its key and member count, per member its extension and absolute path.
 */
export interface SourceTask {
  task: number;
  keys: string[];
  counts: number[];
  exts: string[];
  paths: string[];
}

/** How readers encode (see {@link SourceBatchOptions.encode}). */
export type EncodeOptions = NonNullable<SourceBatchOptions['encode']>;

/** The failure of one sample's input (unreadable, vanished, changed): the pack skips it or stops, as told. */
export interface SampleInputError {
  code: ErrorCode;
  message: string;
  file?: string;
}

/**
 * One batch, compact so that handing it between threads costs a few copies, not an object per sample: strings in
 * `names` (per sample its key, then its member extensions), numbers in `meta`, bytes in `chunks`.
 *
 * `meta` per sample: members, source bytes, error index (-1: none), range count, then (chunk index, offset, length)
 * per range; with `encode`, then span start, encoded bytes, original bytes and, per member, (offset, size, stored
 * size, codec, CRC32C). Ranges are the member bytes in ext order or, with `encode`, the encoded sample's bytes.
 */
export interface SourceBatch {
  /** The task these samples belong to; `last` marks its final batch (a task may span several). */
  task: number;
  last: boolean;
  count: number;
  names: string[];
  meta: Float64Array;
  errors: SampleInputError[];
  chunks: ArrayBuffer[];
}

/** One sample of a batch, decoded. */
export interface BatchSample {
  key: string;
  exts: string[];
  /** Bytes of the sample's source files. */
  sourceBytes: number;
  error?: SampleInputError;
  /** Views into the batch's chunks: the member bytes in ext order, or (with `encode`) the encoded sample's bytes. */
  parts: Uint8Array[];
  /** With `encode` (and no error): the encoded sample, its bytes in `parts`. */
  encoded?: EncodedSample;
}

/** The samples of a batch, in order. */
export function* batchSamples(batch: SourceBatch, encoded: boolean): Generator<BatchSample> {
  const { meta, names, chunks } = batch;
  let m = 0;
  let n = 0;
  for (let i = 0; i < batch.count; i++) {
    const key = names[n++] as string;
    const memberCount = meta[m++] as number;
    const exts = names.slice(n, n + memberCount);
    n += memberCount;
    const sourceBytes = meta[m++] as number;
    const errorIndex = meta[m++] as number;
    const rangeCount = meta[m++] as number;
    const parts: Uint8Array[] = [];
    for (let r = 0; r < rangeCount; r++, m += 3) parts.push(new Uint8Array(chunks[meta[m] as number] as ArrayBuffer, meta[m + 1], meta[m + 2]));
    const sample: BatchSample = { key, exts, sourceBytes, parts };
    if (errorIndex >= 0) sample.error = batch.errors[errorIndex] as SampleInputError;
    else if (encoded) {
      const spanStart = meta[m++] as number;
      const bytes = meta[m++] as number;
      const originalBytes = meta[m++] as number;
      const members: MemberEntry[] = [];
      for (const ext of exts) {
        members.push({ ext, offset: meta[m] as number, size: meta[m + 1] as number, storedSize: meta[m + 2] as number, codec: meta[m + 3] as CodecId, crc32c: meta[m + 4] as number });
        m += 5;
      }
      sample.encoded = { spanStart, bytes, originalBytes, members, parts };
    }
    yield sample;
  }
}

/** The error recorded for a sample, as the ShardkitError it was. */
export function sampleError(e: SampleInputError): ShardkitError {
  return new ShardkitError(e.code, e.message, e.file === undefined ? {} : { file: e.file });
}

/** Walks the source, keeps the samples of the part past `skip`, and cuts them into tasks. */
export async function* sourceTasks(options: SourceBatchOptions, stats: (s: WalkStats) => void): AsyncGenerator<SourceTask> {
  const walk = walkSamples(options.root, {
    followSymlinks: options.followSymlinks,
    includeHidden: options.includeHidden,
    ...(options.include === undefined ? {} : { include: options.include }),
    ...(options.exclude === undefined ? {} : { exclude: options.exclude }),
    // sizes come from the fstat at read time: no lstat per file in the walk
    stat: false,
  });
  let seen = 0;
  const empty = (task: number): SourceTask => ({ task, keys: [], counts: [], exts: [], paths: [] });
  let task = empty(0);
  for await (const samples of walk.chunks()) {
    for (const s of samples) {
      if (options.part !== undefined && partOfKey(s.key, options.part.count) !== options.part.index) continue;
      if (seen++ < options.skip) continue;
      task.keys.push(s.key);
      task.counts.push(s.files.length);
      for (let i = 0; i < s.files.length; i++) {
        task.exts.push(s.exts[i] as string);
        task.paths.push((s.files[i] as WalkEntry).absPath);
      }
      if (task.keys.length === TASK_SAMPLES) {
        yield task;
        task = empty(task.task + 1);
      }
    }
  }
  if (task.keys.length > 0) yield task;
  stats({ ...walk.stats });
}

/**
 * Reads the samples of tasks into batches (raw members, or encoded with `encode`). `takeChunk` offers a recycled
 * buffer. Input errors of one sample are recorded on it; anything else ends the iteration with an error.
 */
export async function* readTasks(tasks: AsyncIterable<SourceTask>, encode: EncodeOptions | undefined, takeChunk: () => ArrayBuffer | undefined = () => undefined): AsyncGenerator<SourceBatch> {
  let count = 0;
  let names: string[] = [];
  let meta: number[] = [];
  let errors: SampleInputError[] = [];
  let chunks: ArrayBuffer[] = [];
  let chunk: Uint8Array | undefined;
  let used = 0;
  let batchBytes = 0;
  /** Room for `size` bytes in the current chunk (a new one when they do not fit); returns their offset. */
  const reserve = (size: number): number => {
    if (chunk === undefined || used + size > chunk.length) {
      // a file of half a batch or more gets a buffer of its own; smaller ones share batch-sized chunks
      const buffer = size >= BATCH_BYTES / 2 ? new ArrayBuffer(size) : (takeChunk() ?? new ArrayBuffer(BATCH_BYTES));
      chunks.push(buffer);
      chunk = new Uint8Array(buffer);
      used = 0;
    }
    const at = used;
    used += size;
    batchBytes += size;
    return at;
  };
  /** Appends `bytes` to the ranges (copied, or its own buffer handed over as a chunk), extending the last range when adjacent. */
  const append = (ranges: number[], bytes: Uint8Array, owned: boolean): void => {
    if (owned && bytes.length >= BATCH_BYTES / 2 && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) {
      chunks.push(bytes.buffer);
      ranges.push(chunks.length - 1, 0, bytes.length);
      batchBytes += bytes.length;
      chunk = undefined;
      return;
    }
    const at = reserve(bytes.length);
    (chunk as Uint8Array).set(bytes, at);
    extendRanges(ranges, at, bytes.length);
  };
  /** Adds `length` bytes at `at` in the current chunk to the ranges, extending the last range when adjacent. */
  const extendRanges = (ranges: number[], at: number, length: number): void => {
    const n = ranges.length;
    if (n > 0 && ranges[n - 3] === chunks.length - 1 && (ranges[n - 2] as number) + (ranges[n - 1] as number) === at) ranges[n - 1] = (ranges[n - 1] as number) + length;
    else ranges.push(chunks.length - 1, at, length);
  };
  // encode mode reads a sample's files here first; files of half a batch or more get buffers of their own
  let scratch = new Uint8Array(encode === undefined ? 0 : BATCH_BYTES);
  let scratchUsed = 0;
  const placeInScratch = (size: number): Uint8Array => {
    if (size >= BATCH_BYTES / 2) return new Uint8Array(size);
    if (scratchUsed + size > scratch.length) {
      scratch = new Uint8Array(Math.max(BATCH_BYTES, 2 * (scratchUsed + size)));
      scratchUsed = 0;
    }
    scratchUsed += size;
    return scratch.subarray(scratchUsed - size, scratchUsed);
  };
  /** Where placeInScratch puts a file that fits (files of half a batch or more go elsewhere). */
  const scratchFree = (): Uint8Array => scratch.subarray(scratchUsed, Math.min(scratch.length, scratchUsed + BATCH_BYTES / 2 - 1));
  const ranges: number[] = [];
  /** Encodes straight into the batch: headers written in place, data copied (or handed over when it has a buffer of its own). */
  const sink: SampleSink = {
    header(path, size) {
      const at = reserve(TAR_BLOCK);
      if (encodeShortFileHeaderInto(chunk as Uint8Array, at, path, size)) {
        extendRanges(ranges, at, TAR_BLOCK);
        return TAR_BLOCK;
      }
      used -= TAR_BLOCK;
      batchBytes -= TAR_BLOCK;
      const long = encodeFileHeader(path, size);
      append(ranges, long, false);
      return long.length;
    },
    // data read into a buffer of its own travels as its own chunk; everything else is copied
    data: (bytes) => append(ranges, bytes, bytes.buffer !== scratch.buffer),
    padding(n) {
      const at = reserve(n);
      (chunk as Uint8Array).fill(0, at, at + n);
      extendRanges(ranges, at, n);
    },
  };
  let task = 0;
  const take = (last: boolean): SourceBatch => {
    const b: SourceBatch = { task, last, count, names, meta: Float64Array.from(meta), errors, chunks };
    count = 0;
    names = [];
    meta = [];
    errors = [];
    chunks = [];
    chunk = undefined;
    batchBytes = 0;
    return b;
  };
  for await (const t of tasks) {
    task = t.task;
    let member = 0;
    for (let k = 0; k < t.keys.length; k++) {
      const key = t.keys[k] as string;
      const exts = t.exts.slice(member, member + (t.counts[k] as number));
      const files: WalkEntry[] = exts.map((ext, i) => ({ relPath: memberPath(key, ext), absPath: t.paths[member + i] as string, size: -1, mtimeMs: -1 }));
      member += exts.length;
      let sourceBytes = 0;
      let tail: number[] = [];
      let error = -1;
      ranges.length = 0;
      try {
        if (encode === undefined) {
          for (const file of files) {
            readSourceFileInto(
              file,
              (size) => {
                const at = reserve(size);
                ranges.push(chunks.length - 1, at, size);
                sourceBytes += size;
                return (chunk as Uint8Array).subarray(at, at + size);
              },
              () => chunk?.subarray(used) ?? NOTHING,
            );
          }
        } else {
          scratchUsed = 0;
          const members: Record<string, Uint8Array> = {};
          files.forEach((file, i) => {
            const bytes = readSourceFileInto(file, placeInScratch, scratchFree);
            sourceBytes += bytes.length;
            setMember(members, exts[i] as string, bytes);
          });
          assertKeyFits(key, encode.pageSize);
          const encoded = encodeSampleTo({ key, members }, encode.layout, encode.codec, sink);
          tail = [encoded.spanStart, encoded.bytes, encoded.originalBytes];
          for (const mem of encoded.members) tail.push(mem.offset, mem.size, mem.storedSize, mem.codec, mem.crc32c);
        }
      } catch (err) {
        if (!isShardkitError(err) || !SAMPLE_ERRORS.has(err.code)) throw err;
        ranges.length = 0;
        tail = [];
        error = errors.length;
        errors.push({ code: err.code, message: err.message, ...(err.file === undefined ? {} : { file: err.file }) });
      }
      names.push(key);
      for (const ext of exts) names.push(ext);
      meta.push(exts.length, sourceBytes, error, ranges.length / 3);
      for (const x of ranges) meta.push(x);
      for (const x of tail) meta.push(x);
      count++;
      if (batchBytes >= BATCH_BYTES || count >= BATCH_SAMPLES) yield take(false);
    }
    yield take(true);
  }
}

/**
 * Errors that concern one sample, which `--on-error skip` leaves out: its input (unreadable, vanished, changed),
 * and, when encoding, a key or name the dataset cannot hold.
 */
const SAMPLE_ERRORS = new Set<ErrorCode>([ErrorCodes.INPUT, ErrorCodes.INPUT_CHANGED, ErrorCodes.TOO_LARGE, ErrorCodes.UNSAFE_PATH]);
