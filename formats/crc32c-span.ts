/**
 * CRC32C of a byte range, in JavaScript for short ranges: for the 8-112 byte members of a tiny-sample dataset table
 * lookups cost less than the native call and the view that `crc32c` needs (one each per member: most of verify's
 * time per sample once the index is walked). Eight bytes at a time by "slicing-by-8" (eight tables, eight lookups
 * that do not wait on each other), the rest a byte at a time. Longer ranges go to {@link crc32c}.
 */
import { crc32c } from './checksum.js';

/** Ranges up to this many bytes are checksummed here, longer ones natively: about where the two cost the same (100 ns). */
export const JS_CRC_MAX_BYTES = 112;

/** The reflected Castagnoli polynomial (0x1EDC6F41 bit-reversed). */
const CASTAGNOLI_REFLECTED = 0x82f63b78;

/** Table k (at k * 256) gives the CRC of a byte followed by k zero bytes. */
const TABLES = (() => {
  const t = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ CASTAGNOLI_REFLECTED : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    for (let k = 1; k < 8; k++) {
      const c = t[(k - 1) * 256 + n] as number;
      t[k * 256 + n] = (t[c & 0xff] as number) ^ (c >>> 8);
    }
  }
  return t;
})();

/** CRC32C of `bytes[start, end)` (unsigned): the value `crc32c(bytes.subarray(start, end))` gives. */
export function crc32cSpan(bytes: Uint8Array, start: number, end: number): number {
  if (end - start > JS_CRC_MAX_BYTES) return crc32c(bytes.subarray(start, end));
  const t = TABLES;
  let c = -1;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    c ^= (bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24);
    c =
      (t[1792 + (c & 0xff)] as number) ^
      (t[1536 + ((c >>> 8) & 0xff)] as number) ^
      (t[1280 + ((c >>> 16) & 0xff)] as number) ^
      (t[1024 + (c >>> 24)] as number) ^
      (t[768 + (bytes[i + 4] as number)] as number) ^
      (t[512 + (bytes[i + 5] as number)] as number) ^
      (t[256 + (bytes[i + 6] as number)] as number) ^
      (t[bytes[i + 7] as number] as number);
  }
  for (; i < end; i++) c = (t[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return ~c >>> 0;
}
