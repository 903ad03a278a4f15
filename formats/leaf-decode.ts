/**
 * Decodes a leaf page's records straight into its columns (LeafPage.rows, memberRows, exts) and keys, in one pass
 * over the bytes: no IndexEntry or member object, no key buffer and no TextDecoder call per record. It makes the
 * same checks as {@link decodeLeafRecord} (the record-at-a-time decoder, which stays the reference: the property
 * test test/property/leaf-decode.test.ts holds both to the same result and the same error on any page), in the
 * same order, with the same messages.
 *
 * Why: a fresh process touches every leaf once in its first epoch, and decoding a leaf record by record (an entry,
 * its members, a key buffer, a TextDecoder call and a key comparison each) took ~8 us a record before the code was
 * optimized: 40 of the ~150 ms a first epoch of 5,000 samples took (bench/fresh.mjs).
 *
 * Keys are compared as bytes (their UTF-8 order is the key order: key-order.ts), from the first byte a record does
 * not share with the previous one. Pure-ASCII keys, nearly all keys, are decoded as one Latin-1 string per leaf and
 * cut at their ends; a key with any other byte is checked and decoded by the strict UTF-8 decoder, where the
 * reference decoder checks it.
 */
import { type ByteReader, unzigzag, utf8Bytes, utf8Decoder } from './bytes.js';
import { Codec } from './index-entry.js';
import { isSimpleKey } from './key-order.js';
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
import { propertyName } from './sample.js';

/** A leaf's keys and its records as columns (LeafPage's `keys`, `simple`, `rows`, `memberRows`, `exts`). */
export interface LeafColumns {
  /** The keys of the records decoded; of a decode that stopped before the leaf's end (`stop`), the last one's alone. */
  keys: string[];
  /**
   * Records decoded (the leaf's count, but for a decode that stopped before its end). A decode that stopped before
   * the end returns scratch `rows` and `memberRows` (longer than its records need), valid until the next decode with
   * a stop: its caller copies out the record it keeps. Every other decode returns columns of its own.
   */
  decoded: number;
  simple: boolean;
  rows: Float64Array;
  memberRows: Float64Array;
  exts: string[];
}

// column offsets as plain numbers: this code runs cold (interpreted) in a fresh process, where each property read costs
const SHARD = RecordColumn.shard;
const OFFSET = RecordColumn.offset;
const LENGTH = RecordColumn.length;
const FIRST_MEMBER = RecordColumn.firstMember;
const MEMBER_COUNT = RecordColumn.memberCount;
const LONE_CRC32C = RecordColumn.loneCrc32c;
const LONE_EXT = RecordColumn.loneExt;
const M_OFFSET = MemberColumn.offset;
const M_SIZE = MemberColumn.size;
const M_STORED_SIZE = MemberColumn.storedSize;
const M_CODEC = MemberColumn.codec;
const M_CRC32C = MemberColumn.crc32c;
const M_EXT = MemberColumn.ext;

/**
 * Where a decode for one lookup stops (decode-to-slot): after record `slot`, or, with `key`, after the first record
 * whose key is >= `key` (the record that holds it, if the leaf has it). Every record up to there gets every check.
 */
export interface LeafStop {
  slot: number;
  key: string | undefined;
}

/**
 * Columns of the decodes that stop early (decode-to-slot), reused: a lookup past the page cache allocated ~40 KiB of
 * columns for a leaf of ~450 tiny samples to keep one record of them.
 */
const scratch = {
  rowsBuf: new Float64Array(0),
  membersBuf: new Float64Array(0),
  keyEndsBuf: new Int32Array(0),
  rows(n: number): Float64Array {
    if (this.rowsBuf.length < n) this.rowsBuf = new Float64Array(n);
    return this.rowsBuf;
  },
  members(n: number): Float64Array {
    if (this.membersBuf.length < n) this.membersBuf = new Float64Array(n);
    return this.membersBuf;
  },
  keyEnds(n: number): Int32Array {
    if (this.keyEndsBuf.length < n) this.keyEndsBuf = new Int32Array(n);
    return this.keyEndsBuf;
  },
};

/** Key bytes of the leaf being decoded, back to back (grown as needed, reused: decoding is synchronous). */
let keyBytes = new Uint8Array(8192);

function growKeyBytes(need: number): void {
  let size = keyBytes.length * 2;
  while (size < need) size *= 2;
  const next = new Uint8Array(size);
  next.set(keyBytes);
  keyBytes = next;
}

/**
 * Decodes `count` records from `r` (positioned at the first), or with `stop` the records up to the one it names
 * (then `keys.length` tells how many). Throws through `r.fail` on the first damage found, with the message
 * {@link decodeLeafRecord} and decodeLeaf give for it.
 */
