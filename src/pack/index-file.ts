/**
 * Writes an index file from entries in key order: B+-tree pages streamed to their page offsets, then the shard
 * table, then the header into page 0; under a temporary name, renamed into place when complete.
 */
import fs from 'node:fs';
import { BTreeBuilder } from '../../formats/btree-builder.js';
import { crc32c } from '../../formats/checksum.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { encodeIndexHeader, encodeShardTable, type Layout, type ShardRecord } from '../../formats/index-layout.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { fsCall } from './fs-errors.js';

export interface WrittenIndex {
  bytes: number;
  /** CRC32C of the header: the index's identity in the manifest. */
  headerCrc: number;
  entryCount: number;
  memberCount: number;
  spanBytes: number;
  /** Sums over all members: original and stored bytes. */
  memberBytes: number;
  storedBytes: number;
}

export function writeIndexFile(
  finalPath: string,
  entries: Iterable<IndexEntry>,
  shards: readonly ShardRecord[],
  layout: Layout,
  pageSize: number,
  sync: boolean,
): WrittenIndex {
  const tmp = `${finalPath}.tmp`;
  const fd = fsCall('create', tmp, () => fs.openSync(tmp, 'w'));
  try {
    const write = (data: Uint8Array, position: number): void => {
      let off = 0;
      while (off < data.length) off += fsCall('write', tmp, () => fs.writeSync(fd, data, off, data.length - off, position + off));
    };
    const builder = new BTreeBuilder(pageSize, (pageNo, page) => write(page, pageNo * pageSize));
    let memberBytes = 0;
    let storedBytes = 0;
    for (const entry of entries) {
      for (const m of entry.members) {
        memberBytes += m.size;
        storedBytes += m.storedSize;
      }
      const shard = shards[entry.shard];
      if (shard === undefined || entry.offset + entry.length > shard.bytes) {
        throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `sample ${JSON.stringify(entry.key)} points outside shard ${entry.shard}`, { key: entry.key });
      }
      builder.add(entry);
    }
    const tree = builder.finish();
    const table = encodeShardTable(shards);
    const tableOffset = tree.pageCount * pageSize;
    write(table, tableOffset);
    const { page, crc } = encodeIndexHeader({
      layout,
      pageSize,
      entryCount: tree.entryCount,
      rootPage: tree.rootPage,
      height: tree.height,
      pageCount: tree.pageCount,
      firstLeaf: tree.firstLeaf,
      shardCount: shards.length,
      tableCrc: crc32c(table),
      tableOffset,
      tableLength: table.length,
      memberCount: tree.memberCount,
      spanBytes: tree.spanBytes,
    });
    write(page, 0);
    if (sync) fsCall('sync', tmp, () => fs.fsyncSync(fd));
    fsCall('close', tmp, () => fs.closeSync(fd));
    fsCall('rename', tmp, () => fs.renameSync(tmp, finalPath));
    return { bytes: tableOffset + table.length, headerCrc: crc, entryCount: tree.entryCount, memberCount: tree.memberCount, spanBytes: tree.spanBytes, memberBytes, storedBytes };
  } catch (err) {
    try {
      fs.closeSync(fd);
    } catch {
      // closed above
    }
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}
