/**
 * Leaf records written in place into a page buffer, the bytes {@link LeafRecordEncoder} gives (formats/SPEC.md,
 * "Leaf records"), without a growable writer or a view per record: the bulk load's hot path. The caller makes room
 * first with {@link leafRecordBound}, so no write here checks bounds.
 */
import { utf8Bytes, zigzag } from './bytes.js';
import { Codec, type IndexEntry, type MemberEntry } from './index-entry.js';
import { MEMBER_EXT_SAME, RECORD_CONTIGUOUS, RECORD_SAME_SHAPE, RECORD_SAME_SHARD } from './index-page.js';
import { memberGap, sameMemberShape } from './leaf-record-encoder.js';

/** The most bytes a varint of a safe integer takes. */
const VARINT_MAX = 8;
/** A record's bytes beyond its key suffix and members: two key varints, flags, shard, offset, member count. */
const RECORD_FIXED_BOUND = 2 * 3 + 1 + 3 * VARINT_MAX;
/** A member's bytes beyond its extension: flags, extension length, gap, size, stored size, CRC32C. */
const MEMBER_FIXED_BOUND = 1 + 3 + 3 * VARINT_MAX + 4;

/** An upper bound of the bytes {@link writeLeafRecord} writes for `entry` with a key of `keyLength` bytes. */
export function leafRecordBound(entry: IndexEntry, keyLength: number): number {
  let bound = RECORD_FIXED_BOUND + keyLength;
  const members = entry.members;
  for (let i = 0; i < members.length; i++) bound += MEMBER_FIXED_BOUND + 3 * (members[i] as MemberEntry).ext.length;
  return bound;
}

/**
 * Writes the leaf record of `entry` at `buf[pos]` and returns where it ends. `key[0, keyLength)` is its key's UTF-8;
 * `prev` the previous record of the same page (undefined for a page's first), whose key shares `shared` leading
 * bytes with it. `buf` must hold {@link leafRecordBound} bytes from `pos`.
 */
export function writeLeafRecord(buf: Uint8Array, pos: number, entry: IndexEntry, key: Uint8Array, keyLength: number, prev: IndexEntry | undefined, shared: number): number {
  let p = putVarint(buf, pos, shared);
  p = putVarint(buf, p, keyLength - shared);
  for (let i = shared; i < keyLength; i++) buf[p++] = key[i] as number;
  const members = entry.members;
  const sameShard = prev !== undefined && prev.shard === entry.shard;
  const contiguous = sameShard && entry.offset === prev.offset + prev.length;
  const sameShape = prev !== undefined && sameMemberShape(prev.members, members);
  buf[p++] = (sameShard ? RECORD_SAME_SHARD : 0) | (contiguous ? RECORD_CONTIGUOUS : 0) | (sameShape ? RECORD_SAME_SHAPE : 0);
  if (!sameShard) {
    p = putVarint(buf, p, entry.shard);
    p = putVarint(buf, p, entry.offset);
  } else if (!contiguous) {
    p = putVarint(buf, p, zigzag(entry.offset - (prev.offset + prev.length)));
  }
  if (!sameShape) p = putVarint(buf, p, members.length);
  for (let i = 0; i < members.length; i++) {
    const m = members[i] as MemberEntry;
    if (!sameShape) {
      const sameExt = prev?.members[i]?.ext === m.ext;
      buf[p++] = m.codec | (sameExt ? MEMBER_EXT_SAME : 0);
      if (!sameExt) {
        const ext = utf8Bytes(m.ext);
        p = putVarint(buf, p, ext.length);
        buf.set(ext, p);
        p += ext.length;
      }
      p = putVarint(buf, p, memberGap(members, i));
    }
    p = putVarint(buf, p, m.size);
    if (m.codec !== Codec.none) p = putVarint(buf, p, m.storedSize);
    const crc = m.crc32c;
    buf[p] = crc & 0xff;
    buf[p + 1] = (crc >>> 8) & 0xff;
    buf[p + 2] = (crc >>> 16) & 0xff;
    buf[p + 3] = (crc >>> 24) & 0xff;
    p += 4;
  }
  return p;
}

/** LEB128 of a safe non-negative integer at `buf[pos]`; returns where it ends. */
function putVarint(buf: Uint8Array, pos: number, value: number): number {
  if (value >>> 0 === value && value < 0x80) {
    buf[pos] = value;
    return pos + 1;
  }
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`varint out of range: ${value}`);
  while (value >= 0x80) {
    buf[pos++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  buf[pos] = value;
  return pos + 1;
}