export function decodeLeafColumns(r: ByteReader, count: number, stop?: LeafStop): LeafColumns {
  const bytes = r.bytes;
  const stopSlot = stop === undefined ? count - 1 : Math.min(stop.slot < 0 ? count - 1 : stop.slot, count - 1);
  const stopKey = stop?.key === undefined ? undefined : utf8Bytes(stop.key);
  let decoded = count;
  let matched = 0; // bytes the previous key shares with stopKey
  // a decode for one lookup fills scratch columns, and copies out what it returns (see the end)
  const keyEnds = stop === undefined ? new Int32Array(count) : scratch.keyEnds(count);
  const rows = stop === undefined ? new Float64Array(count * RECORD_COLUMNS) : scratch.rows(count * RECORD_COLUMNS);
  let memberRows = scratch.members(count * MEMBER_COLUMNS); // the kept ones are copied out at the end (keptMemberRows)
  const exts: string[] = [];
  const extIds = new Map<string, number>();
  const extAt: number[] = []; // where in the page an extension was first spelled out, its length and its id
  const extLength: number[] = [];
  const extById: number[] = [];
  let allAscii = true; // every key so far is ASCII
  let prevAscii = true; // the previous key is (a first key shares nothing)
  let prevStart = 0; // the previous key's bytes: keyBytes[prevStart, prevEnd)
  let prevEnd = 0;
  let members = 0; // member rows filled
  let prevFirst = 0; // the previous record's first member row and member count
  let prevCount = 0;
  let prevShard = 0;
  let prevSpanEnd = 0; // the previous record's offset + length
  const keyTexts: (string | undefined)[] = new Array(count); // keys decoded one by one (a leaf with a non-ASCII key)
  for (let i = 0; i < count; i++) {
    const shared = r.varint();
    const suffixLength = r.varint();
    const prevLength = prevEnd - prevStart;
    if (shared > prevLength) r.fail(`record ${i} shares more key bytes than the previous key has`);
    const suffixAt = r.pos;
    r.skip(suffixLength); // bounds check only (a view per record cost ~10% of a decode)
    const start = prevEnd;
    const end = start + shared + suffixLength;
    if (end > keyBytes.length) growKeyBytes(end);
    keyBytes.copyWithin(start, prevStart, prevStart + shared);
    let keyAscii: boolean = prevAscii || asciiBytes(keyBytes, prevStart, prevStart + shared);
    for (let k = 0; k < suffixLength; k++) {
      const b = bytes[suffixAt + k] as number;
      keyBytes[start + shared + k] = b;
      if (b >= 0x80) keyAscii = false;
    }
    if (!keyAscii) {
      // this key, or one before it, has a byte above 0x7f: check it as the reference decoder does
      try {
        keyTexts[i] = utf8Decoder.decode(keyBytes.subarray(start, end));
      } catch {
        r.fail(`record ${i} has a key that is not UTF-8`);
      }
    }
    prevAscii = keyAscii;
    allAscii &&= keyAscii;
    const flags = r.u8();
    if ((flags & ~RECORD_KNOWN_FLAGS) !== 0) r.fail(`record ${i} has unknown flags ${flags}`);
    if (i === 0 && flags !== 0) r.fail(`record ${i} refers to a previous record the page does not have`);
    if ((flags & RECORD_CONTIGUOUS) !== 0 && (flags & RECORD_SAME_SHARD) === 0) r.fail(`record ${i} is contiguous across shards`);
    const shard = flags & RECORD_SAME_SHARD ? prevShard : r.varint();
    let offset: number;
    if (!(flags & RECORD_SAME_SHARD)) offset = r.varint();
    else if (flags & RECORD_CONTIGUOUS) offset = prevSpanEnd;
    else offset = prevSpanEnd + unzigzag(r.varint());
    if (!Number.isSafeInteger(offset) || offset < 0) r.fail(`record ${i} has a negative offset`);
    const sameShape = (flags & RECORD_SAME_SHAPE) !== 0;
    const memberCount = sameShape ? prevCount : r.varint();
    if (memberCount === 0) r.fail(`record ${i} has no members`);
    if (!sameShape && memberCount * MIN_MEMBER_BYTES > r.end - r.pos) r.fail(`record ${i} claims ${memberCount} members, more than the page holds`);
    if ((members + memberCount) * MEMBER_COLUMNS > memberRows.length) {
      const next = new Float64Array(Math.max(memberRows.length * 2, (members + memberCount) * MEMBER_COLUMNS));
      next.set(memberRows);
      memberRows = next;
    }
    const first = members;
    let memberEnd = 0;
    for (let m = 0; m < memberCount; m++) {
      const q = (first + m) * MEMBER_COLUMNS;
      let ext: number;
      let codec: number;
      let gap: number;
      if (sameShape) {
        const p = (prevFirst + m) * MEMBER_COLUMNS;
        ext = memberRows[p + M_EXT] as number;
        codec = memberRows[p + M_CODEC] as number;
        gap = m === 0 ? (memberRows[p + M_OFFSET] as number) : (memberRows[p + M_OFFSET] as number) - ((memberRows[p - MEMBER_COLUMNS + M_OFFSET] as number) + (memberRows[p - MEMBER_COLUMNS + M_STORED_SIZE] as number));
      } else {
        const memberFlags = r.u8();
        if ((memberFlags & ~MEMBER_KNOWN_FLAGS) !== 0) r.fail(`record ${i} member ${m} has unknown flags ${memberFlags}`);
        codec = memberFlags & MEMBER_CODEC_MASK;
        if (codec !== Codec.none && codec !== Codec.lz4) r.fail(`record ${i} member ${m} has unknown codec ${codec}`);
        if (memberFlags & MEMBER_EXT_SAME) {
          if (i === 0 || m >= prevCount) r.fail(`record ${i} member ${m} reuses a missing extension`);
          ext = memberRows[(prevFirst + m) * MEMBER_COLUMNS + M_EXT] as number;
        } else {
          const nameLength = r.varint();
          const nameAt = r.pos;
          r.skip(nameLength); // bounds check only
          // an extension the page spelled out before: found by its bytes, not decoded again (a TextDecoder call)
          let id = sameBytesAs(bytes, nameAt, nameLength, extAt, extLength);
          if (id < 0) {
            let name: string;
            try {
              name = utf8Decoder.decode(bytes.subarray(nameAt, nameAt + nameLength));
            } catch {
              return r.fail(`invalid UTF-8 at byte ${nameAt}`);
            }
            id = extIds.get(name) ?? -1;
            if (id < 0) {
              id = exts.push(propertyName(name)) - 1; // members objects are keyed by it on every read
              extIds.set(name, id);
            }
            if (extAt.length < MAX_EXTS_BY_BYTES) {
              extAt.push(nameAt);
              extLength.push(nameLength);
              extById.push(id);
            }
          } else {
            id = extById[id] as number;
          }
          ext = id;
        }
        gap = r.varint();
      }
      const memberOffset = memberEnd + gap;
      const size = r.varint();
      const storedSize = codec === Codec.none ? size : r.varint();
      memberRows[q + M_OFFSET] = memberOffset;
      memberRows[q + M_SIZE] = size;
      memberRows[q + M_STORED_SIZE] = storedSize;
      memberRows[q + M_CODEC] = codec;
      memberRows[q + M_CRC32C] = r.u32();
      memberRows[q + M_EXT] = ext;
      memberEnd = memberOffset + storedSize;
    }
    if ((memberRows[first * MEMBER_COLUMNS + M_OFFSET] as number) !== 0) r.fail(`record ${i} span does not start at its first member`);
    // key order: the bytes from the first one not shared with the previous key (UTF-8 order is key order)
    if (i > 0 && !follows(prevStart + shared, prevEnd, start + shared, end)) r.fail(`record ${i} is out of key order`);
    const row = i * RECORD_COLUMNS;
    rows[row + SHARD] = shard;
    rows[row + OFFSET] = offset;
    rows[row + LENGTH] = memberEnd;
    rows[row + FIRST_MEMBER] = first;
    rows[row + MEMBER_COUNT] = memberCount;
    const lone = memberCount === 1 && memberRows[first * MEMBER_COLUMNS + M_CODEC] === Codec.none;
    rows[row + LONE_CRC32C] = lone ? (memberRows[first * MEMBER_COLUMNS + M_CRC32C] as number) : -1;
    rows[row + LONE_EXT] = lone ? (memberRows[first * MEMBER_COLUMNS + M_EXT] as number) : -1;
    members += memberCount;
    keyEnds[i] = end;
    prevStart = start;
    prevEnd = end;
    prevFirst = first;
    prevCount = memberCount;
    prevShard = shard;
    prevSpanEnd = offset + memberEnd;
    if (stopKey !== undefined) {
      // this key and the sought one share min(shared, matched) bytes: compare from there on
      matched = commonPrefix(start, end, stopKey, Math.min(shared, matched));
      if (matched === stopKey.length || (start + matched < end && (keyBytes[start + matched] as number) > (stopKey[matched] as number))) {
        decoded = i + 1; // this key is >= the sought one
        break;
      }
    }
    if (i === stopSlot) {
      decoded = i + 1;
      break;
    }
  }
  // the keys' bytes run over [keyStart(0), keyEnds[decoded - 1]): each key follows the previous one
  // a decode that stopped before the leaf's end makes the key it stopped at alone (every key was checked above)
  const from = decoded < count ? decoded - 1 : 0;
  const keys: string[] = new Array(decoded - from);
  let simple = true;
  const keyStart = from === 0 ? 0 : (keyEnds[from - 1] as number);
  if (allAscii) {
    const text = latin1(keyBytes, keyStart, keyEnds[decoded - 1] as number);
    let at = keyStart;
    for (let i = from; i < decoded; i++) {
      const end = keyEnds[i] as number;
      keys[i - from] = text.slice(at - keyStart, end - keyStart);
      at = end;
    }
  } else {
    let at = keyStart;
    for (let i = from; i < decoded; i++) {
      const end = keyEnds[i] as number;
      const key = keyTexts[i] ?? utf8Decoder.decode(keyBytes.subarray(at, end));
      keys[i - from] = key;
      simple &&= isSimpleKey(key);
      at = end;
    }
  }
  if (stop !== undefined && decoded < count) return { keys, decoded, simple, rows, memberRows, exts }; // scratch: see LeafColumns
  const own = stop === undefined ? rows : rows.slice(0, count * RECORD_COLUMNS);
  return { keys, decoded, simple, rows: own, memberRows: keptMemberRows(own, memberRows, count, members), exts };
}

