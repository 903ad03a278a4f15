/**
 * verify's sequential leaf walk: reads a leaf page's records into numbers, making no object per record (decodePage
 * makes an entry, a member array, member objects and a key string for each: most of verify's time and garbage on
 * tiny samples). It takes only leaves that are well formed, whose keys and extensions are UTF-8, and whose keys and
 * extensions break none of the writer's name rules (checkKeyAndExts); on anything else it says so, and the caller
 * decodes the page with decodePage, whose errors and checks say exactly what is wrong. For the tar layout it also
 * lists each lone stored member's name (key.ext), which verify compares with the member's tar header.
 *
 * With the native addon the same loop runs in C (src/native/verify-scan.c: 2-3x faster); it declines what this
 * one declines, and a page it declines is read here again, so what the walk sees is the same either way.
 */
import type { NativeAddon } from '../native/native.js';
import { LeafScanOut, MemberRow, RecordArrays } from '../native/native.js';
import { Codec } from '../../formats/index-entry.js';
import {
  MEMBER_CODEC_MASK,
  MEMBER_EXT_SAME,
  PAGE_COUNT,
  PAGE_CRC,
  PAGE_HEADER_BYTES,
  PAGE_LINK,
  PAGE_NO,
  PAGE_TYPE,
  PAGE_FLAGS,
  PageType,
  RECORD_CONTIGUOUS,
  RECORD_SAME_SHAPE,
  RECORD_SAME_SHARD,
  pageChecksum,
} from '../../formats/index-page.js';
import { KeyRules, LeafKeys, utf8Key } from './leaf-keys.js';
import { recordNames } from './leaf-names.js';

const MAX_VARINT_BYTES = 8;
/** Records with more members take decodePage's path (the shape of the record before is kept in fixed arrays). */
const MAX_MEMBERS = 256;
/** Member rows the table holds a record, on average (a sample whose rows do not fit takes the general path alone). */
const TABLE_ROWS_PER_RECORD = 16;
const SLASH = 0x2f;
const BACKSLASH = 0x5c;
const KNOWN_RECORD_FLAGS = RECORD_SAME_SHARD | RECORD_CONTIGUOUS | RECORD_SAME_SHAPE;
const KNOWN_MEMBER_FLAGS = MEMBER_CODEC_MASK | MEMBER_EXT_SAME;
/** Bytes for names at first with `names` on: a page of 4 KiB holds ~100 records of short keys; it grows as needed. */
const INITIAL_NAMES_BYTES = 16 * 1024;

/** The records of the last leaf read by {@link LeafScan.scan}: record i's fields at index i. */
export class LeafScan extends LeafKeys {
  count = 0;
  /** The leaf's link to the next leaf (0 for the last). */
  next = 0;
  /** The arrays below, views of this one (laid out as {@link RecordArrays} says): what the native addon fills. */
  records = new Float64Array(0);
  shard = new Float64Array(0);
  offset = new Float64Array(0);
  length = new Float64Array(0);
  members = new Uint32Array(0);
  /** Sums over the record's members: original and stored bytes. */
  size = new Float64Array(0);
  stored = new Float64Array(0);
  /** CRC32C of a record that is one member stored as is (it then fills its span), else -1. */
  loneCrc = new Float64Array(0);
  /**
   * With `names` on (leaf-names.ts): the tar name (`memberPath(key, ext)`) of a record of one stored member, in
   * `names` from `nameStart` for `nameLength` bytes; for a record of several stored members, its first row in
   * `table` ({@link MemberRow}); -1 (and 0) for other records (see {@link scan} for names that do not fit). Not
   * written with `names` off.
   */
  nameStart = new Float64Array(0);
  nameLength = new Float64Array(0);
  names = new Uint8Array(0);
  memberRow = new Float64Array(0);
  table = new Float64Array(0);
  /** Bytes of `names` and rows of `table` used by the page read last, and the bytes its names needed. */
  namesUsed = 0;
  rowsUsed = 0;
  namesWanted = 0;
  /** Sums over the leaf's records: members, span bytes, original and stored member bytes. */
  totalMembers = 0;
  totalLength = 0;
  totalSize = 0;
  totalStored = 0;
  /** The shard of every record when they share one, else -1; and the end of the span that ends last. */
  oneShard = -1;
  maxEnd = 0;

