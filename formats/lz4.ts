/**
 * Per-member LZ4 in the standard LZ4 frame format (what the `lz4` command writes), so a member extracted from a
 * tar shard as `x.jpg.lz4` decompresses with `lz4 -d`. Each member is its own frame: random access stays one read.
 * Before decompressing, the frame's block list is walked and bounded by the size the index recorded, so a
 * hostile frame cannot expand beyond `expectedSize` + one block (no decompression bombs).
 */
import { createRequire } from 'node:module';
import { ErrorCodes, ShardkitError } from './errors.js';

type Lz4Napi = { compressFrameSync(data: Buffer): Buffer; decompressFrameSync(data: Buffer): Buffer };
let lz4: Lz4Napi | undefined;

/** lz4-napi, loaded on first use: packs and reads without compression never pay for it. */
function lz4Napi(): Lz4Napi {
  return (lz4 ??= createRequire(import.meta.url)('lz4-napi') as Lz4Napi);
}

export const LZ4_FRAME_MAGIC = 0x184d2204;
const FLG_CONTENT_SIZE = 0x08;
const FLG_CONTENT_CHECKSUM = 0x04;
const FLG_BLOCK_CHECKSUM = 0x10;
const FLG_DICT_ID = 0x01;
const BLOCK_UNCOMPRESSED = 0x80000000;
/** BD byte bits 4-6 -> maximum block size. */
const BLOCK_MAX_BYTES: Record<number, number> = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };

/** A whole LZ4 frame decompressed, with no bound of its own: the caller bounds the frame first (the adopt scanner, with lz4ContentBound). */
export function lz4DecompressFrame(frame: Uint8Array): Uint8Array {
  return lz4Napi().decompressFrameSync(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
}

export function lz4CompressMember(data: Uint8Array): Uint8Array {
  return lz4Napi().compressFrameSync(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
}

/** Decompresses one member frame to exactly `expectedSize` bytes, or throws CORRUPT_SHARD naming `where`. */
export function lz4DecompressMember(frame: Uint8Array, expectedSize: number, where: string | (() => string)): Uint8Array {
  const place = (): string => (typeof where === 'string' ? where : where());
  const fail = (why: string): never => {
    throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${place()}: LZ4 frame ${why}`);
  };
  const v = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  if (frame.length < 7 || v.getUint32(0, true) !== LZ4_FRAME_MAGIC) fail('has a wrong magic number');
  const flg = frame[4] as number;
  const bd = frame[5] as number;
  if ((flg >> 6) !== 1) fail('has an unsupported version');
  if (flg & FLG_DICT_ID) fail('needs a dictionary');
  const blockMax = BLOCK_MAX_BYTES[(bd >> 4) & 7] ?? fail('has an invalid block size');
  let pos = 6 + (flg & FLG_CONTENT_SIZE ? 8 : 0) + 1;
  let blocks = 0;
  for (;;) {
    if (pos + 4 > frame.length) fail('is truncated');
    const word = v.getUint32(pos, true);
    pos += 4;
    if (word === 0) break;
    const size = word & ~BLOCK_UNCOMPRESSED;
    if (size > blockMax) fail('has a block larger than its maximum');
    pos += size + (flg & FLG_BLOCK_CHECKSUM ? 4 : 0);
    blocks++;
  }
  if (pos + (flg & FLG_CONTENT_CHECKSUM ? 4 : 0) !== frame.length) fail('has trailing or missing bytes');
  if (blocks > Math.ceil(expectedSize / blockMax)) fail(`has more blocks than ${expectedSize} bytes need`);
  let out: Buffer;
  try {
    out = lz4Napi().decompressFrameSync(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
  } catch (cause) {
    throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${place()}: LZ4 frame does not decompress`, { cause });
  }
  if (out.length !== expectedSize) fail(`decompresses to ${out.length} bytes, the index says ${expectedSize}`);
  return out;
}
