/**
 * The index of an appended dataset: the old index's entries, read once in key order (leaf after leaf, each page
 * once), merged with the new samples' entries into a fresh B+-tree. New entries point at shards numbered after the
 * old ones. A key in both is a duplicate: the merge reports it and keeps the old entry.
 */
import fs from 'node:fs';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { decodePage } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import type { IndexReader } from '../read/index-reader.js';
import { fsCall } from './fs-errors.js';
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

/**
 * The entries of the local index file `file` in key order, a leaf page at a time, read along the leaf links with one
 * positional read per page and decoded without a page cache: a scan of a million entries through the reader's cache
 * kept its decoded pages alive long enough to cost more in garbage collection than in decoding. `expected` is the
 * header's entry count: a chain that ends early or runs long is CORRUPT_INDEX.
 */
export function* leafEntriesOfFile(file: string, header: { pageSize: number; firstLeaf: number; pageCount: number; entryCount: number }): Generator<readonly IndexEntry[]> {
  if (header.entryCount === 0) return;
  const fd = fsCall('open', file, () => fs.openSync(file, 'r'));
  try {
    const page = new Uint8Array(header.pageSize);
    let seen = 0;
    for (let pageNo = header.firstLeaf; seen < header.entryCount; ) {
      if (pageNo === 0 || pageNo >= header.pageCount) break;
      const n = fsCall('read', file, () => fs.readSync(fd, page, 0, page.length, pageNo * header.pageSize));
      const leaf = decodePage(page.subarray(0, n), pageNo, file, true);
      if (leaf.type !== 'leaf') break;
      seen += leaf.entries.length;
      yield leaf.entries;
      pageNo = leaf.next;
    }
    if (seen !== header.entryCount) {
      throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${file}: its leaf chain holds ${seen} entries, its header ${header.entryCount}; run shardkit verify on the dataset`, { file });
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** A cursor over batches of entries. */
class Cursor {
  private batch: readonly IndexEntry[] = [];
  private at = 0;
  done = false;

  constructor(private readonly batches: AsyncIterator<readonly IndexEntry[]> | Iterator<readonly IndexEntry[]>) {}

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
  old: AsyncIterable<readonly IndexEntry[]> | Iterable<readonly IndexEntry[]>,
  added: AsyncIterable<readonly IndexEntry[]>,
  shardBase: number,
  out: IndexFileWriter,
  stopAtDuplicate: boolean,
): Promise<MergeCounts> {
  const counts: MergeCounts = { old: 0, added: 0, duplicates: [] };
  const a = new Cursor(Symbol.asyncIterator in old ? old[Symbol.asyncIterator]() : old[Symbol.iterator]());
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
