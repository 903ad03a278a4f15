/**
 * The source side of a pack, as data and work: tasks of consecutive samples (cut by source-tasks.ts), the reading
 * and encoding of tasks into compact batches (readTasks), and their decoding on the writer's side (batchSamples).
 * source-threads.ts runs the reads in threads; with no threads, the same code runs in the calling thread. Reader
 * threads load this module, not the walk's.
 */
import type { InputRange } from './input-proof.js';
import { sep } from 'node:path';
import { ErrorCodes, ShardkitError, isShardkitError, type ErrorCode } from '../../formats/errors.js';
import type { CodecId, MemberEntry } from '../../formats/index-entry.js';
import type { Layout } from '../../formats/index-layout.js';
import type { KeyRule } from '../../formats/sample.js';
import type { EncodedSample } from '../../formats/sample-layout.js';
import { memberPath } from '../../formats/sample.js';
import { BatchBuilder } from './batch-builder.js';
import type { PartSpec } from './partition.js';
import type { WalkOptions } from './walk.js';
import { nativeSampleReader, readTaskNative } from './read-samples.js';

/**
 * The walk's filters, as WalkOptions has them: sourceTasks hands them on whole, so a filter added there reaches the
 * walk that makes the tasks (the output's own excludePaths once did not).
 */
export type SourceWalkFilters = Required<Pick<WalkOptions, 'followSymlinks' | 'includeHidden'>> & Pick<WalkOptions, 'include' | 'exclude' | 'excludePaths' | 'badNames' | 'onSkip' | 'keyRule'>;

export interface SourceBatchOptions extends SourceWalkFilters {
  /** Absolute source directory. */
  root: string;
  /** Keep files named `stem.N.ext` as members of sample `stem` (see MAX_NUMBERED_MEMBERS) instead of stopping. */
  groupNumbered?: boolean;
  /** Only the samples of this part. */
  part?: PartSpec;
  /** Samples (of this part) to pass over without reading: written already by the run a `--resume` continues. */
  skip: number;
  /** The last of those written and its position: the walk must still find that key there (else INPUT_CHANGED). */
  skipCheck?: { key: string; at: number };
  /** What the interrupted pack recorded of the samples it wrote: each is checked as the walk passes it over. */
  skipProof?: InputRange[];
  /**
   * Encode each sample for the writer too (tar headers, LZ4, member CRCs; see encodeSample), so that work runs on
   * the reader's thread. Without it, batches carry the members' raw bytes (for passes).
   */
  encode?: { layout: Layout; codec: CodecId; pageSize: number; keyRule?: KeyRule };
  /** Read each source file twice and compare checksums (see readSourceFileInto): slower, for sources being written. */
  verifySource?: boolean;
}

/**
 * Samples per task: the walk cuts the samples (after the part and skip filters) into tasks of this many, and
 * reader thread i of n reads the tasks t with t mod n = i.
 */
export const TASK_SAMPLES = 256;

/**
 * One task: consecutive samples of the walk, read by one reader. Compact for the trip between threads: per sample
 * its key and member count, per member its extension, the strings joined by NUL (which no key or extension holds):
 * two strings to copy between threads instead of arrays cloned string by string. A member's file is
 * `root/key.ext` (`root/key` without extension), as the walk found it.
 */
export interface SourceTask {
  task: number;
  /** The source directory, normalised as the walk has it. */
  root: string;
  keys: string;
  counts: number[];
  exts: string;
}

/** One sample of a task: its key, and per member its extension and absolute path, in walk order. */
export interface SampleFiles {
  key: string;
  exts: string[];
  paths: string[];
}

/** A task's samples, one by one. */
export function samplesOfTask(t: SourceTask): SampleFiles[] {
  const samples: SampleFiles[] = [];
  const keys = t.keys.split('\0');
  const exts = t.exts.split('\0');
  const prefix = t.root.endsWith(sep) ? t.root : `${t.root}${sep}`;
  let member = 0;
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k] as string;
    const count = t.counts[k] as number;
    const mine = exts.slice(member, member + count);
    samples.push({ key, exts: mine, paths: mine.map((ext) => `${prefix}${memberPath(key, ext)}`) });
    member += count;
  }
  return samples;
}

/** How readers encode (see {@link SourceBatchOptions.encode}). */
export type EncodeOptions = NonNullable<SourceBatchOptions['encode']>;

/** The failure of one sample's input (unreadable, vanished, changed): the pack skips it or stops, as told. */
export interface SampleInputError {
  code: ErrorCode;
  message: string;
  file?: string;
  /**
   * A file of the sample is too large to read whole (TOO_LARGE): the writer streams the sample's files into the
   * shard instead (see DatasetWriter.addStreamed). Only when encoding.
   */
  stream?: true;
}

/**
 * One batch, compact so that handing it between threads costs a few copies, not an object per sample: strings in
 * `names` (per sample its key, then its member extensions, all joined by NUL, which no key or extension holds: one
 * string to copy instead of hundreds), numbers in `meta`, bytes in `chunks`.
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
  names: string;
  meta: Float64Array;
  errors: SampleInputError[];
  chunks: ArrayBuffer[];
}

/**
 * One sample of a batch, decoded. Every field is present (undefined when it does not apply), so that every sample
 * has one shape: the writer sees one object layout, and the object is allocated whole (no property store added).
 */
