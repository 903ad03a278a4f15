/**
 * Builds the batches a reader hands to the writer (see SourceBatch in source-batches.ts): bytes in batch-sized
 * chunks (recycled when the caller offers them), per-sample metadata in one number array, names in one string.
 * A sample's source files are read here with readSourceFileInto, raw or encoded for the writer; read-samples.ts
 * fills the chunks through the native addon instead and records its samples with {@link BatchBuilder.addSample}.
 */
import { ShardkitError, type ErrorCode } from '../../formats/errors.js';
import { Codec, type MemberEntry } from '../../formats/index-entry.js';
import { assertKeyFits } from '../../formats/index-page.js';
import { memberPath, setMember } from '../../formats/sample.js';
import { checkKeyAndExts, encodeSampleTo, type SampleSink } from '../../formats/sample-layout.js';
import { encodeFileHeader, encodeShortFileHeaderInto, TAR_BLOCK, tarPadding } from '../../formats/tar-header.js';
import { isTooLargeToHold, readSourceFileInto } from './read-source.js';
import type { EncodeOptions, SampleInputError, SourceBatch } from './source-batches.js';
import type { WalkEntry } from './walk.js';

/** Bytes a batch holds before it is handed over (one large file may make one batch larger). */
export const BATCH_BYTES = 4 << 20;
/** Samples a batch holds at most (bounds the per-batch metadata of tiny files). */
export const BATCH_SAMPLES = 1024;
/** An empty view (no free room). */
const NOTHING = new Uint8Array(0);

/** One member's place in an encoded sample: see SourceBatch's `meta`. */
export type EncodedMember = Pick<MemberEntry, 'offset' | 'size' | 'storedSize' | 'codec' | 'crc32c'>;

export class BatchBuilder {
  task = 0;
  count = 0;
  private names: string[] = [];
  /** The batch's meta so far: `metaLength` numbers of a Float64Array that grows, handed over as one copy. */
  private meta = new Float64Array(4096);
  private metaLength = 0;
  private errors: SampleInputError[] = [];
  private chunks: ArrayBuffer[] = [];
  /** The chunk being filled and how much of it is used. */
  private chunk: Uint8Array | undefined;
  private used = 0;
  private batchBytes = 0;
  /** The ranges of the sample being read: (chunk index, offset, length) triples. */
  private readonly ranges: number[] = [];
  /** Encoded mode reads a sample's files here first; files of half a batch or more get buffers of their own. */
  private scratch: Uint8Array;
  private scratchUsed = 0;

  constructor(
    private readonly encode: EncodeOptions | undefined,
    private readonly takeChunk: () => ArrayBuffer | undefined,
    private readonly verifySource = false,
  ) {
    this.scratch = new Uint8Array(encode === undefined ? 0 : BATCH_BYTES);
  }

  /** Whether the batch should be handed over before the next sample. */
  get full(): boolean {
    return this.batchBytes >= BATCH_BYTES || this.count >= BATCH_SAMPLES;
  }

  /** The batch so far; the builder starts the next one empty. */
  take(last: boolean): SourceBatch {
    const b: SourceBatch = { task: this.task, last, count: this.count, names: this.names.join('\0'), meta: this.meta.slice(0, this.metaLength), errors: this.errors, chunks: this.chunks };
    this.count = 0;
    this.names = [];
    this.metaLength = 0;
    this.errors = [];
    this.chunks = [];
    this.chunk = undefined;
    this.batchBytes = 0;
    return b;
  }

  /**
   * The free room of the current chunk (a fresh chunk when there is none or `fresh` is set), for bytes written
   * there directly; {@link BatchBuilder.claim} then takes what was used.
   */
  room(fresh: boolean): { chunk: Uint8Array; at: number } {
    if (this.chunk === undefined || fresh) this.newChunk(0);
    return { chunk: this.chunk as Uint8Array, at: this.used };
  }

  /** Takes `bytes` written at the free room's start (see {@link BatchBuilder.room}); returns the chunk's index. */
  claim(bytes: number): number {
    this.used += bytes;
    this.batchBytes += bytes;
    return this.chunks.length - 1;
  }

  /**
   * Records a sample whose bytes are in place. `ranges`: (chunk index, offset, length) triples of its bytes, in
   * order; `encoded`: the span start, encoded bytes and original bytes, and its members, for an encoded sample.
   */
  addSample(key: string, exts: readonly string[], sourceBytes: number, ranges: readonly number[], encoded?: { spanStart: number; bytes: number; originalBytes: number; members: readonly EncodedMember[] }): void {
    this.names.push(key, ...exts);
    let i = this.metaRoom(4 + ranges.length + (encoded === undefined ? 0 : 3 + 5 * encoded.members.length));
    const meta = this.meta;
    meta[i++] = exts.length;
    meta[i++] = sourceBytes;
    meta[i++] = -1;
    meta[i++] = ranges.length / 3;
    for (const r of ranges) meta[i++] = r;
    if (encoded !== undefined) {
      meta[i++] = encoded.spanStart;
      meta[i++] = encoded.bytes;
      meta[i++] = encoded.originalBytes;
      for (const m of encoded.members) i = putMember(meta, i, m.offset, m.size, m.storedSize, m.codec, m.crc32c);
    }
    this.count++;
  }

