/**
 * Reading one member piece by piece, for members too large to hold (issue 26, item 3: a 9 GiB member of an adopted
 * tar). `get --out`, `get` to stdout and `extract` write such a member as it is read; its CRC32C is checked at the
 * end, and a file output is renamed into place only then (see replaceFileStreamed), so damaged bytes never land
 * under the member's name. `ds.get` still returns members whole: one larger than a buffer is TOO_LARGE there.
 */
import buffer from 'node:buffer';
import { crc32c, crc32cHex } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import { lz4DecompressMember } from '../../formats/lz4.js';
import { maxGatheredSpanBytes, verifyChunkBytes } from '../verify/member-stream.js';
import type { Dataset } from './dataset.js';

/** Whether a sample is better read member by member as a stream: its span is past {@link maxGatheredSpanBytes}. */
export function shouldStream(entry: IndexEntry): boolean {
  return entry.length > maxGatheredSpanBytes();
}

/**
 * Reads `member` of `entry` in pieces of at most 8 MiB and hands each to `sink` (awaited; the piece's memory is
 * reused after), then checks the CRC32C of all of them: CHECKSUM when it differs, after the pieces were handed on
 * (callers that write files write them under a temporary name). An LZ4 member is read whole (shardkit compressed it
 * from one buffer); TOO_LARGE when it could not be.
 */
export async function streamMember(ds: Dataset, entry: IndexEntry, member: MemberEntry, sink: (piece: Uint8Array) => void | Promise<void>): Promise<void> {
  const at = entry.offset + member.offset;
  const where = `sample ${JSON.stringify(entry.key)} member ${JSON.stringify(member.ext)} (${ds.shardName(entry.shard)} byte ${at})`;
  // bounds only: the memory guard (maxMemberBytes) is for members read whole
  const shard = ds.shards[entry.shard];
  if (shard === undefined || at + member.storedSize > shard.bytes || member.offset + member.storedSize > entry.length) {
    throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${where}: points outside its shard; run \`shardkit verify\``, { key: entry.key });
  }
  if (member.codec === Codec.lz4) {
    if (member.storedSize > buffer.constants.MAX_LENGTH || member.size > buffer.constants.MAX_LENGTH) {
      throw new ShardkitError(ErrorCodes.TOO_LARGE, `${where}: ${member.size} bytes compressed with LZ4, more than one buffer holds; it cannot be decompressed here`, { key: entry.key });
    }
    const bytes = lz4DecompressMember(await ds.readShardRange(entry.shard, at, member.storedSize), member.size, where);
    checkCrc(crc32c(bytes), member, where, entry.key, ds, entry.shard);
    await sink(bytes);
    return;
  }
  const pieceBytes = verifyChunkBytes();
  let crc = 0;
  for (let off = 0; off < member.storedSize; ) {
    const n = Math.min(pieceBytes, member.storedSize - off);
    const piece = await ds.readShardRange(entry.shard, at + off, n);
    crc = crc32c(piece, crc);
    await sink(piece);
    off += n;
  }
  checkCrc(crc, member, where, entry.key, ds, entry.shard);
}

function checkCrc(crc: number, member: MemberEntry, where: string, key: string, ds: Dataset, shard: number): void {
  if (crc >>> 0 === member.crc32c >>> 0) return;
  // read from a copy in the shard cache, the damage may be the copy's: it is checked whole before its next use
  ds.cache?.suspect(shard);
  throw new ShardkitError(ErrorCodes.CHECKSUM, `${where}: checksum mismatch (CRC32C ${crc32cHex(crc)}, the index says ${crc32cHex(member.crc32c)}), the stored bytes are damaged; run \`shardkit verify\``, { key });
}
