/**
 * Key ranges over the index: the entries between two keys and/or under a prefix, forward or reverse, lazily. A
 * forward scan descends once to its first leaf and then follows the leaf links; a reverse scan descends per leaf.
 */
import type { IndexEntry } from '../../formats/index-entry.js';
import { entryAt, type LeafPage } from '../../formats/index-page.js';
import { compareKeys, prefixEnd } from '../../formats/key-order.js';
import type { IndexReader } from './index-reader.js';
import { invalidArg } from './shuffle/shuffle-args.js';

export interface KeyRange {
  /** First key (inclusive). */
  start?: string;
  /** Last key (exclusive). */
  end?: string;
  /** Only keys that start with this (combines with start/end). */
  prefix?: string;
  limit?: number;
  reverse?: boolean;
}

/** Checks a range given by a caller: strings for the keys, a whole number for limit, a boolean for reverse. */
export function checkKeyRange(range: unknown): KeyRange {
  const bad = (name: string, expected: string, value: unknown): never => {
    throw invalidArg(expected, name, value);
  };
  if (typeof range !== 'object' || range === null) return bad('the key range', 'an object { start, end, prefix, limit, reverse }', range);
  const r = range as Record<string, unknown>;
  for (const name of ['start', 'end', 'prefix']) if (r[name] !== undefined && typeof r[name] !== 'string') bad(name, 'a string', r[name]);
  if (r.limit !== undefined && !(typeof r.limit === 'number' && Number.isSafeInteger(r.limit) && r.limit >= 0)) bad('limit', 'a whole number of at least 0', r.limit);
  if (r.reverse !== undefined && typeof r.reverse !== 'boolean') bad('reverse', 'a boolean', r.reverse);
  return r as KeyRange;
}

/** Index entries in key order within `range`, with their positions. */
export async function* rangeEntries(reader: IndexReader, range: KeyRange): AsyncGenerator<IndexEntry & { position: number }> {
  const start = maxKey(range.start, range.prefix);
  const lo = start === undefined ? 0 : await reader.lowerBound(start);
  const end = minKey(range.end, range.prefix === undefined ? undefined : prefixEnd(range.prefix));
  const hi = end === undefined ? reader.size : await reader.lowerBound(end);
  let remaining = range.limit ?? Number.POSITIVE_INFINITY;
  if (!range.reverse) {
    // one descent to the first leaf, then along the leaf links
    let hit: { leaf: LeafPage; base: number; index: number } | undefined = lo < hi ? await reader.leafAt(lo) : undefined;
    while (hit !== undefined && remaining > 0) {
      const { leaf, base, index } = hit;
      const stop = Math.min(leaf.keys.length, hi - base);
      for (let i = index; i < stop && remaining > 0; i++, remaining--) yield { ...entryAt(leaf, i), position: base + i };
      const next = base + leaf.keys.length;
      hit = next < hi && remaining > 0 ? { leaf: await reader.nextLeaf(leaf), base: next, index: 0 } : undefined;
    }
    return;
  }
  let pos = hi - 1;
  while (pos >= lo && remaining > 0) {
    const { leaf, base, index } = await reader.leafAt(pos);
    const from = Math.max(0, lo - base);
    for (let i = index; i >= from && remaining > 0; i--, remaining--) yield { ...entryAt(leaf, i), position: base + i };
    pos = base + from - 1;
  }
}

function maxKey(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return compareKeys(a, b) >= 0 ? a : b;
}

function minKey(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return compareKeys(a, b) <= 0 ? a : b;
}
