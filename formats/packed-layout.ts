/**
 * The packed layout, for tiny samples: a 16-byte shard header, then members back to back with no per-member
 * header and no alignment. The index is the only metadata (SPEC "Packed layout").
 */
import { ErrorCodes, ShardkitError } from './errors.js';

/** `\x89SKPAK\r\n`, same construction as the index magic. */
export const PACKED_MAGIC = Uint8Array.of(0x89, 0x53, 0x4b, 0x50, 0x41, 0x4b, 0x0d, 0x0a);
export const PACKED_FORMAT_VERSION = 1;
export const PACKED_HEADER_BYTES = 16;
export const PACKED_HDR_VERSION = 8; // u32 LE
export const PACKED_HDR_RESERVED = 12; // u32, zero

export function encodePackedHeader(): Uint8Array {
  const out = new Uint8Array(PACKED_HEADER_BYTES);
  out.set(PACKED_MAGIC, 0);
  new DataView(out.buffer).setUint32(PACKED_HDR_VERSION, PACKED_FORMAT_VERSION, true);
  return out;
}

export function checkPackedHeader(bytes: Uint8Array, file: string): void {
  if (bytes.length < PACKED_HEADER_BYTES) throw new ShardkitError(ErrorCodes.TRUNCATED, `${file}: packed shard shorter than its header`, { file });
  for (let i = 0; i < PACKED_MAGIC.length; i++) {
    if (bytes[i] !== PACKED_MAGIC[i]) throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${file}: not a shardkit packed shard (wrong magic)`, { file });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, PACKED_HEADER_BYTES);
  const version = view.getUint32(PACKED_HDR_VERSION, true);
  if (version > PACKED_FORMAT_VERSION) {
    throw new ShardkitError(ErrorCodes.UNSUPPORTED_VERSION, `${file}: packed shard version ${version} is newer than this shardkit reads`, { file });
  }
  if (version === 0) throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${file}: packed shard header has version 0 (versions start at 1)`, { file });
  if (view.getUint32(PACKED_HDR_RESERVED, true) !== 0) throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${file}: packed shard header has a non-zero reserved field`, { file });
}
