/**
 * B+-tree pages: a 16-byte header, then records packed from byte 16, zero-filled to the page size.
 * Layouts are in formats/SPEC.md ("Pages"); the constants here follow its tables.
 */
import { ByteReader, type ByteWriter, unzigzag, utf8Decoder } from './bytes.js';
import { crc32c } from './checksum.js';
import { ErrorCodes, ShardkitError } from './errors.js';
import { compareKeys, isSimpleKey } from './key-order.js';
import { Codec, type CodecId, type IndexEntry, type MemberEntry } from './index-entry.js';
import { indexRemedy, type Layout } from './index-layout.js';
import {
  MEMBER_CODEC_MASK,
  MEMBER_COLUMNS,
  MEMBER_EXT_SAME,
  MEMBER_KNOWN_FLAGS,
  MIN_MEMBER_BYTES,
  MemberColumn,
  RECORD_COLUMNS,
  RECORD_CONTIGUOUS,
  RECORD_KNOWN_FLAGS,
  RECORD_SAME_SHAPE,
  RECORD_SAME_SHARD,
  RecordColumn,
} from './leaf-format.js';
import { decodeLeafColumns, type LeafStop } from './leaf-decode.js';

export const PAGE_HEADER_BYTES = 16;
export const PAGE_TYPE = 0; //   u8   PageType
export const PAGE_FLAGS = 1; //  u8   zero
export const PAGE_COUNT = 2; //  u16  records in the page
export const PAGE_CRC = 4; //    u32  CRC32C of bytes [0, 4) then [8, pageSize): everything but itself
export const PAGE_NO = 8; //     u32  the page's own number: a page read from the wrong place fails
export const PAGE_LINK = 12; //  u32  leaf: next leaf (0 = last); branch: level (1 = children are leaves)

export const PageType = { branch: 1, leaf: 2 } as const;

import { memberGap } from './leaf-record-encoder.js';

export type { LeafStop } from './leaf-decode.js';
export { LeafRecordEncoder, memberGap, sameMemberShape } from './leaf-record-encoder.js';
export {
  MEMBER_CODEC_MASK,
  MEMBER_COLUMNS,
  MEMBER_EXT_SAME,
  MemberColumn,
  RECORD_COLUMNS,
  RECORD_CONTIGUOUS,
  RECORD_SAME_SHAPE,
  RECORD_SAME_SHARD,
  RecordColumn,
} from './leaf-format.js';

/** Bytes of a branch record beyond its key: varint key length (<= 3), u32 child, varint count (<= 8). */
const BRANCH_RECORD_OVERHEAD = 3 + 4 + 8;

/** The longest key (UTF-8 bytes) a page size allows: two branch records must fit a page. */
export function maxKeyBytes(pageSize: number): number {
  return Math.floor((pageSize - PAGE_HEADER_BYTES) / 2) - BRANCH_RECORD_OVERHEAD;
}

/** Refuses a key longer than index pages of `pageSize` bytes can hold (TOO_LARGE, naming the key). */
export function assertKeyFits(key: string, pageSize: number): void {
  const keyBytes = Buffer.byteLength(key, 'utf8');
  const max = maxKeyBytes(pageSize);
  if (keyBytes > max) {
    throw new ShardkitError(ErrorCodes.TOO_LARGE, `sample key ${JSON.stringify(key.slice(0, 80))} is ${keyBytes} bytes; ${pageSize}-byte index pages allow ${max} (use a larger page size)`, { key });
  }
}