  private key = new Uint8Array(256);
  private readonly keyRules = new KeyRules();
  private pos = 0;
  private end = 0;
  /** The length of the extension safeExt read last. */
  private extLength = 0;
  private page: Uint8Array = new Uint8Array(0);
  // the previous record's members: codec and gap after the member before
  private prevCodec = new Uint8Array(MAX_MEMBERS);
  private prevGap = new Float64Array(MAX_MEMBERS);
  private curCodec = new Uint8Array(MAX_MEMBERS);
  private curGap = new Float64Array(MAX_MEMBERS);
  // each member's extension: where it is in the page and its length (the shape's, swapped with codecs and gaps)
  private prevExtAt = new Float64Array(MAX_MEMBERS);
  private prevExtLength = new Float64Array(MAX_MEMBERS);
  private curExtAt = new Float64Array(MAX_MEMBERS);
  private curExtLength = new Float64Array(MAX_MEMBERS);
  // the record's members (for its rows): start in the span, stored size, CRC32C
  private readonly rowOf = {
    codecs: this.prevCodec,
    extAt: this.prevExtAt,
    extLength: this.prevExtLength,
    start: new Float64Array(MAX_MEMBERS),
    stored: new Float64Array(MAX_MEMBERS),
    crc: new Float64Array(MAX_MEMBERS),
  };
  private readonly out = new Float64Array(LeafScanOut.LENGTH);

  /**
   * `native`: the addon whose scan runs first (undefined: this JavaScript scan only). `names`: list the names of
   * records of one stored member (the tar layout checks them against the shard's tar headers).
   */
  constructor(
    private readonly native?: NativeAddon,
    names = false,
  ) {
    super();
    if (names) this.names = new Uint8Array(INITIAL_NAMES_BYTES);
    this.grow(256);
  }

  /**
   * Reads leaf page `pageNo` (its bytes: `page`); true when it is a leaf this walk takes and every record was
   * read, false when it must be decoded by decodePage (a branch, damage, a name not UTF-8, a name the writer
   * refuses).
   */
  scan(page: Uint8Array, pageNo: number): boolean {
    const took = (this.native !== undefined && this.scanNative(page, pageNo)) || this.scanJs(page, pageNo);
    // names that did not fit: the page again, with room for twice what it wanted (prefix compression packs a
    // hundred and more long keys in a page: their names can outgrow the arena on any page)
    if (took && this.names.length > 0 && this.namesWanted > this.names.length) return this.scan(page, pageNo);
    return took;
  }

  /** {@link scan} by the native addon alone (false also without one): for tests that compare the two. */
  scanNative(page: Uint8Array, pageNo: number): boolean {
    const native = this.native;
    if (native === undefined || page.length < PAGE_HEADER_BYTES) return false;
    const count = (page[PAGE_COUNT] as number) | ((page[PAGE_COUNT + 1] as number) << 8);
    if (this.shard.length < count) this.grow(count);
    this.keyRoom(page.length);
    const out = this.out;
    this.namesRoom();
    if (this.names.length > 0) native.verifyLeafScan(page, pageNo, this.records, this.firstKeyBytes, this.lastKeyBytes, out, this.names, this.table);
    else native.verifyLeafScan(page, pageNo, this.records, this.firstKeyBytes, this.lastKeyBytes, out);
    if (out[LeafScanOut.COUNT] === 0) return false;
    this.namesWanted = out[LeafScanOut.NAMES_WANTED] as number;
    this.count = out[LeafScanOut.COUNT] as number;
    this.next = out[LeafScanOut.NEXT] as number;
    this.totalMembers = out[LeafScanOut.TOTAL_MEMBERS] as number;
    this.totalLength = out[LeafScanOut.TOTAL_LENGTH] as number;
    this.totalSize = out[LeafScanOut.TOTAL_SIZE] as number;
    this.totalStored = out[LeafScanOut.TOTAL_STORED] as number;
    this.oneShard = out[LeafScanOut.ONE_SHARD] as number;
    this.maxEnd = out[LeafScanOut.MAX_END] as number;
    this.firstKeyLength = out[LeafScanOut.FIRST_KEY_LENGTH] as number;
    this.lastKeyLength = out[LeafScanOut.LAST_KEY_LENGTH] as number;
    return true;
  }

