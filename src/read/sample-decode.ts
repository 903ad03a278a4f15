/** Turns the bytes of one sample span into a Sample: slice members, decompress, verify checksums. */
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import { lz4DecompressMember } from '../../formats/lz4.js';
import type { Sample } from '../../formats/sample.js';

export interface DecodeContext {
  /** Dataset location, for messages. */
  dataset: string;
  shard: string;
  verify: boolean;
  /** The CRC32C to verify with (the native addon's when built); default formats/checksum.ts crc32c. */
  crc32c?: (bytes: Uint8Array) => number;
  /** The CRC32C of the first member's stored bytes when the read already computed it (uncompressed members only). */
  firstMemberCrc32c?: number | undefined;
}

/**
 * Members of an uncompressed sample are views into `span` (no copy); compressed ones are fresh buffers.
 * With `verify`, a CRC32C mismatch throws SHARDKIT_ERR_CHECKSUM naming dataset, shard, key and offset.
 */
/** LZ4 damage carries the same details as a checksum error: which dataset, shard, sample and offset. */
function decompress(stored: Uint8Array, size: number, where: string, details: { file: string; shard: string; key: string; offset: number }): Uint8Array {
  try {
    return lz4DecompressMember(stored, size, where);
  } catch (err) {
    if (err instanceof ShardkitError) throw new ShardkitError(err.code, err.message, { ...details, cause: err.cause });
    throw err;
  }
}

export function decodeSpan(entry: IndexEntry, span: Uint8Array, ctx: DecodeContext): Sample {
  const members: Record<string, Uint8Array> = {};
  const checksum = ctx.crc32c ?? crc32c;
  const known = ctx.firstMemberCrc32c;
  for (const m of entry.members) {
    const stored = span.subarray(m.offset, m.offset + m.storedSize);
    const bytes = m.codec === Codec.lz4 ? decompress(stored, m.size, where(entry, m, ctx), details(entry, m, ctx)) : stored;
    if (ctx.verify && (known !== undefined && m === entry.members[0] && m.codec === Codec.none ? known : checksum(bytes)) !== m.crc32c) {
      throw new ShardkitError(ErrorCodes.CHECKSUM, `${where(entry, m, ctx)}: checksum mismatch, the stored bytes are damaged; run \`shardkit verify\``, details(entry, m, ctx));
    }
    members[m.ext] = bytes;
  }
  return { key: entry.key, members };
}

/** Built only when something failed: the hot path makes no strings. */
function where(entry: IndexEntry, m: MemberEntry, ctx: DecodeContext): string {
  return `${ctx.dataset}: sample "${entry.key}" member "${m.ext}" (shard ${ctx.shard}, offset ${entry.offset + m.offset})`;
}

function details(entry: IndexEntry, m: MemberEntry, ctx: DecodeContext): { file: string; shard: string; key: string; offset: number } {
  return { file: ctx.dataset, shard: ctx.shard, key: entry.key, offset: entry.offset + m.offset };
}