export interface BatchSample {
  key: string;
  exts: string[];
  /** Bytes of the sample's source files. */
  sourceBytes: number;
  error: SampleInputError | undefined;
  /** Views into the batch's chunks: the member bytes in ext order, or (with `encode`) the encoded sample's bytes. */
  parts: Uint8Array[];
  /** With `encode` (and no error): the encoded sample, its bytes in `parts`. */
  encoded: EncodedSample | undefined;
  /** With `encode`, when the batch's names are ASCII: the key's UTF-8 (a view of one encoding of all the names). */
  keyBytes: Uint8Array | undefined;
}

/** `text` as bytes when it is ASCII (one byte per character, so string offsets are byte offsets), else undefined. */
function asciiBytes(text: string): Uint8Array | undefined {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length === text.length ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length) : undefined;
}

/**
 * The samples of a batch, in order. The main thread of a pack runs this for every sample: arrays are made at
 * their final length (an array grown by push from empty reserves 17 slots, and most samples have one member and
 * one range). With the writer's path (settleEncoded), that cut what a pack's main thread allocates for 100k files
 * from 199 to 165 MB (V8's sampling heap profiler, collected objects included).
 */
export function* batchSamples(batch: SourceBatch, encoded: boolean): Generator<BatchSample> {
  const { meta, chunks } = batch;
  const names = batch.names.split('\0');
  // the index needs each key's UTF-8: one encoding of the batch's names instead of one per key
  const nameBytes = encoded ? asciiBytes(batch.names) : undefined;
  let at = 0; // where names[n] starts in batch.names
  let m = 0;
  let n = 0;
  for (let i = 0; i < batch.count; i++) {
    const keyAt = at;
    const key = names[n++] as string;
    const memberCount = meta[m++] as number;
    const exts = new Array<string>(memberCount);
    at += key.length + 1;
    for (let e = 0; e < memberCount; e++) {
      const ext = names[n + e] as string;
      exts[e] = ext;
      at += ext.length + 1;
    }
    n += memberCount;
    const sourceBytes = meta[m++] as number;
    const errorIndex = meta[m++] as number;
    const rangeCount = meta[m++] as number;
    const parts = new Array<Uint8Array>(rangeCount);
    for (let r = 0; r < rangeCount; r++, m += 3) parts[r] = new Uint8Array(chunks[meta[m] as number] as ArrayBuffer, meta[m + 1], meta[m + 2]);
    let sampleEncoded: EncodedSample | undefined;
    let keyBytes: Uint8Array | undefined;
    if (errorIndex < 0 && encoded) {
      const spanStart = meta[m++] as number;
      const bytes = meta[m++] as number;
      const originalBytes = meta[m++] as number;
      const members = new Array<MemberEntry>(memberCount);
      for (let e = 0; e < memberCount; e++, m += 5) {
        members[e] = { ext: exts[e] as string, offset: meta[m] as number, size: meta[m + 1] as number, storedSize: meta[m + 2] as number, codec: meta[m + 3] as CodecId, crc32c: meta[m + 4] as number };
      }
      sampleEncoded = { spanStart, bytes, originalBytes, members, parts };
      if (nameBytes !== undefined) keyBytes = nameBytes.subarray(keyAt, keyAt + key.length);
    }
    yield { key, exts, sourceBytes, error: errorIndex >= 0 ? batch.errors[errorIndex] : undefined, parts, encoded: sampleEncoded, keyBytes };
  }
}

/** The error recorded for a sample, as the ShardkitError it was. */
export function sampleError(e: SampleInputError): ShardkitError {
  return new ShardkitError(e.code, e.message, e.file === undefined ? {} : { file: e.file });
}

/**
 * Reads the samples of tasks into batches (raw members, or encoded with `encode`). `takeChunk` offers a recycled
 * buffer. Input errors of one sample are recorded on it; anything else ends the iteration with an error.
 */
export async function* readTasks(tasks: AsyncIterable<SourceTask>, encode: EncodeOptions | undefined, takeChunk: () => ArrayBuffer | undefined = () => undefined, verifySource = false): AsyncGenerator<SourceBatch> {
  const builder = new BatchBuilder(encode, takeChunk, verifySource);
  // the native reader reads each file once: a second read to compare is this thread's
  const reader = verifySource ? undefined : nativeSampleReader(encode);
  for await (const t of tasks) {
    builder.task = t.task;
    if (reader !== undefined) yield* readTaskNative(t, encode as EncodeOptions, builder, reader, isSampleError);
    else {
      for (const s of samplesOfTask(t)) {
        try {
          builder.readSample(s.key, s.exts, s.paths);
        } catch (err) {
          if (!isSampleError(err)) throw err;
          builder.addFailed(s.key, s.exts, err);
        }
        if (builder.full) yield builder.take(false);
      }
    }
    yield builder.take(true);
  }
}

function isSampleError(err: unknown): err is ShardkitError {
  return isShardkitError(err) && SAMPLE_ERRORS.has(err.code);
}

/**
 * Errors that concern one sample, which `--on-error skip` leaves out: its input (unreadable, vanished, changed),
 * and, when encoding, a key or name the dataset cannot hold.
 */
const SAMPLE_ERRORS = new Set<ErrorCode>([ErrorCodes.INPUT, ErrorCodes.INPUT_CHANGED, ErrorCodes.TOO_LARGE, ErrorCodes.UNSAFE_PATH]);
