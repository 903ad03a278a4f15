/**
 * The index of an appended dataset: the old index's entries, read once in key order (leaf after leaf, each page
 * once), merged with the new samples' entries into a fresh B+-tree. New entries point at shards numbered after the
 * old ones. A key in both is a duplicate: the merge reports it and keeps the old entry.
 */
import type { IndexEntry } from '../../formats/index-entry.js';
import { compareKeys } from '../../formats/key-order.js';
import type { IndexReader } from '../read/index-reader.js';
import type { IndexFileWriter } from './index-file.js';

export interface MergeCounts {
  /** Entries read from the old index, and from the new samples' index. */
  old: number;
  added: number;
  /** Keys found in both, in key order (their old entries written). */
  duplicates: string[];
}

/** An index's entries in key order, one leaf page's worth at a time (no promise per entry). */
export async function* leafEntries(index: IndexReader): AsyncGenerator<readonly IndexEntry[]> {
  if (index.size === 0) return;
  let leaf = (await index.leafAt(0)).leaf;
  for (let seen = leaf.entries.length; ; seen += leaf.entries.length) {
    yield leaf.entries;
    if (seen >= index.size) return;
    leaf = await index.nextLeaf(leaf);
  }
}

/** A cursor over batches of entries. */
class Cursor {
  private batch: readonly IndexEntry[] = [];
  private at = 0;
  done = false;

  constructor(private readonly batches: AsyncIterator<readonly IndexEntry[]>) {}

  /** The current entry, loading the next batch when this one is used up; undefined at the end. */
  async peek(): Promise<IndexEntry | undefined> {
    while (this.at >= this.batch.length) {
      const next = await this.batches.next();
      if (next.done === true) {
        this.done = true;
        return undefined;
      }
      this.batch = next.value;
      this.at = 0;
    }
    return this.batch[this.at];
  }

  /** Entries from the current one on that sort before `key` (all when undefined), within the current batch. */
  takeBefore(key: string | undefined): readonly IndexEntry[] {
    const from = this.at;
    let to = from;
    if (key === undefined) to = this.batch.length;
    else while (to < this.batch.length && compareKeys((this.batch[to] as IndexEntry).key, key) < 0) to++;
    this.at = to;
    return this.batch.slice(from, to);
  }

  skip(): void {
    this.at++;
  }
}

/**
 * Feeds `out` the union of `old` and `added` (batches of entries, each stream in strictly increasing key order) in
 * key order, `added`'s shard numbers moved up by `shardBase`. With `stopAtDuplicate`, returns at the first
 * duplicate (out is then incomplete).
 */
export async function mergeEntries(
  old: AsyncIterable<readonly IndexEntry[]>,
  added: AsyncIterable<readonly IndexEntry[]>,
  shardBase: number,
  out: IndexFileWriter,
  stopAtDuplicate: boolean,
): Promise<MergeCounts> {
  const counts: MergeCounts = { old: 0, added: 0, duplicates: [] };
  const a = new Cursor(old[Symbol.asyncIterator]());
  const b = new Cursor(added[Symbol.asyncIterator]());
  for (;;) {
    const x = await a.peek();
    const y = await b.peek();
    if (x === undefined && y === undefined) break;
    if (y === undefined || (x !== undefined && compareKeys(x.key, y.key) < 0)) {
      // the old entries before the next new key go as they are, a leaf's run at a time
      const run = a.takeBefore(y?.key);
      for (const e of run) out.add(e);
      counts.old += run.length;
      continue;
    }
    if (x !== undefined && x.key === y.key) {
      counts.duplicates.push(y.key);
      if (stopAtDuplicate) break;
      out.add(x);
      a.skip();
      b.skip();
      counts.old++;
      counts.added++;
      continue;
    }
    out.add({ key: y.key, shard: y.shard + shardBase, offset: y.offset, length: y.length, members: y.members });
    b.skip();
    counts.added++;
  }
  return counts;
}
