/** What the index records for each sample: where its span is, and each member inside it. */

/** Member codecs. 0 = stored as is; 1 = LZ4 frame (see SPEC "Compression"). */
export const Codec = { none: 0, lz4: 1 } as const;
export type CodecId = (typeof Codec)[keyof typeof Codec];
export const CODEC_NAMES: Record<CodecId, 'none' | 'lz4'> = { 0: 'none', 1: 'lz4' };

export interface MemberEntry {
  /** Extension: the member's name after the key's dot (`seg.png`). */
  ext: string;
  /** Byte offset of the stored bytes, relative to the start of the sample span. */
  offset: number;
  /** Original (decompressed) size. */
  size: number;
  /** Bytes as stored in the shard (= size when codec is none). */
  storedSize: number;
  codec: CodecId;
  /** CRC32C of the original bytes. */
  crc32c: number;
}

export interface IndexEntry {
  key: string;
  /** Shard number: position in the shard table. */
  shard: number;
  /** Absolute byte offset of the span in the shard: where the first member's stored bytes start. */
  offset: number;
  /** Span length: from the first member's start to the last member's end; one read fetches every member. */
  length: number;
  members: MemberEntry[];
}

/** Span length implied by the members (the index does not store it). */
export function spanLength(members: readonly MemberEntry[]): number {
  const last = members[members.length - 1];
  return last === undefined ? 0 : last.offset + last.storedSize;
}
