/**
 * A reader thread's fast path for packs without compression: the native addon's readSamples reads a task's files
 * and writes them as shard bytes (tar headers and padding, or packed) straight into the batch's chunk, with each
 * member's CRC32C, in one call per chunk instead of several calls and a few objects per file. What it cannot do
 * (a sample larger than a chunk, a name that needs a pax header) goes through BatchBuilder.readSample, and a file
 * it cannot read fails its sample exactly as there. The bytes are the same either way (tests compare them).
 */
import type { ShardkitError } from '../../formats/errors.js';
import { Codec } from '../../formats/index-entry.js';
import { assertKeyFits } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { memberPath } from '../../formats/sample.js';
import { checkKeyAndExts } from '../../formats/sample-layout.js';
import { fileHeaderTemplate, TAR_BLOCK, tarPadding } from '../../formats/tar-header.js';
import { nativeAddon, READ_SAMPLES_SYSCALLS, ReadSamplesIo as IO, ReadSamplesStatus as STATUS, type NativeAddon } from '../native/native.js';
import type { BatchBuilder, EncodedMember } from './batch-builder.js';
import type { ReadTimes } from './reader-protocol.js';
import { nativeReadError } from './read-source.js';
import type { EncodeOptions, SampleFiles, SourceBatch } from './source-batches.js';

type ReadSamples = NativeAddon['readSamples'];

/** The addon's readSamples when it can encode for `encode` (no compression), else undefined. */
export function nativeSampleReader(encode: EncodeOptions | undefined): ReadSamples | undefined {
  if (encode === undefined || encode.codec !== Codec.none) return undefined;
  return nativeAddon()?.readSamples;
}

/** One sample of a task, its members in stored order (by extension), and why it cannot be stored, if so. */
interface TaskSample extends SampleFiles {
  error?: ShardkitError;
}

/** The task's samples, each checked (key and names) before anything is read, as BatchBuilder.readSample does. */
function checkedSamples(files: readonly SampleFiles[], encode: EncodeOptions, isSampleError: (err: unknown) => boolean): TaskSample[] {
  const samples: TaskSample[] = [];
  for (const f of files) {
    const sample: TaskSample = { ...f };
    if (f.exts.length > 1) {
      const order = f.exts.map((_, i) => i).sort((a, b) => compareKeys(f.exts[a] as string, f.exts[b] as string));
      sample.exts = order.map((i) => f.exts[i] as string);
      sample.paths = order.map((i) => f.paths[i] as string);
    }
    const { key, exts } = sample;
    try {
      assertKeyFits(key, encode.pageSize);
      checkKeyAndExts(key, exts);
    } catch (err) {
      if (!isSampleError(err)) throw err;
      sample.error = err as ShardkitError;
    }
    samples.push(sample);
  }
  return samples;
}

let template: Uint8Array | undefined;

/** Wall and thread CPU milliseconds this thread spent in readSamples since the last {@link takeReadTimes}. */
const reading: ReadTimes = { wallMs: 0, cpuMs: 0 };

/**
 * The time this thread spent reading source files through readSamples since the last call, and resets it; cpuMs
 * is -1 when it is not measured (no per-thread clock, or these reads do not go through readSamples: `encode`).
 */
export function takeReadTimes(encode: EncodeOptions | undefined): ReadTimes {
  const clock = nativeAddon()?.threadCpuMs;
  const measured = nativeSampleReader(encode) !== undefined && clock !== undefined && clock() >= 0;
  const times = { wallMs: reading.wallMs, cpuMs: measured ? reading.cpuMs : -1 };
  reading.wallMs = 0;
  reading.cpuMs = 0;
  return times;
}

/**
 * Reads a task's samples into `builder` through `readSamples`, yielding full batches on the way (the caller takes the last
 * one). `isSampleError` tells the errors that fail one sample (recorded on it) from those that stop the pack.
 */