  /**
   * Records an uncompressed encoded sample whose members readSamples (read-samples.ts) laid out at `pos` in chunk
   * `chunkIndex`, each after its tar header and padded with `tar`, else back to back: the members are
   * `exts[from, from + count)`, member m's size and CRC32C at `results[at + 2m]` and `results[at + 2m + 1]`.
   * Returns the sample's bytes. The same record as {@link BatchBuilder.addSample}'s, with no object per member.
   */
  addLaidOut(key: string, exts: readonly string[], from: number, count: number, chunkIndex: number, pos: number, tar: boolean, results: Float64Array, at: number): number {
    const header = tar ? TAR_BLOCK : 0;
    this.names.push(key);
    for (let m = 0; m < count; m++) this.names.push(exts[from + m] as string);
    const start = this.metaRoom(10 + 5 * count);
    const meta = this.meta;
    // the members first (their offsets give the sample's bytes), then the sample's numbers before them; offsets
    // count from the first member's data (the span start), as encodeSampleTo's
    let bytes = 0;
    let originalBytes = 0;
    for (let m = 0, i = start + 10; m < count; m++) {
      const size = results[at + 2 * m] as number;
      i = putMember(meta, i, bytes, size, size, Codec.none, results[at + 2 * m + 1] as number);
      bytes += header + size + (tar ? tarPadding(size) : 0);
      originalBytes += size;
    }
    meta[start] = count;
    meta[start + 1] = originalBytes;
    meta[start + 2] = -1; // no error
    meta[start + 3] = 1; // one range: (chunk, offset, length)
    meta[start + 4] = chunkIndex;
    meta[start + 5] = pos;
    meta[start + 6] = bytes;
    meta[start + 7] = header; // span start
    meta[start + 8] = bytes;
    meta[start + 9] = originalBytes;
    this.count++;
    return bytes;
  }

  /** Records a sample that could not be read (or cannot be stored), with its error. */
  addFailed(key: string, exts: readonly string[], err: ShardkitError): void {
    this.addError(key, exts, { code: err.code as ErrorCode, message: err.message, ...(err.file === undefined ? {} : { file: err.file }) });
  }

  /**
   * Records a sample with a file too large to read whole, which the writer streams (`stream` on its error: see
   * SampleInputError). `err` is what it is if it cannot be streamed.
   */
  private addToStream(key: string, exts: readonly string[], err: ShardkitError): void {
    this.addError(key, exts, { code: err.code as ErrorCode, message: err.message, ...(err.file === undefined ? {} : { file: err.file }), stream: true });
  }

  private addError(key: string, exts: readonly string[], error: SampleInputError): void {
    this.names.push(key, ...exts);
    const i = this.metaRoom(4);
    this.meta.set([exts.length, 0, this.errors.length, 0], i);
    this.errors.push(error);
    this.count++;
  }

  /**
   * Reads one sample's files (in `exts` order) and records it: raw members or, with `encode`, the encoded sample.
   * Errors are thrown; the caller records the ones that concern the sample with {@link BatchBuilder.addFailed}.
   */
  readSample(key: string, exts: readonly string[], paths: readonly string[]): void {
    const files: WalkEntry[] = exts.map((ext, i) => ({ relPath: memberPath(key, ext), absPath: paths[i] as string, size: -1, mtimeMs: -1 }));
    const ranges = this.ranges;
    ranges.length = 0;
    let sourceBytes = 0;
    const encode = this.encode;
    if (encode === undefined) {
      for (const file of files) {
        readSourceFileInto(
          file,
          (size) => {
            const at = this.reserve(size);
            ranges.push(this.chunks.length - 1, at, size);
            sourceBytes += size;
            return (this.chunk as Uint8Array).subarray(at, at + size);
          },
          () => this.chunk?.subarray(this.used) ?? NOTHING,
          this.verifySource,
        );
      }
      this.addSample(key, exts, sourceBytes, ranges);
      return;
    }
    // a key or name the dataset cannot hold fails before any file is read
    assertKeyFits(key, encode.pageSize);
    checkKeyAndExts(key, exts);
    this.scratchUsed = 0;
    const members: Record<string, Uint8Array> = {};
    try {
      files.forEach((file, i) => {
        const bytes = readSourceFileInto(file, (size) => this.placeInScratch(size), () => this.scratchFree(), this.verifySource);
        sourceBytes += bytes.length;
        setMember(members, exts[i] as string, bytes);
      });
    } catch (err) {
      if (!isTooLargeToHold(err)) throw err;
      // the writer streams this sample's files into the shard itself (DatasetWriter.addStreamed)
      this.addToStream(key, exts, err as ShardkitError);
      return;
    }
    const encoded = encodeSampleTo({ key, members }, encode.layout, encode.codec, this.sink, encode.keyRule);
    this.addSample(
      key,
      encoded.members.map((m) => m.ext),
      sourceBytes,
      ranges,
      encoded,
    );
  }

