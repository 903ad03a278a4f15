/** Builds an index in memory (pages in an array) and reads it back through the pure codecs: no files involved. */
import { BTreeBuilder } from '../../formats/btree-builder.js';
import { runSync, type PageOp, type TreeInfo } from '../../formats/btree-reader.js';
import { crc32c } from '../../formats/checksum.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { decodeIndexHeader, encodeIndexHeader, encodeShardTable } from '../../formats/index-layout.js';
import { decodePage, type Page } from '../../formats/index-page.js';

export interface MemoryIndex {
  bytes: Uint8Array;
  tree: TreeInfo;
  run<T>(op: PageOp<T>): T;
  /** The page loader behind `run`, for the synchronous descents (seekLeafSync, seekPositionSync). */
  load(pageNo: number): Page;
}

export function buildMemoryIndex(entries: Iterable<IndexEntry>, pageSize = 4096, shardBytes = 2 ** 40): MemoryIndex {
  const pages: Uint8Array[] = [];
  const b = new BTreeBuilder(pageSize, (n, page) => {
    pages[n] = page.slice();
  });
  for (const e of entries) b.add(e);
  const t = b.finish();
  const table = encodeShardTable([{ file: 's0', bytes: shardBytes, samples: t.entryCount, crc32c: 0, fingerprint: 0 }]);
  const { page } = encodeIndexHeader({
    layout: 'tar', pageSize, entryCount: t.entryCount, rootPage: t.rootPage, height: t.height, pageCount: t.pageCount,
    firstLeaf: t.firstLeaf, shardCount: 1, tableCrc: crc32c(table), tableOffset: t.pageCount * pageSize, tableLength: table.length,
    memberCount: t.memberCount, spanBytes: t.spanBytes,
  });
  pages[0] = page;
  const bytes = new Uint8Array(t.pageCount * pageSize + table.length);
  pages.forEach((p, i) => bytes.set(p, i * pageSize));
  bytes.set(table, t.pageCount * pageSize);
  return readMemoryIndex(bytes);
}

export function readMemoryIndex(bytes: Uint8Array): MemoryIndex {
  const header = decodeIndexHeader(bytes, 'mem', bytes.length);
  const tree: TreeInfo = { header, file: 'mem' };
  const load = (n: number): Page => decodePage(bytes.subarray(n * header.pageSize, (n + 1) * header.pageSize), n, 'mem');
  return { bytes, tree, run: (op) => runSync(op, load), load };
}

/** A plausible entry for `key`: one or two members, offsets growing with `i`. */
export function entryFor(key: string, i: number): IndexEntry {
  const size = (i * 7919) % 5000;
  const members = [{ ext: 'jpg', offset: 0, size, storedSize: size, codec: 0 as const, crc32c: (i * 2654435761) >>> 0 }];
  if (i % 3 === 0) members.push({ ext: 'cls', offset: size + 512, size: 2, storedSize: 2, codec: 0 as const, crc32c: i >>> 0 });
  const last = members[members.length - 1]!;
  return { key, shard: 0, offset: i * 6000, length: last.offset + last.storedSize, members };
}
