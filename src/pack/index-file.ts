/**
 * Writes an index file from entries in key order: B+-tree pages streamed to their page offsets, then the shard
 * table, then the header into page 0; under a temporary name, renamed into place when complete.
 */
import fs from 'node:fs';
import { BTreeBuilder, type BuilderSnapshot } from '../../formats/btree-builder.js';
import { crc32c } from '../../formats/checksum.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { encodeIndexHeader, encodeShardTable, type Layout, type ShardRecord } from '../../formats/index-layout.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { decodePage } from '../../formats/index-page.js';
import { fsCall } from './fs-errors.js';
import { createFresh, tempPathFor } from './replace-file.js';

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
  const index = new IndexFileWriter(finalPath, layout, pageSize);
  try {
    for (const entry of entries) {
      const shard = shards[entry.shard];
      if (shard === undefined || entry.offset + entry.length > shard.bytes) {
        throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `sample ${JSON.stringify(entry.key)} points outside shard ${entry.shard}`, { key: entry.key });
      }
      index.add(entry);
    }
  } catch (err) {
    index.abort();
    throw err;
  }
  return index.finish(shards, sync);
}

/** Where an {@link IndexFileWriter} stands between two entries: enough to continue it after a restart. */
export interface IndexCheckpoint {
  builder: BuilderSnapshot;
  memberBytes: number;
  storedBytes: number;
}

export interface IndexFileWriterOptions {
  /** The temporary file (default: a random name next to finalPath, see tempPathFor). */
  tmpPath?: string;
  /** Continue the temporary file from this checkpoint (taken by {@link IndexFileWriter.checkpoint}). */
  resume?: IndexCheckpoint;
}

/**
 * An index file written as its entries arrive (in key order): B+-tree pages go to the temporary file as they fill,
 * so a writer whose entries come sorted builds its index while it writes shards, not after. `finish` adds the
 * shard table and the header and renames the file into place; `abort` removes it. `checkpoint` records where it
 * stands, for a writer resumed after a restart; `drain` gives the entries back when they stop coming in order.
 */
export class IndexFileWriter {
  private readonly tmp: string;
  private readonly fd: number;
  private readonly builder: BTreeBuilder;
  private memberBytes = 0;
  private storedBytes = 0;
  private closed = false;

  constructor(
    private readonly finalPath: string,
    private readonly layout: Layout,
    private readonly pageSize: number,
    options: IndexFileWriterOptions = {},
  ) {
    this.tmp = options.tmpPath ?? tempPathFor(finalPath);
    const sink = (pageNo: number, page: Uint8Array): void => this.write(page, pageNo * pageSize);
    const resume = options.resume;
    if (resume === undefined) {
      this.fd = createFresh(this.tmp, true);
      this.builder = new BTreeBuilder(pageSize, sink);
      return;
    }
    this.builder = BTreeBuilder.resume(pageSize, sink, resume.builder);
    if (!Number.isSafeInteger(resume.memberBytes) || !Number.isSafeInteger(resume.storedBytes)) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, 'the index checkpoint to resume from is damaged; start over with --force');
    }
    this.memberBytes = resume.memberBytes;
    this.storedBytes = resume.storedBytes;
    this.fd = fsCall('open', this.tmp, () => fs.openSync(this.tmp, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW));
  }

  /** Adds the next entry; keys must increase (DUPLICATE_KEY otherwise). `keyBytes`: its key's UTF-8, if at hand. */
  add(entry: IndexEntry, keyBytes?: Uint8Array): void {
    this.builder.add(entry, keyBytes);
    for (const m of entry.members) {
      this.memberBytes += m.size;
      this.storedBytes += m.storedSize;
    }
  }

  /**
   * Where the index stands, for a writer resumed later with `{ resume }`; the pages written so far stay in the
   * temporary file (fsynced first with `sync`). A resumed writer rewrites the pages open at the checkpoint and
   * overwrites or truncates whatever was written after it.
   */
  checkpoint(sync: boolean): IndexCheckpoint {
    if (sync) fsCall('sync', this.tmp, () => fs.fsyncSync(this.fd));
    return { builder: this.builder.snapshot(), memberBytes: this.memberBytes, storedBytes: this.storedBytes };
  }

  /**
   * The entries added so far, in key order, read back from the finished tree's leaves; the temporary file is
   * removed once they have all been read. For a writer whose entries stopped coming in key order.
   */
  *drain(): Generator<IndexEntry> {
    try {
      const tree = this.builder.finish();
      const page = new Uint8Array(this.pageSize);
      for (let pageNo = tree.firstLeaf; pageNo !== 0; ) {
        const n = fsCall('read', this.tmp, () => fs.readSync(this.fd, page, 0, page.length, pageNo * this.pageSize));
        const leaf = decodePage(page.subarray(0, n), pageNo, this.tmp, true);
        if (leaf.type !== 'leaf') throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${this.tmp}: page ${pageNo} is not a leaf`, { file: this.tmp });
        yield* leaf.entries;
        pageNo = leaf.next;
      }
    } finally {
      this.abort();
    }
  }

  finish(shards: readonly ShardRecord[], sync: boolean): WrittenIndex {
    try {
      const tree = this.builder.finish();
      const table = encodeShardTable(shards);
      const tableOffset = tree.pageCount * this.pageSize;
      this.write(table, tableOffset);
      // a resumed writer's file may hold pages written after its checkpoint, past the end
      fsCall('truncate', this.tmp, () => fs.ftruncateSync(this.fd, tableOffset + table.length));
      const { page, crc } = encodeIndexHeader({
        layout: this.layout,
        pageSize: this.pageSize,
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
      this.write(page, 0);
      if (sync) fsCall('sync', this.tmp, () => fs.fsyncSync(this.fd));
      this.closed = true;
      fsCall('close', this.tmp, () => fs.closeSync(this.fd));
      fsCall('rename', this.tmp, () => fs.renameSync(this.tmp, this.finalPath));
      return { bytes: tableOffset + table.length, headerCrc: crc, entryCount: tree.entryCount, memberCount: tree.memberCount, spanBytes: tree.spanBytes, memberBytes: this.memberBytes, storedBytes: this.storedBytes };
    } catch (err) {
      // the file stays: a live index is what a resume continues from its last checkpoint (a full disk here made
      // every --resume refuse); an index built at the end is a `.tmp` the next write clears
      this.close();
      throw err;
    }
  }

  /** Closes the temporary file, leaving it for a writer resumed from a checkpoint. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed
    }
  }

  /** Closes and removes the temporary file. */
  abort(): void {
    this.close();
    fs.rmSync(this.tmp, { force: true });
  }

  private write(data: Uint8Array, position: number): void {
    let off = 0;
    while (off < data.length) off += fsCall('write', this.tmp, () => fs.writeSync(this.fd, data, off, data.length - off, position + off));
  }
}