export interface LeafPage {
  type: 'leaf';
  pageNo: number;
  next: number;
  /** Every key is {@link isSimpleKey}: lookups may compare with native `<`. */
  simple: boolean;
  keys: string[];
  /**
   * The records as IndexEntry objects, made from the columns on first use and kept with the page (verify's index
   * checks, builders): the read paths use the columns, and scans, `locate` and damage reports make the one record
   * they need with {@link entryAt}, so a leaf in the reader's page cache never holds them. A leaf decoded for tiny
   * samples with short keys takes ~140 bytes a record without them, ~300 more with them.
   */
  readonly entries: IndexEntry[];
  /**
   * The entries again as numbers, for the read path: reading a sample of one uncompressed member (most samples)
   * touches one row of `rows`, others one of `rows` and theirs in `memberRows`, instead of its entry, member array
   * and member objects, which lie apart on the heap (cache misses on random access). Per record,
   * {@link RECORD_COLUMNS} numbers ({@link RecordColumn}); per member of a record that is not lone,
   * {@link MEMBER_COLUMNS} ({@link MemberColumn}: a lone member is in its record's row); extensions as indices into `exts`.
   */
  rows: Float64Array;
  memberRows: Float64Array;
  exts: string[];
  /** A hash table of `keys` for exact lookups, built by a reader on its first key lookup in this leaf (undefined until then). */
  keyTable: Int32Array | undefined;
}

export interface BranchPage {
  type: 'branch';
  pageNo: number;
  level: number;
  /** Every key is {@link isSimpleKey}. */
  simple: boolean;
  /** First key of each child's subtree. */
  keys: string[];
  children: Uint32Array;
  /** starts[i] = samples in children before i; starts[length] = samples under this page. */
  starts: Float64Array;
}

export type Page = LeafPage | BranchPage;

