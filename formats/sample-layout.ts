/**
 * How one sample's members become shard bytes in each layout, and the index entry that locates them.
 * Pure: the writer appends `parts` at some shard offset and adds that offset to `spanStart`.
 */
import { crc32c } from './checksum.js';
import { ErrorCodes, ShardkitError } from './errors.js';
import { Codec, type CodecId, type MemberEntry } from './index-entry.js';
import type { Layout } from './index-layout.js';
import { compareKeys } from './key-order.js';
import { lz4CompressMember } from './lz4.js';
import { memberPath, type KeyRule, type Sample } from './sample.js';
import { encodeFileHeader, TAR_BLOCK, tarPadding } from './tar-header.js';

export const LZ4_NAME_SUFFIX = '.lz4';
/** Shared, never written to: tar padding. */
const ZERO_BLOCK = new Uint8Array(TAR_BLOCK);
/** A UTF-16 surrogate without its pair: a string that has one is not valid Unicode (no UTF-8 form). */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** An empty, `.` or `..` path segment. */
const BAD_SEGMENT = /(?:^|\/)\.{0,2}(?:\/|$)/;

export interface EncodedSample {
  /** Bytes to append to the shard, in order. */
  parts: Uint8Array[];
  bytes: number;
  /** Offset of the span (first member's stored bytes) from the start of `parts`. */
  spanStart: number;
  members: MemberEntry[];
  /** Original bytes over all members. */
  originalBytes: number;
}

/** A value for an error message: a string quoted, an object by its kind (`[object Array]`), at most 40 characters. */
function describeValue(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value);
  else if ((typeof value === 'object' && value !== null) || typeof value === 'function') text = Object.prototype.toString.call(value);
  else text = String(value);
  return `${text.length > 40 ? `${text.slice(0, 40)}...` : text} of type ${typeof value}`;
}

/** A Uint8Array (a Buffer is one), also one made in another realm (a worker, a vm context). */
function isUint8Array(value: unknown): value is Uint8Array {
  // instanceof first: toString's tag lookup took a tenth of a pack of tiny samples; it stays for other realms
  return value instanceof Uint8Array || (ArrayBuffer.isView(value) && Object.prototype.toString.call(value) === '[object Uint8Array]');
}

/**
 * Checks what a caller hands a writer before anything is written: an object with a string `key` and a plain object
 * of `members` whose values are all Uint8Arrays; then the names (see {@link checkSampleNames}).
 * @throws ShardkitError INVALID_ARG naming the key and the member; UNSAFE_PATH for a name that cannot be stored.
 */
export function checkSample(sample: unknown): asserts sample is Sample {
  const bad = (message: string, key?: string): never => {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, message, key === undefined ? {} : { key });
  };
  if (typeof sample !== 'object' || sample === null || Array.isArray(sample)) bad(`Expected an object { key, members } for sample but received ${describeValue(sample)}`);
  const { key, members } = sample as { key?: unknown; members?: unknown };
  if (typeof key !== 'string') return bad(`Expected a string for sample key but received ${describeValue(key)}`);
  if (typeof members !== 'object' || members === null || Object.prototype.toString.call(members) !== '[object Object]') {
    bad(`Expected an object of Uint8Array members for sample ${JSON.stringify(key)} but received ${describeValue(members)}`, key);
  }
  for (const [ext, data] of Object.entries(members as object)) {
    if (!isUint8Array(data)) bad(`Expected a Uint8Array for member ${JSON.stringify(ext)} of sample ${JSON.stringify(key)} but received ${describeValue(data)}`, key);
  }
  checkSampleNames(sample as Sample);
}

/**
 * Checks that a key can name files safely: relative, `/`-separated, no empty, `.` or `..` segments, no NUL or
 * backslash; and that extensions contain no `/`, NUL or backslash.
 */
export function checkSampleNames(sample: Sample): void {
  checkKeyAndExts(sample.key, Object.keys(sample.members));
}

