/**
 * A reader thread's fast path for packs without compression: the native addon's readSamples reads a task's files
 * and writes them as shard bytes (tar headers and padding, or packed) straight into the batch's chunk, with each
 * member's CRC32C, in one call per chunk instead of several calls and a few objects per file. What it cannot do
 * (a sample larger than a chunk, a name that needs a pax header) goes through BatchBuilder.readSample, and a file
 * it cannot read fails its sample exactly as there. The bytes are the same either way (tests compare them).
 */
import { sep } from 'node:path';
import type { ShardkitError } from '../../formats/errors.js';
import { Codec } from '../../formats/index-entry.js';
import { assertKeyFits, maxKeyBytes } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { memberPath } from '../../formats/sample.js';
import { checkKeyAndExts, LONE_SURROGATE } from '../../formats/sample-layout.js';
import { fileHeaderTemplate } from '../../formats/tar-header.js';
import { nativeAddon, READ_SAMPLES_SYSCALLS, ReadSamplesIo as IO, ReadSamplesStatus as STATUS, type NativeAddon } from '../native/native.js';
import type { BatchBuilder } from './batch-builder.js';
import type { ReadTimes } from './reader-protocol.js';
import { nativeReadError } from './read-source.js';
import type { EncodeOptions, SourceBatch, SourceTask } from './source-batches.js';

/** The addon's functions a reader thread reads with: readSamples, and the thread's CPU clock that times it. */
export type NativeSampleReader = Pick<NativeAddon, 'readSamples' | 'threadCpuMs'>;

/** The addon's sample reader when it can encode for `encode` (no compression), else undefined. */
export function nativeSampleReader(encode: EncodeOptions | undefined): NativeSampleReader | undefined {
  if (encode === undefined || encode.codec !== Codec.none) return undefined;
  return nativeAddon();
}

/** An empty key, or an empty, `.` or `..` segment of one, in the task's NUL-joined keys. */
const BAD_SEGMENT = /(?:^|[/\0])\.{0,2}(?:[/\0]|$)/;

/**
 * Whether every sample of the task passes assertKeyFits and checkKeyAndExts, tested on the task's joined strings in
 * a few calls instead of several per sample. False only means "check each sample" (which then finds the errors).
 */
function taskNamesFit(task: SourceTask, keys: readonly string[], pageSize: number): boolean {
  if (task.keys.includes('\\') || task.exts.includes('/') || task.exts.includes('\\') || LONE_SURROGATE.test(task.keys) || BAD_SEGMENT.test(task.keys)) return false;
  if (task.counts.includes(0)) return false;
  // a UTF-16 code unit is at most 3 UTF-8 bytes
  const max = maxKeyBytes(pageSize);
  for (const key of keys) if (key.length * 3 > max && Buffer.byteLength(key, 'utf8') > max) return false;
  return true;
}

/** Sorts each sample's extensions into stored order (byte-wise), in place; the walk gives them so already. */
function sortMembers(exts: string[], first: Uint32Array): void {
  for (let s = 0; s + 1 < first.length; s++) {
    const from = first[s] as number;
    const to = first[s + 1] as number;
    for (let m = from + 1; m < to; m++) {
      if (compareKeys(exts[m - 1] as string, exts[m] as string) > 0) {
        const sorted = exts.slice(from, to).sort(compareKeys);
        exts.splice(from, to - from, ...sorted);
        break;
      }
    }
  }
}

let template: Uint8Array | undefined;

/** Wall and thread CPU milliseconds this thread spent in readSamples since the last {@link takeReadTimes}. */
const reading: ReadTimes = { wallMs: 0, cpuMs: 0 };

/** Whether {@link takeReadTimes} measures this thread's reads for `encode`: they go through readSamples, timed by a per-thread clock. */
export function readTimesMeasured(encode: EncodeOptions | undefined): boolean {
  const reader = nativeSampleReader(encode);
  return reader !== undefined && reader.threadCpuMs() >= 0;
}

/**
 * The time this thread spent reading source files through readSamples since the last call, and resets it; cpuMs
 * is -1 when it is not `measured` ({@link readTimesMeasured}).
 */
export function takeReadTimes(measured: boolean): ReadTimes {
  const times = { wallMs: reading.wallMs, cpuMs: measured ? reading.cpuMs : -1 };
  reading.wallMs = 0;
  reading.cpuMs = 0;
  return times;
}

/** The walk's root as readSamples takes it: UTF-8, ending in a separator. */
function rootPrefix(root: string): string {
  return root.endsWith(sep) ? root : `${root}${sep}`;
}

/**
 * Reads a task's samples into `builder` through `readSamples`, yielding full batches on the way (the caller takes
 * the last one). Works on the task's strings, with no object per sample except for the few readSamples stops at.
 * `isSampleError` tells the errors that fail one sample (recorded on it) from those that stop the pack.
 */
