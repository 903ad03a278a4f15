/**
 * The leaf record encoder: each record of a leaf page relative to the record before it in the page (shared key
 * prefix, same shard, contiguous span, same member shape). The layout is in formats/SPEC.md ("Leaf records");
 * index-page.ts decodes it.
 */
import { ByteWriter, utf8Bytes, zigzag } from './bytes.js';
import { Codec, type IndexEntry, type MemberEntry } from './index-entry.js';
import type { LeafRecordState } from './index-page.js';
import { MEMBER_EXT_SAME, RECORD_CONTIGUOUS, RECORD_SAME_SHAPE, RECORD_SAME_SHARD } from './leaf-format.js';

/** Encodes leaf records, each relative to the previous record of the same page. */
export class LeafRecordEncoder {
  private prevKey: Uint8Array | undefined;
  private prev: IndexEntry | undefined;
  private readonly w = new ByteWriter(512);

  /** Forget the previous record: the next one opens a page. */
  reset(): void {
    this.prevKey = undefined;
    this.prev = undefined;
  }

  /** The previous record's key bytes and entry, which the next record is encoded against (undefined after reset). */
  get state(): LeafRecordState | undefined {
    return this.prev === undefined ? undefined : { prevKey: this.prevKey as Uint8Array, prev: this.prev };
  }

  /** Continues from a {@link LeafRecordEncoder.state}. */
  restore(state: LeafRecordState | undefined): void {
    this.prevKey = state?.prevKey;
    this.prev = state?.prev;
  }

  /** The record for `entry` (a view valid until the next call); `keyBytes` is the key's UTF-8. */
  encode(entry: IndexEntry, keyBytes: Uint8Array): Uint8Array {
    const w = this.w;
    w.reset();
    const prev = this.prev;
    const prevKey = this.prevKey;
    let shared = 0;
    if (prevKey !== undefined) {
      const n = Math.min(prevKey.length, keyBytes.length);
      while (shared < n && prevKey[shared] === keyBytes[shared]) shared++;
    }
    w.varint(shared).varint(keyBytes.length - shared).bytes(keyBytes, shared);
    const sameShard = prev !== undefined && prev.shard === entry.shard;
    const contiguous = sameShard && entry.offset === prev.offset + prev.length;
    const sameShape = prev !== undefined && sameMemberShape(prev.members, entry.members);
    w.u8((sameShard ? RECORD_SAME_SHARD : 0) | (contiguous ? RECORD_CONTIGUOUS : 0) | (sameShape ? RECORD_SAME_SHAPE : 0));
    if (!sameShard) w.varint(entry.shard);
    if (!sameShard) w.varint(entry.offset);
    else if (!contiguous) w.varint(zigzag(entry.offset - (prev.offset + prev.length)));
    if (!sameShape) w.varint(entry.members.length);
    const members = entry.members;
    for (let i = 0; i < members.length; i++) {
      const m = members[i] as MemberEntry;
      if (!sameShape) {
        const sameExt = prev?.members[i]?.ext === m.ext;
        w.u8(m.codec | (sameExt ? MEMBER_EXT_SAME : 0));
        if (!sameExt) {
          const ext = utf8Bytes(m.ext);
          w.varint(ext.length).bytes(ext);
        }
        w.varint(memberGap(entry.members, i));
      }
      w.varint(m.size);
      if (m.codec !== Codec.none) w.varint(m.storedSize);
      w.u32(m.crc32c);
    }
    this.prev = entry;
    this.prevKey = keyBytes;
    return w.view_();
  }
}

/** Bytes between member i and the end of member i-1 (the offset of member 0). */
export function memberGap(members: readonly MemberEntry[], i: number): number {
  const m = members[i] as MemberEntry;
  if (i === 0) return m.offset; // not members[-1]: an out-of-range read takes V8's slow path (60-75 ns, 10 ns here)
  const before = members[i - 1] as MemberEntry;
  return m.offset - (before.offset + before.storedSize);
}

/** The two samples' members have the same extensions, codecs and gaps (a record can say "same shape"). */
export function sameMemberShape(a: readonly MemberEntry[], b: readonly MemberEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as MemberEntry;
    const y = b[i] as MemberEntry;
    if (x.ext !== y.ext || x.codec !== y.codec || memberGap(a, i) !== memberGap(b, i)) return false;
  }
  return true;
}