  /** With names on, before a scan: room for twice what the last page wanted when its names did not all fit. */
  private namesRoom(): void {
    if (this.names.length > 0 && this.namesWanted > this.names.length) this.names = new Uint8Array(2 * this.namesWanted);
  }

  /**
   * {@link scan} in JavaScript: the fallback without the addon, and the reference verify-scan.c follows line by line.
   * One loop with its state in locals: without the addon, on tiny samples this is most of verify's time (about 33 ns
   * a record).
   */
  scanJs(page: Uint8Array, pageNo: number): boolean {
    if (page.length < PAGE_HEADER_BYTES) return false;
    const v = new DataView(page.buffer, page.byteOffset, page.byteLength);
    if (page[PAGE_TYPE] !== PageType.leaf || page[PAGE_FLAGS] !== 0 || v.getUint32(PAGE_NO, true) !== pageNo) return false;
    const count = v.getUint16(PAGE_COUNT, true);
    const next = v.getUint32(PAGE_LINK, true);
    if (count === 0 || (next !== 0 && next <= pageNo) || pageChecksum(page) !== v.getUint32(PAGE_CRC, true)) return false;
    if (this.shard.length < count) this.grow(count);
    this.page = page;
    const end = page.length;
    this.end = end;
    const { shard: shards, offset: offsets, length: lengths, members: memberCounts, size: sizes, stored: storeds, loneCrc } = this;
    let pos = PAGE_HEADER_BYTES;
    let keyLength = 0;
    let key = this.key;
    const keys = this.keyRules;
    keys.reset();
    let codecs = this.curCodec;
    let gaps = this.curGap;
    let prevCodecs = this.prevCodec;
    let prevGaps = this.prevGap;
    let extAt = this.curExtAt;
    let extLength = this.curExtLength;
    let prevExtAt = this.prevExtAt;
    let prevExtLength = this.prevExtLength;
    this.namesRoom();
    const { rowOf } = this;
    const listNames = this.names.length > 0;
    this.namesUsed = 0;
    this.rowsUsed = 0;
    this.namesWanted = 0;
    let prevMembers = 0;
    let shard = 0;
    let prevEnd = 0;
    let totalMembers = 0;
    let totalLength = 0;
    let totalSize = 0;
    let totalStored = 0;
    let firstShard = -1;
    let oneShard = true;
    let maxEnd = 0;
    for (let i = 0; i < count; i++) {
      // key: bytes shared with the key before, then the suffix (varints of one byte take the short way)
      let shared = page[pos] as number;
      if (shared < 0x80) pos++;
      else if ((shared = this.varintAt(pos)) < 0) return false;
      else pos = this.pos;
      let suffixLength = page[pos] as number;
      if (suffixLength < 0x80) pos++;
      else if ((suffixLength = this.varintAt(pos)) < 0) return false;
      else pos = this.pos;
      if (shared > keyLength || pos + suffixLength > end) return false;
      // in key order within the page: the first byte after the shared prefix is greater than the previous key's
      if (i > 0 && (suffixLength === 0 || (shared < keyLength && (page[pos] as number) <= (key[shared] as number)))) return false;
      if (shared + suffixLength > key.length) {
        const bigger = new Uint8Array(2 * (shared + suffixLength));
        bigger.set(key.subarray(0, shared));
        this.key = key = bigger;
      }
      if (!keys.next(page, pos, key, shared, suffixLength)) return false;
      pos += suffixLength;
      keyLength = shared + suffixLength;
      if (i === 0) {
        this.keyRoom(end);
        this.firstKeyBytes.set(key.subarray(0, keyLength));
        this.firstKeyLength = keyLength;
      }

      // the record: flags, shard and offset, members
      if (pos >= end) return false;
      const flags = page[pos++] as number;
      if ((flags & ~KNOWN_RECORD_FLAGS) !== 0 || (i === 0 && flags !== 0)) return false;
      if ((flags & RECORD_CONTIGUOUS) !== 0 && (flags & RECORD_SAME_SHARD) === 0) return false;
      let offset: number;
      if ((flags & RECORD_SAME_SHARD) === 0) {
        shard = this.varintAt(pos);
        offset = this.varintAt(this.pos);
        pos = this.pos;
        if (shard < 0 || offset < 0) return false;
      } else if ((flags & RECORD_CONTIGUOUS) !== 0) offset = prevEnd;
      else {
        const z = this.varintAt(pos);
        pos = this.pos;
        if (z < 0) return false;
        offset = prevEnd + (z % 2 === 0 ? z / 2 : -(z + 1) / 2);
        if (!Number.isSafeInteger(offset) || offset < 0) return false;
      }
      const sameShape = (flags & RECORD_SAME_SHAPE) !== 0;
      let memberCount = prevMembers;
      if (!sameShape) {
        memberCount = page[pos] as number;
        if (memberCount < 0x80) pos++;
        else if ((memberCount = this.varintAt(pos)) < 0) return false;
        else pos = this.pos;
      }
      if (memberCount < 1 || memberCount > MAX_MEMBERS) return false;
      let memberEnd = 0;
      let size = 0;
      let stored = 0;
      let crc = 0;
      for (let m = 0; m < memberCount; m++) {
        let codec: number;
        let gap: number;
        if (sameShape) {
          codec = prevCodecs[m] as number;
          gap = prevGaps[m] as number;
        } else {
          if (pos >= end) return false;
          const memberFlags = page[pos++] as number;
          codec = memberFlags & MEMBER_CODEC_MASK;
          if ((memberFlags & ~KNOWN_MEMBER_FLAGS) !== 0 || (codec !== Codec.none && codec !== Codec.lz4)) return false;
          if ((memberFlags & MEMBER_EXT_SAME) !== 0) {
            if (i === 0 || m >= prevMembers) return false;
            extAt[m] = prevExtAt[m] as number;
            extLength[m] = prevExtLength[m] as number;
          } else {
            this.pos = pos;
            if (!this.safeExt()) return false;
            extAt[m] = this.pos - this.extLength;
            extLength[m] = this.extLength;
            pos = this.pos;
          }
          gap = this.varintAt(pos);
          pos = this.pos;
          if (gap < 0) return false;
        }
        codecs[m] = codec;
        gaps[m] = gap;
        let memberSize = page[pos] as number;
        if (memberSize < 0x80) pos++;
        else if ((memberSize = this.varintAt(pos)) < 0) return false;
        else pos = this.pos;
        let storedSize = memberSize;
        if (codec !== Codec.none) {
          storedSize = this.varintAt(pos);
          pos = this.pos;
          if (storedSize < 0) return false;
        }
        if (pos + 4 > end) return false;
        crc = (page[pos] as number) | ((page[pos + 1] as number) << 8) | ((page[pos + 2] as number) << 16) | ((page[pos + 3] as number) << 24);
        pos += 4;
        if (m === 0 && gap !== 0) return false; // the span starts at its first member
        if (listNames) {
          rowOf.start[m] = memberEnd + gap;
          rowOf.stored[m] = storedSize;
          rowOf.crc[m] = crc >>> 0;
        }
        memberEnd += gap + storedSize;
        size += memberSize;
        stored += storedSize;
      }
      if (!Number.isSafeInteger(memberEnd)) return false;
      shards[i] = shard;
      offsets[i] = offset;
      lengths[i] = memberEnd;
      memberCounts[i] = memberCount;
      sizes[i] = size;
      storeds[i] = stored;
      loneCrc[i] = memberCount === 1 && codecs[0] === Codec.none ? crc >>> 0 : -1;
      prevEnd = offset + memberEnd;
      totalMembers += memberCount;
      totalLength += memberEnd;
      totalSize += size;
      totalStored += stored;
      if (i === 0) firstShard = shard;
      else if (shard !== firstShard) oneShard = false;
      if (prevEnd > maxEnd) maxEnd = prevEnd;
      // the shape the next record may take over
      if (!sameShape) {
        const c = prevCodecs;
        prevCodecs = codecs;
        codecs = c;
        const g = prevGaps;
        prevGaps = gaps;
        gaps = g;
        let e = prevExtAt;
        prevExtAt = extAt;
        extAt = e;
        e = prevExtLength;
        prevExtLength = extLength;
        extLength = e;
      }
      // names (the record's shape, its own or the one it took over, is in the prev arrays now); without them these
      // columns are not written: the scan of tiny samples stays within the seven it reads
      if (listNames) {
        rowOf.codecs = prevCodecs;
        rowOf.extAt = prevExtAt;
        rowOf.extLength = prevExtLength;
        recordNames(this, i, loneCrc[i] !== -1, memberCount, key, keyLength, page, rowOf);
      }
      prevMembers = memberCount;
    }
    this.curCodec = codecs;
    this.prevCodec = prevCodecs;
    this.curGap = gaps;
    this.prevGap = prevGaps;
    this.curExtAt = extAt;
    this.prevExtAt = prevExtAt;
    this.curExtLength = extLength;
    this.prevExtLength = prevExtLength;
    this.count = count;
    this.next = next;
    this.totalMembers = totalMembers;
    this.totalLength = totalLength;
    this.totalSize = totalSize;
    this.totalStored = totalStored;
    this.oneShard = oneShard ? firstShard : -1;
    this.maxEnd = maxEnd;
    this.lastKeyBytes.set(key.subarray(0, keyLength));
    this.lastKeyLength = keyLength;
    return true;
  }

