/**
 * CRC32C of a byte range, in JavaScript for short ranges: for the 8-100 byte members of a tiny-sample dataset a
 * table lookup per byte costs less than the native call and the view that `crc32c` needs (one each per member:
 * most of verify's time per sample once the index is walked). Longer ranges go to {@link crc32c}.
 */
import { crc32c } from './checksum.js';

/** Ranges up to this many bytes are checksummed here; longer ones natively. */
export const JS_CRC_MAX_BYTES = 64;

/** The reflected Castagnoli polynomial (0x1EDC6F41 bit-reversed). */
const CASTAGNOLI_REFLECTED = 0x82f63b78;

const TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ CASTAGNOLI_REFLECTED : c >>> 1;
    t[n] = c;
  }
  return t;
})();

/** CRC32C of `bytes[start, end)` (unsigned): the value `crc32c(bytes.subarray(start, end))` gives. */
export function crc32cSpan(bytes: Uint8Array, start: number, end: number): number {
  if (end - start > JS_CRC_MAX_BYTES) return crc32c(bytes.subarray(start, end));
  let c = -1;
  for (let i = start; i < end; i++) c = (TABLE[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return ~c >>> 0;
}