export function* readTaskNative(task: SourceTask, encode: EncodeOptions, builder: BatchBuilder, reader: NativeSampleReader, isSampleError: (err: unknown) => boolean): Generator<SourceBatch> {
  const keys = task.keys.split('\0');
  const exts = task.exts.split('\0');
  const n = keys.length;
  const first = new Uint32Array(n + 1);
  for (let s = 0; s < n; s++) first[s + 1] = (first[s] as number) + (task.counts[s] as number);
  sortMembers(exts, first);
  const membersOf = (s: number): string[] => exts.slice(first[s], first[s + 1]);
  const prefix = rootPrefix(task.root);
  /** The file of member `ext` of the sample with `key`, as the walk found it. */
  const pathOf = (key: string, ext: string): string => `${prefix}${memberPath(key, ext)}`;

  // a key or name the dataset cannot hold fails its sample before anything is read, as in BatchBuilder.readSample
  const failed = new Map<number, ShardkitError>();
  if (!taskNamesFit(task, keys, encode.pageSize)) {
    for (let s = 0; s < n; s++) {
      try {
        assertKeyFits(keys[s] as string, encode.pageSize);
        checkKeyAndExts(keys[s] as string, membersOf(s));
      } catch (err) {
        if (!isSampleError(err)) throw err;
        failed.set(s, err as ShardkitError);
      }
    }
  }
  const readable: number[] = [];
  const names: string[] = [];
  for (let s = 0; s < n; s++) {
    if (failed.has(s)) continue;
    readable.push(s);
    for (let m = first[s] as number; m < (first[s + 1] as number); m++) names.push(memberPath(keys[s] as string, exts[m] as string));
  }
  const counts = new Uint32Array(readable.length);
  readable.forEach((s, i) => (counts[i] = task.counts[s] as number));
  const rootBytes = Buffer.from(prefix);
  const nameBytes = Buffer.from(`${names.join('\0')}\0`);
  const io = new Float64Array(IO.RESULTS + 2 * names.length);
  const tar = encode.layout === 'tar';
  template ??= tar ? fileHeaderTemplate() : undefined;

  // samples are recorded in task order: the ones that failed their checks between the ones read
  let recorded = 0;
  let file = 0;
  const recordFailedBefore = (sample: number): void => {
    for (; recorded < sample; recorded++) builder.addFailed(keys[recorded] as string, membersOf(recorded), failed.get(recorded) as ShardkitError);
  };
  /** Records readable samples [from, to) that readSamples laid out from `pos` in chunk `chunkIndex`. */
  const recordRead = (from: number, to: number, chunkIndex: number, pos: number): void => {
    for (let r = from; r < to; r++) {
      const s = readable[r] as number;
      recordFailedBefore(s);
      recorded++;
      const count = task.counts[s] as number;
      pos += builder.addLaidOut(keys[s] as string, exts, first[s] as number, count, chunkIndex, pos, tar, io, IO.RESULTS + 2 * file);
      file += count;
    }
  };
  /** The sample readSamples stopped at, done another way: read by BatchBuilder, or failed with `err`. */
  const recordStopped = (s: number, err?: ShardkitError): void => {
    recordFailedBefore(s);
    recorded++;
    file += task.counts[s] as number;
    const key = keys[s] as string;
    const mine = membersOf(s);
    if (err === undefined) {
      try {
        builder.readSample(key, mine, mine.map((ext) => pathOf(key, ext)));
        return;
      } catch (e) {
        if (!isSampleError(e)) throw e;
        err = e as ShardkitError;
      }
    }
    builder.addFailed(key, mine, err);
  };

  let fresh = false;
  while ((io[IO.SAMPLE] as number) < readable.length) {
    const { chunk, at } = builder.room(fresh);
    fresh = false;
    // a sample to skip was recorded already
    const from = (io[IO.SAMPLE] as number) + (io[IO.SKIP] as number);
    io[IO.POS] = at;
    io[IO.END] = chunk.length;
    const wall0 = performance.now();
    const cpu0 = reader.threadCpuMs();
    reader.readSamples(rootBytes, nameBytes, counts, tar ? (template as Uint8Array) : null, chunk, io);
    reading.wallMs += performance.now() - wall0;
    reading.cpuMs += reader.threadCpuMs() - cpu0;
    recordRead(from, io[IO.SAMPLE] as number, builder.claim((io[IO.POS] as number) - at), at);
    const status = io[IO.STATUS] as number;
    if (status === STATUS.DONE) break;
    const stopped = readable[io[IO.SAMPLE] as number] as number;
    if (status === STATUS.ROOM && (io[IO.POS] as number) > 0) {
      // the chunk is full: the next one (and the next batch, when this one is full)
      if (builder.full) yield builder.take(false);
      fresh = true;
      continue;
    }
    if (status === STATUS.ROOM || status === STATUS.NAME) recordStopped(stopped);
    else {
      const path = pathOf(keys[stopped] as string, exts[(first[stopped] as number) + (io[IO.MEMBER] as number)] as string);
      recordStopped(stopped, nativeReadError(path, status, io[IO.ERRNO] as number, READ_SAMPLES_SYSCALLS[io[IO.SYSCALL] as number] ?? 'read'));
    }
    io[IO.SKIP] = 1;
    if (builder.full) yield builder.take(false);
  }
  recordFailedBefore(n);
}
