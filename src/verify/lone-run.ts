/**
 * verify's hot path for tiny samples: from one leaf's records, the run of samples of one shard that are each one
 * member stored as is (`loneCrc` >= 0), inside the chunk of the shard read last, each after the span before it,
 * and intact (their CRC32C matches). The first record it does not take goes to ShardCheck.sample, which checks it
 * and names what is wrong. The native addon runs the same loop in C (src/native/verify-scan.c) over a LeafScan's
 * arrays; this one is the fallback and the reference.
 *
 * `io` (a Float64Array of TakeLonesIo.LENGTH) carries the numbers both ways: in, the records [FROM, COUNT), the
 * shard, POS (the chunk's offset in the shard), PREV_END (the end of the last span checked) and LAST (the offset of
 * the last sample fed); out, NEXT (the first record not taken), PREV_END and LAST after the run, and BYTES taken.
 */
import { crc32cSpan } from '../../formats/crc32c-span.js';
import { TakeLonesIo, type NativeAddon } from '../native/native.js';
import type { LeafRecords } from './check-index.js';
import { LeafScan } from './leaf-scan.js';

/** Takes the run (see above), natively when `native` is given and the records are a LeafScan's. */
export function takeLoneRun(chunk: Uint8Array, r: LeafRecords, io: Float64Array, native: NativeAddon | undefined): void {
  if (native !== undefined && r instanceof LeafScan) native.verifyTakeLones(chunk, r.records, io);
  else takeLoneRunJs(chunk, r, io);
}

/** {@link takeLoneRun} in JavaScript. */
export function takeLoneRunJs(chunk: Uint8Array, r: LeafRecords, io: Float64Array): void {
  const count = io[TakeLonesIo.COUNT] as number;
  const shard = io[TakeLonesIo.SHARD] as number;
  const pos = io[TakeLonesIo.POS] as number;
  const end = pos + chunk.length;
  let prevEnd = io[TakeLonesIo.PREV_END] as number;
  let last = io[TakeLonesIo.LAST] as number;
  let bytes = 0;
  let i = io[TakeLonesIo.FROM] as number;
  for (; i < count; i++) {
    const off = r.offset[i] as number;
    const len = r.length[i] as number;
    const crc = r.loneCrc[i] as number;
    if (r.shard[i] !== shard || crc < 0 || len === 0 || off < prevEnd || off < pos || off + len > end || off < last) break;
    if (crc32cSpan(chunk, off - pos, off - pos + len) !== crc) break;
    prevEnd = off + len;
    last = off;
    bytes += len;
  }
  io[TakeLonesIo.NEXT] = i;
  io[TakeLonesIo.PREV_END] = prevEnd;
  io[TakeLonesIo.LAST] = last;
  io[TakeLonesIo.BYTES] = bytes;
}