  /** Room for `n` more numbers in the meta (which may move: read `this.meta` after); returns where they go. */
  private metaRoom(n: number): number {
    if (this.metaLength + n > this.meta.length) {
      const grown = new Float64Array(Math.max(2 * this.meta.length, this.metaLength + n));
      grown.set(this.meta.subarray(0, this.metaLength));
      this.meta = grown;
    }
    const at = this.metaLength;
    this.metaLength += n;
    return at;
  }

  /** A buffer of its own for `size` bytes of half a batch or more; else a batch-sized chunk, recycled when one is offered. */
  private newChunk(size: number): void {
    const buffer = size >= BATCH_BYTES / 2 ? new ArrayBuffer(size) : (this.takeChunk() ?? new ArrayBuffer(BATCH_BYTES));
    this.chunks.push(buffer);
    this.chunk = new Uint8Array(buffer);
    this.used = 0;
  }

  /** Room for `size` bytes in the current chunk (a new one when they do not fit); returns their offset. */
  private reserve(size: number): number {
    // a file of half a batch or more gets a buffer of its own; smaller ones share batch-sized chunks
    if (this.chunk === undefined || this.used + size > this.chunk.length) this.newChunk(size);
    const at = this.used;
    this.used += size;
    this.batchBytes += size;
    return at;
  }

  /** Appends `bytes` to the ranges (copied, or its own buffer handed over as a chunk), extending the last range when adjacent. */
  private append(bytes: Uint8Array, owned: boolean): void {
    if (owned && bytes.length >= BATCH_BYTES / 2 && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) {
      this.chunks.push(bytes.buffer);
      this.ranges.push(this.chunks.length - 1, 0, bytes.length);
      this.batchBytes += bytes.length;
      this.chunk = undefined;
      return;
    }
    const at = this.reserve(bytes.length);
    (this.chunk as Uint8Array).set(bytes, at);
    this.extendRanges(at, bytes.length);
  }

  /** Adds `length` bytes at `at` in the current chunk to the ranges, extending the last range when adjacent. */
  private extendRanges(at: number, length: number): void {
    const ranges = this.ranges;
    const n = ranges.length;
    if (n > 0 && ranges[n - 3] === this.chunks.length - 1 && (ranges[n - 2] as number) + (ranges[n - 1] as number) === at) ranges[n - 1] = (ranges[n - 1] as number) + length;
    else ranges.push(this.chunks.length - 1, at, length);
  }

  private placeInScratch(size: number): Uint8Array {
    if (size >= BATCH_BYTES / 2) return new Uint8Array(size);
    if (this.scratchUsed + size > this.scratch.length) {
      this.scratch = new Uint8Array(Math.max(BATCH_BYTES, 2 * (this.scratchUsed + size)));
      this.scratchUsed = 0;
    }
    this.scratchUsed += size;
    return this.scratch.subarray(this.scratchUsed - size, this.scratchUsed);
  }

  /** Where placeInScratch puts a file that fits (files of half a batch or more go elsewhere). */
  private scratchFree(): Uint8Array {
    return this.scratch.subarray(this.scratchUsed, Math.min(this.scratch.length, this.scratchUsed + BATCH_BYTES / 2 - 1));
  }

  /** Encodes straight into the batch: headers written in place, data copied (or handed over when it has a buffer of its own). */
  private readonly sink: SampleSink = {
    header: (path, size) => {
      const at = this.reserve(TAR_BLOCK);
      if (encodeShortFileHeaderInto(this.chunk as Uint8Array, at, path, size)) {
        this.extendRanges(at, TAR_BLOCK);
        return TAR_BLOCK;
      }
      this.used -= TAR_BLOCK;
      this.batchBytes -= TAR_BLOCK;
      const long = encodeFileHeader(path, size);
      this.append(long, false);
      return long.length;
    },
    // data read into a buffer of its own travels as its own chunk; everything else is copied
    data: (bytes) => this.append(bytes, bytes.buffer !== this.scratch.buffer),
    padding: (n) => {
      const at = this.reserve(n);
      (this.chunk as Uint8Array).fill(0, at, at + n);
      this.extendRanges(at, n);
    },
  };
}

/** Writes one member's meta numbers (see SourceBatch's `meta`) at `i`; returns the index after them. */
function putMember(meta: Float64Array, i: number, offset: number, size: number, storedSize: number, codec: number, crc32c: number): number {
  meta[i] = offset;
  meta[i + 1] = size;
  meta[i + 2] = storedSize;
  meta[i + 3] = codec;
  meta[i + 4] = crc32c;
  return i + 5;
}
