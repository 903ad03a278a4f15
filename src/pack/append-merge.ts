/**
 * The index of an appended dataset: the old index's entries, read once in key order (leaf after leaf, each page
 * once), merged with the new samples' entries into a fresh B+-tree. New entries point at shards numbered after the
 * old ones. A key in both is a duplicate: the merge reports it and keeps the old entry.
 */
import type { IndexEntry } from '../../formats/index-entry.js';
import { compareKeys } from '../../formats/key-order.js';
import type { IndexFileWriter } from './index-file.js';

export interface MergeCounts {
  /** Entries read from the old index, and from the new samples' index. */
  old: number;
  added: number;
  /** Keys found in both, in key order (their old entries written). */
  duplicates: string[];
}

/**
 * Feeds `out` the union of `old` and `added` (each in strictly increasing key order) in key order, `added`'s shard
 * numbers moved up by `shardBase`. With `stopAtDuplicate`, returns at the first duplicate (out is then incomplete).
 */
export async function mergeEntries(
  old: AsyncIterable<IndexEntry>,
  added: AsyncIterable<IndexEntry>,
  shardBase: number,
  out: IndexFileWriter,
  stopAtDuplicate: boolean,
): Promise<MergeCounts> {
  const counts: MergeCounts = { old: 0, added: 0, duplicates: [] };
  const a = old[Symbol.asyncIterator]();
  const b = added[Symbol.asyncIterator]();
  let x = await a.next();
  let y = await b.next();
  const moved = (e: IndexEntry): IndexEntry => ({ key: e.key, shard: e.shard + shardBase, offset: e.offset, length: e.length, members: e.members });
  while (!x.done || !y.done) {
    const c = x.done ? 1 : y.done ? -1 : compareKeys(x.value.key, y.value.key);
    if (c === 0) {
      counts.duplicates.push(y.value.key);
      if (stopAtDuplicate) break;
      out.add(x.value);
      counts.old++;
      counts.added++;
      x = await a.next();
      y = await b.next();
    } else if (c < 0) {
      out.add(x.value as IndexEntry);
      counts.old++;
      x = await a.next();
    } else {
      out.add(moved(y.value as IndexEntry));
      counts.added++;
      y = await b.next();
    }
  }
  await a.return?.();
  await b.return?.();
  return counts;
}
