/** CRC32C (Castagnoli) through @node-rs/crc32's SSE4.2/ARMv8 hardware path: every stored member, page and shard. */
import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/** CRC32C of `data`, continuing from `previous` for streaming use (start with 0). */
export function crc32c(data: Uint8Array, previous = 0): number {
  return nativeCrc32c(data, previous) >>> 0;
}

/** CRC32C as 8 lowercase hex digits, as the manifest stores it. */
export function crc32cHex(value: number): string {
  return (value >>> 0).toString(16).padStart(8, '0');
}