/**
 * The member rows a decoded leaf keeps: those of records that are not lone, renumbered (their firstMember moves;
 * a lone record's becomes -1). A lone record (one member stored uncompressed, most samples) has its member in its
 * row (loneCrc32c, loneExt; offset 0 and size the span's length), so its member row was a copy: 48 of the ~188 bytes
 * a decoded record of tiny samples took in the page cache.
 */
function keptMemberRows(rows: Float64Array, memberRows: Float64Array, count: number, members: number): Float64Array {
  let kept = 0;
  for (let row = 0; row < count * RECORD_COLUMNS; row += RECORD_COLUMNS) {
    if ((rows[row + LONE_CRC32C] as number) < 0) kept += rows[row + MEMBER_COUNT] as number;
  }
  if (kept === members) return memberRows.slice(0, members * MEMBER_COLUMNS); // no lone record: every row, in place
  const out = new Float64Array(kept * MEMBER_COLUMNS);
  let q = 0;
  for (let row = 0; row < count * RECORD_COLUMNS; row += RECORD_COLUMNS) {
    if ((rows[row + LONE_CRC32C] as number) >= 0) {
      rows[row + FIRST_MEMBER] = -1;
      continue;
    }
    const first = rows[row + FIRST_MEMBER] as number;
    const n = rows[row + MEMBER_COUNT] as number;
    out.set(memberRows.subarray(first * MEMBER_COLUMNS, (first + n) * MEMBER_COLUMNS), q * MEMBER_COLUMNS);
    rows[row + FIRST_MEMBER] = q;
    q += n;
  }
  return out;
}