/**
 * {@link checkKeyAndExts} for names already stored in a dataset: an extension may hold a backslash, as writers
 * before issue 26 stored them. Where `/` is the only separator it is a character of one file name, and extract
 * writes it so (SPEC "Samples, keys, members").
 */
export function checkStoredKeyAndExts(key: string, exts: readonly string[]): void {
  checkKeyAndExts(key, exts, true);
}

/** {@link checkSampleNames} for a key and its member extensions (`extBackslash`: see {@link checkStoredKeyAndExts}). */
export function checkKeyAndExts(key: string, exts: readonly string[], extBackslash = false): void {
  const bad = (why: string): never => {
    throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `sample key ${JSON.stringify(key)} ${why}`, { key });
  };
  if (key.length === 0) bad('is empty');
  if (key.includes('\0') || key.includes('\\')) bad('contains NUL or a backslash');
  if (LONE_SURROGATE.test(key)) bad('is not valid Unicode (lone surrogate)');
  if (BAD_SEGMENT.test(key)) bad('has an empty, "." or ".." path segment');
  if (exts.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample ${JSON.stringify(key)} has no members`, { key });
  for (const ext of exts) {
    // a backslash too, as in keys: extract refuses such a path (a separator elsewhere), and refused the whole dataset
    if (ext.includes('/') || ext.includes('\0') || (!extBackslash && ext.includes('\\'))) bad(`has a member extension ${JSON.stringify(ext)} with "/", a backslash or NUL`);
    // UTF-8 cannot hold it: it would be stored as U+FFFD and read back as another name
    if (LONE_SURROGATE.test(ext)) bad(`has a member extension ${JSON.stringify(ext)} that is not valid Unicode (lone surrogate)`);
  }
}

/**
 * Checks that a key round-trips through tar member names: the tar layout names a member `key.ext` (`key` when the
 * extension is empty), and WebDataset, `shardkit reindex` and `index` split a name at the first dot of its basename.
 * A key with a dot in its last segment would come back as another key (`m.` with `x` is `m..x`: key `m`, ext `.x`;
 * key `a.b` with `c` and key `a` with `b.c` are both `a.b.c`). Under the path key rule (`rule` 'path', see KeyRule)
 * names split at their last dot instead: keys may hold dots, extensions may not (`exts`: the sample's members).
 * The packed layout stores no names and takes any key.
 * @throws ShardkitError INVALID_ARG saying why.
 */
export function checkTarKey(key: string, rule: KeyRule = 'webdataset', exts: readonly string[] = []): void {
  if (rule === 'path') {
    // names split back at their last dot: an extension must hold no dot, and a key with a dot in its last segment
    // needs one (`dog.0` alone would read back as key `dog`, ext `0`)
    const dotted = exts.find((ext) => ext.includes('.'));
    if (dotted !== undefined) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample ${JSON.stringify(key)} has a member extension ${JSON.stringify(dotted)} with a "."; with key rule path a name splits at its last dot, so it would read back as another key`, { key });
    }
    if (key.indexOf('.', key.lastIndexOf('/') + 1) >= 0 && exts.includes('')) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample key ${JSON.stringify(key)} has a "." after its last "/" and a member without an extension, named ${JSON.stringify(key)}: it would read back as another key`, { key });
    }
    return;
  }
  if (key.indexOf('.', key.lastIndexOf('/') + 1) < 0) return;
  throw new ShardkitError(
    ErrorCodes.INVALID_ARG,
    `sample key ${JSON.stringify(key)} has a "." after its last "/": the tar layout names members key.ext and WebDataset keys end at the first dot of the basename, so it would read back as another key; use a key without one there, or the packed layout`,
    { key },
  );
}

/** Members in stored order: by extension, byte-wise (so tar members follow sorted paths). */
export function orderedMembers(sample: Sample): [string, Uint8Array][] {
  const entries = Object.entries(sample.members);
  return entries.length < 2 ? entries : entries.sort((a, b) => compareKeys(a[0], b[0]));
}

/** Receives an encoded sample's bytes in order (see {@link encodeSampleTo}). */
export interface SampleSink {
  /** A member's tar header; returns its length in bytes (512, more with a pax header). */
  header(path: string, size: number): number;
  /** Stored bytes of a member. */
  data(bytes: Uint8Array): void;
  /** `n` zero bytes of tar padding. */
  padding(n: number): void;
}

/** Collects the parts in an array: headers freshly encoded, data as given, padding as views of one zero block. */
function partsSink(parts: Uint8Array[]): SampleSink {
  return {
    header(path, size) {
      const h = encodeFileHeader(path, size);
      parts.push(h);
      return h.length;
    },
    data: (bytes) => parts.push(bytes),
    padding: (n) => parts.push(ZERO_BLOCK.subarray(0, n)),
  };
}

/**
 * The bytes of one sample in a layout, and its index entry: see {@link encodeSampleTo}. The sample is checked
 * whole first ({@link checkSample}), so a bad one throws before any byte is made.
 */
export function encodeSample(sample: Sample, layout: Layout, codec: CodecId, rule: KeyRule = 'webdataset'): EncodedSample {
  checkSample(sample);
  const parts: Uint8Array[] = [];
  return { ...encodeSampleTo(sample, layout, codec, partsSink(parts), rule), parts };
}

/**
 * Encodes one sample into `sink`: per member in stored order, a tar header (tar layout), the stored bytes (LZ4
 * where it pays), and tar padding. Returns everything of {@link EncodedSample} but the bytes.
 * @throws ShardkitError UNSAFE_PATH for names that cannot be stored (see {@link checkSampleNames}); INVALID_ARG, in
 *   the tar layout, for a key with a dot in its last segment (see {@link checkTarKey}).
 */
export function encodeSampleTo(sample: Sample, layout: Layout, codec: CodecId, sink: SampleSink, rule: KeyRule = 'webdataset'): Omit<EncodedSample, 'parts'> {
  checkSampleNames(sample);
  if (layout === 'tar') checkTarKey(sample.key, rule, Object.keys(sample.members));
  const members: MemberEntry[] = [];
  let pos = 0;
  let spanStart = -1;
  let originalBytes = 0;
  for (const [ext, data] of orderedMembers(sample)) {
    // LZ4 only where it pays: an incompressible member (JPEG, PNG) is stored as is, under its own name. But in a
    // tar, a member whose name already ends in .lz4 is framed again, whatever it costs: then every tar member named
    // *.lz4 is a frame this writer made, and reindex reads the names back without guessing (src/adopt/tar-samples.ts).
    const name = layout === 'tar' ? memberPath(sample.key, ext) : '';
    const compressed = codec === Codec.lz4 ? lz4CompressMember(data) : undefined;
    const memberCodec: CodecId = compressed !== undefined && (compressed.length < data.length || name.endsWith(LZ4_NAME_SUFFIX)) ? Codec.lz4 : Codec.none;
    const stored = memberCodec === Codec.lz4 ? (compressed as Uint8Array) : data;
    if (layout === 'tar') pos += sink.header(name + (memberCodec === Codec.lz4 ? LZ4_NAME_SUFFIX : ''), stored.length);
    if (spanStart < 0) spanStart = pos;
    members.push({ ext, offset: pos - spanStart, size: data.length, storedSize: stored.length, codec: memberCodec, crc32c: crc32c(data) });
    sink.data(stored);
    pos += stored.length;
    originalBytes += data.length;
    if (layout === 'tar') {
      const pad = tarPadding(stored.length);
      if (pad > 0) {
        sink.padding(pad);
        pos += pad;
      }
    }
  }
  return { bytes: pos, spanStart, members, originalBytes };
}