function corrupt(file: string, pageNo: number, why: string, layout: Layout | undefined): never {
  throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${file}: page ${pageNo} ${why}; ${indexRemedy(layout)}`, { file });
}

/** CRC32C of every byte of the page except the checksum field itself. */
export function pageChecksum(page: Uint8Array): number {
  return crc32c(page.subarray(PAGE_NO), crc32c(page.subarray(0, PAGE_CRC)));
}

/** Writes the page header and checksum into a full page buffer whose records are already in place. */
export function sealPage(page: Uint8Array, type: number, count: number, pageNo: number, link: number): void {
  const v = new DataView(page.buffer, page.byteOffset, page.byteLength);
  v.setUint8(PAGE_TYPE, type);
  v.setUint8(PAGE_FLAGS, 0);
  v.setUint16(PAGE_COUNT, count, true);
  v.setUint32(PAGE_NO, pageNo, true);
  v.setUint32(PAGE_LINK, link, true);
  v.setUint32(PAGE_CRC, pageChecksum(page), true);
}

export function encodeBranchRecord(key: Uint8Array, child: number, count: number, w: ByteWriter): Uint8Array {
  w.reset();
  w.varint(key.length).bytes(key).u32(child).varint(count);
  return w.view_();
}

/**
 * Checks a page's checksum, number and type, then decodes its records. `keepEntries`: a leaf keeps the IndexEntry
 * objects its decoding made, for callers about to walk them all (scans, verify); else it makes them again if asked.
 * `layout` (the index header's) chooses what an error tells the user to do.
 */
export function decodePage(page: Uint8Array, expectedPageNo: number, file: string, keepEntries = false, layout?: Layout): Page {
  const h = checkPageHeader(page, expectedPageNo, file, layout);
  if (h.type === PageType.leaf) return decodeLeaf(h.r, h.pageNo, h.link, h.count, keepEntries);
  if (h.type === PageType.branch) return decodeBranch(h.r, h.pageNo, h.link, h.count);
  return corrupt(file, h.pageNo, `has unknown type ${h.type}`, layout);
}

/** One record of a leaf that a lookup decoded up to (see {@link decodePageTo}). */
export interface LeafRecord {
  /** A leaf of that record alone: keys[0], its row and member rows (firstMember 0), the page's number and link. */
  leaf: LeafPage;
  /** The record's index in its page. */
  index: number;
  /** Records the page holds (its header's count). */
  count: number;
}

/**
 * {@link decodePage} for one lookup (decode-to-slot): the same checks of the page (checksum, number, type, count), and
 * of every record up to the one `stop` names, in the same order with the same messages; the records after it are
 * not read. A lookup in a leaf nobody decoded took the whole leaf's decoding (~0.1-0.4 ms for ~150-450 records):
 * this stops half way on average, and allocates one record. Returns the whole page when it decoded it all (a
 * branch, or a leaf whose last record is the one asked for), else the {@link LeafRecord}.
 */
export function decodePageTo(page: Uint8Array, expectedPageNo: number, file: string, stop: LeafStop, layout?: Layout): Page | LeafRecord {
  const h = checkPageHeader(page, expectedPageNo, file, layout);
  if (h.type === PageType.branch) return decodeBranch(h.r, h.pageNo, h.link, h.count);
  if (h.type !== PageType.leaf) return corrupt(file, h.pageNo, `has unknown type ${h.type}`, layout);
  if (h.link !== 0 && h.link <= h.pageNo) h.r.fail(`links to earlier page ${h.link}`);
  const { keys, decoded, simple, rows, memberRows, exts } = decodeLeafColumns(h.r, h.count, stop);
  if (decoded === h.count) return new DecodedLeaf(h.pageNo, h.link, simple, keys, rows, memberRows, exts, undefined);
  const index = decoded - 1;
  const row = rows.slice(index * RECORD_COLUMNS, (index + 1) * RECORD_COLUMNS);
  const first = row[RecordColumn.firstMember] as number;
  const members = memberRows.slice(first * MEMBER_COLUMNS, (first + (row[RecordColumn.memberCount] as number)) * MEMBER_COLUMNS);
  row[RecordColumn.firstMember] = 0;
  const key = keys[0] as string;
  return { leaf: new DecodedLeaf(h.pageNo, h.link, isSimpleKey(key), [key], row, members, exts, undefined), index, count: h.count };
}

/** A page's header, checked (size, checksum, number, a record at least), and a reader at its first record. */
function checkPageHeader(page: Uint8Array, expectedPageNo: number, file: string, layout: Layout | undefined): { r: ByteReader; pageNo: number; type: number; count: number; link: number } {
  if (page.length < PAGE_HEADER_BYTES) corrupt(file, expectedPageNo, 'is truncated', layout);
  const v = new DataView(page.buffer, page.byteOffset, page.byteLength);
  if (pageChecksum(page) !== v.getUint32(PAGE_CRC, true)) corrupt(file, expectedPageNo, 'fails its checksum', layout);
  const pageNo = v.getUint32(PAGE_NO, true);
  if (pageNo !== expectedPageNo) corrupt(file, expectedPageNo, `says it is page ${pageNo}`, layout);
  const type = v.getUint8(PAGE_TYPE);
  const count = v.getUint16(PAGE_COUNT, true);
  const link = v.getUint32(PAGE_LINK, true);
  const r = new ByteReader(page, ErrorCodes.CORRUPT_INDEX, `${file}: page ${pageNo}`, PAGE_HEADER_BYTES);
  if (count === 0) corrupt(file, pageNo, 'has no records', layout);
  return { r, pageNo, type, count, link };
}

function decodeLeaf(r: ByteReader, pageNo: number, next: number, count: number, keepEntries: boolean): LeafPage {
  if (next !== 0 && next <= pageNo) r.fail(`links to earlier page ${next}`);
  const { keys, simple, rows, memberRows, exts } = decodeLeafColumns(r, count);
  const leaf = new DecodedLeaf(pageNo, next, simple, keys, rows, memberRows, exts, undefined);
  if (keepEntries) void leaf.entries; // made now, for the caller about to walk them
  return leaf;
}

/** A leaf as decodePage returns it: entry objects made on first use (at once with keepEntries). */
class DecodedLeaf implements LeafPage {
  readonly type = 'leaf';
  keyTable: Int32Array | undefined = undefined;

  constructor(
    readonly pageNo: number,
    readonly next: number,
    readonly simple: boolean,
    readonly keys: string[],
    readonly rows: Float64Array,
    readonly memberRows: Float64Array,
    readonly exts: string[],
    private made: IndexEntry[] | undefined,
  ) {}

  get entries(): IndexEntry[] {
    return (this.made ??= entriesFromColumns(this));
  }
}

/** The IndexEntry objects of a leaf's records, from its columns. */
function entriesFromColumns(leaf: LeafPage): IndexEntry[] {
  const entries: IndexEntry[] = new Array(leaf.keys.length);
  for (let i = 0; i < entries.length; i++) entries[i] = entryAt(leaf, i);
  return entries;
}

/**
 * Record `slot`'s IndexEntry, made from the leaf's columns (a new object each call). Readers take one record this way
 * rather than through `leaf.entries`, which makes the whole leaf's entries and keeps them with the page: ~300 bytes a
 * record more in a page cache whose budget counts the columns and keys (src/read/page-cost.ts).
 */
export function entryAt(leaf: LeafPage, slot: number): IndexEntry {
  const { rows, memberRows: cols, exts } = leaf;
  const r = slot * RECORD_COLUMNS;
  const loneCrc32c = rows[r + RecordColumn.loneCrc32c] as number;
  if (loneCrc32c >= 0) {
    // one member stored uncompressed, filling the span: all in the record's row (a decoded leaf keeps no member row for it)
    const length = rows[r + RecordColumn.length] as number;
    const ext = exts[rows[r + RecordColumn.loneExt] as number] as string;
    const member: MemberEntry = { ext, offset: 0, size: length, storedSize: length, codec: Codec.none, crc32c: loneCrc32c };
    return { key: leaf.keys[slot] as string, shard: rows[r + RecordColumn.shard] as number, offset: rows[r + RecordColumn.offset] as number, length, members: [member] };
  }
  const first = rows[r + RecordColumn.firstMember] as number;
  const members: MemberEntry[] = new Array(rows[r + RecordColumn.memberCount] as number);
  for (let m = 0; m < members.length; m++) {
    const q = (first + m) * MEMBER_COLUMNS;
    members[m] = {
      ext: exts[cols[q + MemberColumn.ext] as number] as string,
      offset: cols[q + MemberColumn.offset] as number,
      size: cols[q + MemberColumn.size] as number,
      storedSize: cols[q + MemberColumn.storedSize] as number,
      codec: cols[q + MemberColumn.codec] as CodecId,
      crc32c: cols[q + MemberColumn.crc32c] as number,
    };
  }
  return { key: leaf.keys[slot] as string, shard: rows[r + RecordColumn.shard] as number, offset: rows[r + RecordColumn.offset] as number, length: rows[r + RecordColumn.length] as number, members };
}

/** What a leaf record is relative to: the previous record of its page (none for the first). */
export interface LeafRecordState {
  prevKey: Uint8Array;
  prev: IndexEntry | undefined;
}

/** Decodes one leaf record at the reader's position and advances `state`. */
export function decodeLeafRecord(r: ByteReader, state: LeafRecordState, i: number): IndexEntry {
  const { prevKey, prev } = state;
  const shared = r.varint();
  const suffixLength = r.varint();
  if (shared > prevKey.length) r.fail(`record ${i} shares more key bytes than the previous key has`);
  const suffix = r.bytesView(suffixLength); // bounds-checked before anything is allocated
  const keyBytes = new Uint8Array(shared + suffix.length);
  keyBytes.set(prevKey.subarray(0, shared));
  keyBytes.set(suffix, shared);
  let key: string;
  try {
    key = utf8Decoder.decode(keyBytes);
  } catch {
    return r.fail(`record ${i} has a key that is not UTF-8`);
  }
  const flags = r.u8();
  if ((flags & ~RECORD_KNOWN_FLAGS) !== 0) r.fail(`record ${i} has unknown flags ${flags}`);
  if (prev === undefined && flags !== 0) r.fail(`record ${i} refers to a previous record the page does not have`);
  if ((flags & RECORD_CONTIGUOUS) !== 0 && (flags & RECORD_SAME_SHARD) === 0) r.fail(`record ${i} is contiguous across shards`);
  const shard = flags & RECORD_SAME_SHARD ? (prev as IndexEntry).shard : r.varint();
  let offset: number;
  if (!(flags & RECORD_SAME_SHARD)) offset = r.varint();
  else if (flags & RECORD_CONTIGUOUS) offset = (prev as IndexEntry).offset + (prev as IndexEntry).length;
  else offset = (prev as IndexEntry).offset + (prev as IndexEntry).length + unzigzag(r.varint());
  if (!Number.isSafeInteger(offset) || offset < 0) r.fail(`record ${i} has a negative offset`);
  const shape = flags & RECORD_SAME_SHAPE ? (prev as IndexEntry).members : undefined;
  const memberCount = shape?.length ?? r.varint();
  if (memberCount === 0) r.fail(`record ${i} has no members`);
  // each member takes at least MIN_MEMBER_BYTES: a count the page cannot hold is damage, not an array to allocate
  if (shape === undefined && memberCount * MIN_MEMBER_BYTES > r.end - r.pos) r.fail(`record ${i} claims ${memberCount} members, more than the page holds`);
  const members: MemberEntry[] = new Array(memberCount);
  let memberEnd = 0;
  for (let m = 0; m < memberCount; m++) {
    let ext: string;
    let codec: CodecId;
    let gap: number;
    const like = shape?.[m];
    if (like !== undefined) {
      ext = like.ext;
      codec = like.codec;
      gap = memberGap(shape as MemberEntry[], m);
    } else {
      const memberFlags = r.u8();
      if ((memberFlags & ~MEMBER_KNOWN_FLAGS) !== 0) r.fail(`record ${i} member ${m} has unknown flags ${memberFlags}`);
      codec = (memberFlags & MEMBER_CODEC_MASK) as CodecId;
      if (codec !== Codec.none && codec !== Codec.lz4) r.fail(`record ${i} member ${m} has unknown codec ${codec}`);
      if (memberFlags & MEMBER_EXT_SAME) {
        const same = prev?.members[m];
        if (same === undefined) r.fail(`record ${i} member ${m} reuses a missing extension`);
        ext = same.ext;
      } else {
        ext = r.utf8(r.varint());
      }
      gap = r.varint();
    }
    const memberOffset = memberEnd + gap;
    const size = r.varint();
    const storedSize = codec === Codec.none ? size : r.varint();
    members[m] = { ext, offset: memberOffset, size, storedSize, codec, crc32c: r.u32() };
    memberEnd = memberOffset + storedSize;
  }
  if ((members[0] as MemberEntry).offset !== 0) r.fail(`record ${i} span does not start at its first member`);
  const entry: IndexEntry = { key, shard, offset, length: memberEnd, members };
  state.prevKey = keyBytes;
  state.prev = entry;
  return entry;
}

function decodeBranch(r: ByteReader, pageNo: number, level: number, count: number): BranchPage {
  if (level === 0) r.fail('is a branch at level 0');
  const keys: string[] = new Array(count);
  const children = new Uint32Array(count);
  const starts = new Float64Array(count + 1);
  let simple = true;
  for (let i = 0; i < count; i++) {
    keys[i] = r.utf8(r.varint());
    simple &&= isSimpleKey(keys[i] as string);
    if (i > 0 && compareKeys(keys[i - 1] as string, keys[i] as string) >= 0) r.fail(`record ${i} is out of key order`);
    const child = r.u32();
    children[i] = child;
    const n = r.varint();
    if (n === 0) r.fail(`record ${i} has an empty subtree`);
    starts[i + 1] = (starts[i] as number) + n;
  }
  return { type: 'branch', pageNo, level, simple, keys, children, starts };
}
