/**
 * Checks the members of one sample span as its bytes stream past, for spans too large to hold whole (a 9 GiB
 * member of an adopted tar: issue 26, item 3). An uncompressed member's CRC32C is computed piece by piece; an LZ4
 * member is gathered and decompressed (it is never larger than one buffer: shardkit compressed it from one); a
 * stored member larger than that is reported, not allocated.
 */
import buffer from 'node:buffer';
import { crc32c, crc32cHex } from '../../formats/checksum.js';
import { Codec, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import { lz4DecompressMember } from '../../formats/lz4.js';

/**
 * Samples longer than this are read member by member as a stream (get --out, extract: see member-stream-read.ts),
 * and verify checks spans longer than this as they stream past (see {@link MemberStream}); shorter ones are
 * gathered whole.
 */
export const MAX_GATHERED_SPAN_BYTES = 256 << 20;

/**
 * verify's own bound for a span that crosses a read chunk: gathering costs a fresh buffer of the span's size and a
 * copy. On /usr/share packed as one tar (50,442 samples, 768 MB, files up to 50 MB), 1 MiB here instead of 256 MiB
 * took verify's peak RSS from 211-221 MiB to 122-125 MiB and its time to ~0.92x.
 */
export const VERIFY_MAX_GATHERED_BYTES = 1 << 20;

/**
 * `limit` ({@link MAX_GATHERED_SPAN_BYTES} unless given), or the smaller SHARDKIT_TEST_MAX_SPAN_BYTES (tests only: so
 * that the streamed paths run on small shards).
 */
export function maxGatheredSpanBytes(limit = MAX_GATHERED_SPAN_BYTES): number {
  const test = Number(process.env.SHARDKIT_TEST_MAX_SPAN_BYTES);
  return Number.isSafeInteger(test) && test > 0 ? Math.min(test, limit) : limit;
}

/**
 * How much of a shard verify reads at once: `fallback` (8 MiB), or the smaller SHARDKIT_TEST_VERIFY_CHUNK_BYTES
 * (tests only: spans then cross chunks on small shards).
 */
export function verifyChunkBytes(fallback = 8 << 20): number {
  const test = Number(process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES);
  return Number.isSafeInteger(test) && test > 0 ? Math.min(test, fallback) : fallback;
}

interface MemberState {
  member: MemberEntry;
  /** Shard offsets of its stored bytes: [start, end). */
  start: number;
  end: number;
  crc: number;
  /** LZ4: its stored bytes, gathered. */
  stored: Uint8Array | undefined;
}

/** One member's verdict: its original size, and what is wrong with it if anything. */
export interface MemberVerdict {
  member: MemberEntry;
  /** Shard offset of its stored bytes. */
  at: number;
  problem: string | undefined;
}

export class MemberStream {
  private readonly members: MemberState[];

  /** @param shardName for messages. */
  constructor(
    entry: IndexEntry,
    private readonly shardName: string,
  ) {
    this.members = entry.members.map((member) => {
      const start = entry.offset + member.offset;
      const gather = member.codec === Codec.lz4 && member.storedSize <= buffer.constants.MAX_LENGTH;
      return { member, start, end: start + member.storedSize, crc: 0, stored: gather ? new Uint8Array(member.storedSize) : undefined };
    });
  }

  /** The next bytes of the span, starting at shard offset `at`. */
  push(bytes: Uint8Array, at: number): void {
    const end = at + bytes.length;
    for (const s of this.members) {
      const from = Math.max(s.start, at);
      const to = Math.min(s.end, end);
      if (from >= to) continue;
      const piece = bytes.subarray(from - at, to - at);
      if (s.member.codec === Codec.none) s.crc = crc32c(piece, s.crc);
      else s.stored?.set(piece, from - s.start);
    }
  }

  /** The verdict on every member, once the whole span was pushed. */
  finish(): MemberVerdict[] {
    return this.members.map((s) => ({ member: s.member, at: s.start, problem: this.problemOf(s) }));
  }

  private problemOf(s: MemberState): string | undefined {
    let crc = s.crc;
    if (s.member.codec === Codec.lz4) {
      if (s.stored === undefined) return `${s.member.storedSize} LZ4 bytes, more than one buffer holds: not checked (TOO_LARGE)`;
      try {
        crc = crc32c(lz4DecompressMember(s.stored, s.member.size, `${this.shardName} byte ${s.start}`));
      } catch (err) {
        return (err as Error).message;
      }
    }
    return crc >>> 0 === s.member.crc32c >>> 0 ? undefined : `checksum mismatch (CRC32C ${crc32cHex(crc)}, the index says ${crc32cHex(s.member.crc32c)})`;
  }
}
