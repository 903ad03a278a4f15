/**
 * The loader's lone samples of one shard: samples read alone (no neighbour shares their read), each one
 * uncompressed member, verified. Their copies out of the shard's memory map go to the native addon in one call per
 * arena slab (NativeAddon.copyMany) instead of one call each, every copy with its member's CRC32C in the same pass:
 * a batch pays the Node-API entry and the JS around a read once per slab, not once per sample.
 */
import type { IndexEntry, MemberEntry } from '../../formats/index-entry.js';
import type { Sample } from '../../formats/sample.js';
import type { FileSource } from '../io/file-source.js';
import { COPY_MANY_ROW } from '../native/native.js';
import type { ReadArena } from './read-arena.js';
import { decodeRead, type DecodeContext } from './sample-decode.js';

/** The copy rows (see NativeAddon.copyMany), grown to the largest batch; calls are synchronous, so one will do. */
let spec = new Float64Array(64 * COPY_MANY_ROW);

/**
 * Reads `entries[i]` for each i in `requests` (all of `source`'s shard) into views from `arena` and decodes them into
 * `samples[i]` with `ctx` (verifying). When the shard is not mapped or a copy fails, each sample is read alone
 * (readIntoSyncCrc32c), which throws the failure for the sample it concerns.
 */
export function readLoneSamples(source: FileSource, arena: ReadArena, entries: readonly IndexEntry[], requests: readonly number[], samples: Sample[], ctx: DecodeContext): void {
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
        const entry = entries[requests[i] as number] as IndexEntry;
        const only = entry.members[0] as MemberEntry;
        spec[i * COPY_MANY_ROW + 5] = source.readIntoSyncCrc32c(views[i] as Uint8Array, 0, entry.length, entry.offset, only.offset, only.storedSize) ?? Number.NaN;
      }
    }
    first = end;
  };
  for (let i = 0; i < requests.length; i++) {
    const entry = entries[requests[i] as number] as IndexEntry;
    const only = entry.members[0] as MemberEntry;
    const view = arena.take(entry.length);
    if (view.buffer !== buffer) {
      flush(i);
      buffer = view.buffer;
    }
    views[i] = view;
    const row = i * COPY_MANY_ROW;
    spec[row] = entry.offset;
    spec[row + 1] = entry.length;
    spec[row + 2] = view.byteOffset;
    spec[row + 3] = only.offset;
    spec[row + 4] = only.storedSize;
  }
  flush(requests.length);
  for (let i = 0; i < requests.length; i++) {
    const entry = entries[requests[i] as number] as IndexEntry;
    const crc = spec[i * COPY_MANY_ROW + 5] as number;
    samples[requests[i] as number] = decodeRead(entry, entry.members[0], views[i] as Uint8Array, ctx, Number.isNaN(crc) ? undefined : crc);
  }
}