/** Extensions a leaf remembers by their bytes (a leaf has a few: jpg, cls, json...; more are decoded each time). */
const MAX_EXTS_BY_BYTES = 8;

/** The index `i` of the spelling bytes[at[i], at[i] + length[i]) equal to bytes[from, from + n), or -1. */
function sameBytesAs(bytes: Uint8Array, from: number, n: number, at: readonly number[], length: readonly number[]): number {
  for (let i = 0; i < at.length; i++) {
    if (length[i] !== n) continue;
    const start = at[i] as number;
    let k = 0;
    while (k < n && bytes[start + k] === bytes[from + k]) k++;
    if (k === n) return i;
  }
  return -1;
}

/** The length of the common prefix of keyBytes[from, to) and `key`, known to be `known` at least. */
function commonPrefix(from: number, to: number, key: Uint8Array, known: number): number {
  const n = Math.min(to - from, key.length);
  let k = known;
  while (k < n && keyBytes[from + k] === key[k]) k++;
  return k;
}

/** Whether bytes[from, to) are all ASCII. */
function asciiBytes(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if ((bytes[i] as number) >= 0x80) return false;
  return true;
}

/** Whether keyBytes[b, bEnd) sorts after keyBytes[a, aEnd) (the two keys from a shared prefix on). */
function follows(a: number, aEnd: number, b: number, bEnd: number): boolean {
  for (; a < aEnd && b < bEnd; a++, b++) {
    const d = (keyBytes[b] as number) - (keyBytes[a] as number);
    if (d !== 0) return d > 0;
  }
  return bEnd - b > aEnd - a;
}

/** bytes[from, to) as a one-byte string (all ASCII here, so Latin-1 is UTF-8). */
function latin1(bytes: Uint8Array, from: number, to: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + from, to - from).toString('latin1');
}
