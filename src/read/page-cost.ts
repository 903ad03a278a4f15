/**
 * What a decoded index page costs in memory (V8 heap and typed-array stores), estimated from what it holds: the page
 * cache counts this against `pageCacheBytes`, not the page's bytes on disk. A leaf of tiny samples decodes to ~15x
 * its page (~140 bytes a record against ~9): a budget that counted page bytes held ~1.2 GB of heap for 64 MiB.
 *
 * Calibrated (Node 20, x64, no pointer compression) with bench/page-cost.mjs: it decodes leaves and holds them with
 * their key tables, then compares what the process holds more (process.memoryUsage() heapUsed + external, after a
 * full GC) with this estimate. 1,984 leaves of a 10^6-sample index (24-byte keys, one member, ~440 records a leaf):
 * 139.6 bytes a record measured, 139.4 estimated (56 in the record's row, ~64 for a key: its slot, a sliced string
 * and its share of the leaf's key text, ~18 for the key table). Estimate / measured on 150,000 samples: 9-character
 * keys 0.987 (~110 bytes a record), 60-90-character keys with two members 0.994 (~280), 10-character CJK keys 0.989
 * (~126). test/unit/page-cost.test.ts holds it within 0.8-1.25x of the heap.
 */
import type { Page } from '../../formats/index-page.js';

/** A typed array's own objects beyond its bytes: the view, its ArrayBuffer and the backing-store record. */
export const TYPED_ARRAY_OVERHEAD = 200;
/** A plain object or array header (map, properties, elements, length), and a decoded page's own fields. */
export const OBJECT_OVERHEAD = 64;
/** An array's slot for a pointer. */
export const POINTER_BYTES = 8;
/** A string's header when it holds its characters (a copy): 16 bytes, then the characters rounded up to 8. */
export const FLAT_STRING_HEADER = 16;
/**
 * A sliced string: a key of {@link SLICE_MIN_CHARS} characters or more cut out of its leaf's key text (ASCII keys)
 * is 32 bytes and points into that text, whose characters it shares.
 */
export const SLICED_STRING_BYTES = 32;
/** V8 copies a substring shorter than this instead of slicing it (SlicedString::kMinLength). */
export const SLICE_MIN_CHARS = 13;

/**
 * The least a decoded leaf record takes: its row (7 numbers), a key's slot and the smallest string. An index of n
 * records whose n times this exceeds the page cache's budget cannot be cached whole.
 */
export const MIN_DECODED_RECORD_BYTES = 7 * 8 + POINTER_BYTES + FLAT_STRING_HEADER + 8;

/**
 * Bytes a string of `chars` characters costs: one byte a character, or two when `twoByte`. A one-byte string long
 * enough to be a slice of its leaf's key text is counted as the slice and its share of the text (an upper bound
 * for a key decoded alone, which is a copy).
 */
export function stringBytes(chars: number, twoByte: boolean): number {
  if (twoByte) return FLAT_STRING_HEADER + roundUp8(2 * chars);
  return chars < SLICE_MIN_CHARS ? FLAT_STRING_HEADER + roundUp8(chars) : SLICED_STRING_BYTES + chars;
}

/** What a typed array takes: its bytes and its objects (a leaf's key table, counted when it is built). */
export function typedArrayBytes(a: ArrayBufferView | undefined): number {
  return a === undefined ? 0 : TYPED_ARRAY_OVERHEAD + a.byteLength;
}

/** The memory `page` takes as decoded (a leaf's key table when it has one; a leaf's entries are never made in a cache). */
export function decodedPageBytes(page: Page): number {
  let bytes = OBJECT_OVERHEAD + arrayBytes(page.keys.length);
  const twoByte = !page.simple; // keys with characters past U+D7FF are stored two bytes a character
  for (const key of page.keys) bytes += stringBytes(key.length, twoByte || !isOneByte(key));
  if (page.type === 'branch') return bytes + typedArrayBytes(page.children) + typedArrayBytes(page.starts);
  bytes += typedArrayBytes(page.rows) + typedArrayBytes(page.memberRows) + arrayBytes(page.exts.length);
  for (const ext of page.exts) bytes += stringBytes(ext.length, !isOneByte(ext));
  return bytes + typedArrayBytes(page.keyTable);
}

/** An array of `n` pointers. */
function arrayBytes(n: number): number {
  return OBJECT_OVERHEAD + n * POINTER_BYTES;
}

function roundUp8(n: number): number {
  return (n + 7) & ~7;
}

/** Whether V8 can hold `s` one byte a character (Latin-1 only); the regular expression is fast on short strings. */
function isOneByte(s: string): boolean {
  return !TWO_BYTE.test(s);
}

const TWO_BYTE = /[^\u0000-\u00ff]/;