  /** {@link varint} at `pos`: the value, or -1; `this.pos` is then after it. */
  private varintAt(pos: number): number {
    this.pos = pos;
    return this.varint();
  }

  /** Reads an extension: UTF-8, with none of "/", a backslash or NUL (checkKeyAndExts' rules); its length in extLength. */
  private safeExt(): boolean {
    const n = this.varint();
    if (n < 0 || this.pos + n > this.end) return false;
    this.extLength = n;
    let high = 0;
    for (let j = this.pos; j < this.pos + n; j++) {
      const b = this.page[j] as number;
      if (b === SLASH || b === BACKSLASH || b === 0) return false;
      high |= b;
    }
    if ((high & 0x80) !== 0 && utf8Key(this.page.subarray(this.pos, this.pos + n), n) < 0) return false;
    this.pos += n;
    return true;
  }

  /** A LEB128 varint of a safe integer, or -1 when it is not one or runs past the page. */
  private varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      if (this.pos >= this.end) return -1;
      const b = this.page[this.pos++] as number;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return Number.isSafeInteger(value) ? value : -1;
      scale *= 0x80;
    }
    return -1;
  }

  private grow(count: number): void {
    const n = Math.max(count, 2 * this.shard.length);
    const records = new Float64Array(RecordArrays.COUNT * n);
    const part = (k: number): Float64Array<ArrayBuffer> => new Float64Array(records.buffer, k * n * Float64Array.BYTES_PER_ELEMENT, n);
    this.records = records;
    this.shard = part(RecordArrays.SHARD);
    this.offset = part(RecordArrays.OFFSET);
    this.length = part(RecordArrays.LENGTH);
    this.size = part(RecordArrays.SIZE);
    this.stored = part(RecordArrays.STORED);
    this.loneCrc = part(RecordArrays.LONE_CRC);
    this.members = new Uint32Array(records.buffer, RecordArrays.MEMBERS * n * Float64Array.BYTES_PER_ELEMENT, n);
    this.nameStart = part(RecordArrays.NAME_START);
    this.nameLength = part(RecordArrays.NAME_LENGTH);
    this.memberRow = part(RecordArrays.MEMBER_ROW);
    if (this.names.length > 0) this.table = new Float64Array(n * TABLE_ROWS_PER_RECORD * MemberRow.COLUMNS);
  }
}
