/**
 * The loader's lone samples of one shard: samples read alone (no neighbour shares their read), each one
 * uncompressed member. Their copies out of the shard's memory map go to the native addon in one call per arena slab
 * (NativeAddon.copyMany) instead of one call each, every copy with its member's CRC32C in the same pass when
 * verifying: a batch pays the Node-API entry and the JS around a read once per slab, not once per sample.
 */
import type { Sample } from '../../formats/sample.js';
import type { FileSource } from '../io/file-source.js';
import { COPY_MANY_ROW } from '../native/native.js';

import { entryOf, type RecordRef } from './record-ref.js';
import { decodeRecord, decodeSpan, type DecodeContext } from './sample-decode.js';

/** Where the copies go: a ReadArena (owned bytes), or a view-mode slab carved in order (SlabCarver). */
export interface ViewSource {
  take(length: number): Uint8Array;
}

/**
 * Views carved one after another from one slab (the loader's view mode: the batch's bytes live in a pooled slab until
 * the next batch is asked for), each start 8-byte aligned as ReadArena's are. The slab must hold carvedBytes(lengths).
 */
export class SlabCarver implements ViewSource {
  private used = 0;

  constructor(private readonly slab: Uint8Array) {}

  take(length: number): Uint8Array {
    const view = new Uint8Array(this.slab.buffer, this.slab.byteOffset + this.used, length);
    this.used += (length + 7) & ~7;
    return view;
  }
}

/** Bytes a SlabCarver needs for samples of `length` bytes each, in all. */
export function carvedBytes(length: number): number {
  return (length + 7) & ~7;
}

/** The copy rows (see NativeAddon.copyMany), grown to the largest batch; calls are synchronous, so one will do. */
let spec = new Float64Array(64 * COPY_MANY_ROW);

/**
 * Reads `refs[i]` for each i in `requests` (all of `source`'s shard, each one uncompressed member) into views from
 * `arena` and decodes them into `samples[i]` with `ctx` (verifying when `ctx.verify`), from their leaves' columns.
 * When the shard is not mapped or a copy fails, each sample is read alone (readIntoSyncCrc32c), which throws the
 * failure for the sample it concerns.
 */
export function readLoneSamples(source: FileSource, arena: ViewSource, refs: readonly RecordRef[], requests: readonly number[], samples: Sample[], ctx: DecodeContext): void {
  const verify = ctx.verify;
  const views = new Array<Uint8Array>(requests.length);
  if (spec.length < requests.length * COPY_MANY_ROW) spec = new Float64Array(requests.length * COPY_MANY_ROW);
  // rows [first, end) all target one buffer: an arena slab, or a large sample's own buffer
  let first = 0;
  let buffer: ArrayBufferLike | undefined;
  const flush = (end: number): void => {
    if (end === first) return;
    const target = new Uint8Array(buffer as ArrayBufferLike);
    if (!source.readManyIntoSyncCrc32c(target, first === 0 ? spec : spec.subarray(first * COPY_MANY_ROW), end - first)) {
      for (let i = first; i < end; i++) {
        const row = i * COPY_MANY_ROW; // position, length, target offset, CRC start, CRC length, CRC out
        spec[row + 5] = source.readIntoSyncCrc32c(views[i] as Uint8Array, 0, spec[row + 1] as number, spec[row] as number, spec[row + 3] as number, spec[row + 4] as number) ?? Number.NaN;
      }
    }
    first = end;
  };
  for (let i = 0; i < requests.length; i++) {
    const ref = refs[requests[i] as number] as RecordRef;
    const view = arena.take(ref.length);
    if (view.buffer !== buffer) {
      flush(i);
      buffer = view.buffer;
    }
    views[i] = view;
    const row = i * COPY_MANY_ROW;
    spec[row] = ref.offset;
    spec[row + 1] = ref.length;
    spec[row + 2] = view.byteOffset;
    spec[row + 3] = 0; // the member fills the span
    spec[row + 4] = verify ? ref.length : -1; // CRC length; < 0: no checksum
  }
  flush(requests.length);
  for (let i = 0; i < requests.length; i++) {
    const ref = refs[requests[i] as number] as RecordRef;
    const view = views[i] as Uint8Array;
    const read = spec[i * COPY_MANY_ROW + 5] as number;
    const crc = Number.isNaN(read) ? undefined : read;
    samples[requests[i] as number] = decodeRecord(ref.leaf, ref.slot, view, verify, ctx.crc32c, crc) ?? decodeSpan(entryOf(ref), view, ctx, crc);
  }
}