export function* readTaskNative(files: readonly SampleFiles[], encode: EncodeOptions, builder: BatchBuilder, readSamples: ReadSamples, isSampleError: (err: unknown) => boolean): Generator<SourceBatch> {
  const samples = checkedSamples(files, encode, isSampleError);
  const readable = samples.filter((s) => s.error === undefined);
  const tar = encode.layout === 'tar';
  const header = tar ? TAR_BLOCK : 0;
  const paths: string[] = [];
  const names: string[] = [];
  const counts = new Uint32Array(readable.length);
  readable.forEach((s, i) => {
    counts[i] = s.exts.length;
    for (let m = 0; m < s.exts.length; m++) {
      paths.push(s.paths[m] as string);
      names.push(memberPath(s.key, s.exts[m] as string));
    }
  });
  const pathBytes = Buffer.from(`${paths.join('\0')}\0`);
  const nameBytes = Buffer.from(`${names.join('\0')}\0`);
  const io = new Float64Array(IO.RESULTS + 2 * paths.length);
  template ??= tar ? fileHeaderTemplate() : undefined;

  // samples are recorded in task order: the ones that failed their checks between the ones read
  let recorded = 0;
  let file = 0;
  const recordFailedBefore = (sample: TaskSample | undefined): void => {
    for (let s = samples[recorded]; s !== undefined && s !== sample; s = samples[++recorded]) builder.addFailed(s.key, s.exts, s.error as ShardkitError);
  };
  /** Records readable samples [from, to) that readSamples laid out from `pos` in chunk `chunkIndex`. */
  const recordRead = (from: number, to: number, chunkIndex: number, pos: number): void => {
    for (let r = from; r < to; r++) {
      const s = readable[r] as TaskSample;
      recordFailedBefore(s);
      recorded++;
      const members: EncodedMember[] = [];
      let bytes = 0;
      let originalBytes = 0;
      for (let m = 0; m < s.exts.length; m++, file++) {
        const size = io[IO.RESULTS + 2 * file] as number;
        // offsets count from the first member's data (the span start), as encodeSampleTo's
        members.push({ offset: bytes, size, storedSize: size, codec: Codec.none, crc32c: io[IO.RESULTS + 2 * file + 1] as number });
        bytes += header + size + (tar ? tarPadding(size) : 0);
        originalBytes += size;
      }
      builder.addSample(s.key, s.exts, originalBytes, [chunkIndex, pos, bytes], { spanStart: header, bytes, originalBytes, members });
      pos += bytes;
    }
  };
  /** The sample readSamples stopped at, done another way: read by BatchBuilder, or failed with `err`. */
  const recordStopped = (s: TaskSample, err?: ShardkitError): void => {
    recordFailedBefore(s);
    recorded++;
    file += s.exts.length;
    if (err === undefined) {
      try {
        builder.readSample(s.key, s.exts, s.paths);
        return;
      } catch (e) {
        if (!isSampleError(e)) throw e;
        err = e as ShardkitError;
      }
    }
    builder.addFailed(s.key, s.exts, err);
  };

  const clock = nativeAddon()?.threadCpuMs;
  let fresh = false;
  while ((io[IO.SAMPLE] as number) < readable.length) {
    const { chunk, at } = builder.room(fresh);
    fresh = false;
    // a sample to skip was recorded already
    const from = (io[IO.SAMPLE] as number) + (io[IO.SKIP] as number);
    io[IO.POS] = at;
    io[IO.END] = chunk.length;
    const wall0 = performance.now();
    const cpu0 = clock?.() ?? 0;
    readSamples(pathBytes, nameBytes, counts, tar ? (template as Uint8Array) : null, chunk, io);
    reading.wallMs += performance.now() - wall0;
    reading.cpuMs += (clock?.() ?? 0) - cpu0;
    recordRead(from, io[IO.SAMPLE] as number, builder.claim((io[IO.POS] as number) - at), at);
    const status = io[IO.STATUS] as number;
    if (status === STATUS.DONE) break;
    const stopped = readable[io[IO.SAMPLE] as number] as TaskSample;
    if (status === STATUS.ROOM && (io[IO.POS] as number) > 0) {
      // the chunk is full: the next one (and the next batch, when this one is full)
      if (builder.full) yield builder.take(false);
      fresh = true;
      continue;
    }
    if (status === STATUS.ROOM || status === STATUS.NAME) recordStopped(stopped);
    else recordStopped(stopped, nativeReadError(stopped.paths[io[IO.MEMBER] as number] as string, status, io[IO.ERRNO] as number, READ_SAMPLES_SYSCALLS[io[IO.SYSCALL] as number] ?? 'read'));
    io[IO.SKIP] = 1;
    if (builder.full) yield builder.take(false);
  }
  recordFailedBefore(undefined);
}
