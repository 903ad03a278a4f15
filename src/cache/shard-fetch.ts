/**
 * How shard-cache.ts makes a copy: room reserved under the directory-wide lock, evicting what eviction.ts picks; the
 * shard downloaded in chunks into its `.part` file and checked against the index's CRC32C; and a copy's whole-shard
 * CRC32C, read in the same chunks.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import type { FileSource } from '../io/file-source.js';
import { isIndexCopy, scanCache, SPACE_LOCK } from './cache-dir.js';
import { withLock } from './cache-lock.js';
import { removeCopy } from './copy-proof.js';
import { chooseVictims, chooseVictimsAhead, type AheadCandidate } from './eviction.js';
import type { CacheStats, NextUse, RemoteRead } from './shard-cache.js';

/** Downloads go in requests of this many bytes: memory stays flat, and each request is retried on its own. */
export const DOWNLOAD_CHUNK_BYTES = 8 * 1024 * 1024;

export interface RoomRequest {
  /** The cache directory (every dataset's copies count) and this dataset's subdirectory in it. */
  root: string;
  dir: string;
  maxBytes: number;
  /** The shard room is made for, and its size. */
  shard: number;
  bytes: number;
  /** Created, empty, once there is room (still under the lock). */
  part: string;
  /** This dataset's copies: path -> shard. */
  copies: ReadonlyMap<string, number>;
  /** The plan's next uses; undefined: LRU only. */
  nextUse: NextUse | undefined;
  /** A prefetch evicts only what MIN would when the shard is read; a read evicts what it must now. */
  prefetch: boolean;
  /** Shards whose copy is being opened: never evicted (they are about to be read). */
  isOpening: (shard: number) => boolean;
  /** Told of each copy removed, with its shard when it is one of this dataset's. */
  evicted: (file: string, shard: number | undefined) => void;
}

/**
 * Makes room for `part` under the directory-wide lock: scans every file of the cache, evicts what the policy
 * picks, and creates `part` while still holding the lock, so concurrent reservations cannot overshoot maxBytes.
 * False when the policy finds nothing it may evict.
 */
export function reserveRoom(req: RoomRequest): Promise<boolean> {
  const { copies: mine, nextUse } = req;
  return withLock(path.join(req.root, SPACE_LOCK), () => {
    const files = scanCache(req.root);
    const used = files.reduce((n, f) => n + f.bytes, 0);
    const need = used + req.bytes - req.maxBytes;
    const forUse = nextUse === undefined ? Infinity : nextUse(req.shard);
    const candidates: AheadCandidate[] = files
      // this dataset's index copy is read by every process that uses it (index-copy.ts): never evicted by them
      .filter((f) => f.complete && !req.isOpening(mine.get(f.path) ?? -1) && !(path.dirname(f.path) === req.dir && isIndexCopy(path.basename(f.path))))
      .map((f) => {
        const s = mine.get(f.path);
        const planned = s !== undefined && nextUse !== undefined;
        return { id: f.path, bytes: f.bytes, lastUse: f.mtimeMs, nextUse: planned ? nextUse(s) : Infinity, nextUseThen: planned ? nextUse(s, forUse) : Infinity };
      });
    const victims = req.prefetch && Number.isFinite(forUse) ? chooseVictimsAhead(candidates, need, forUse) : chooseVictims(candidates, need, forUse);
    if (victims === undefined) return false;
    for (const v of victims) {
      removeCopy(v.id);
      req.evicted(v.id, mine.get(v.id));
    }
    fs.closeSync(fs.openSync(req.part, 'wx'));
    return true;
  });
}

/**
 * `reserve()` (a {@link reserveRoom}); for a read, when this process's own `downloading` hold the room, waits for them
 * and tries again (they become copies that can be evicted) rather than reading the shard remotely.
 */
export async function reserveWaiting(reserve: () => Promise<boolean>, downloading: ReadonlySet<Promise<unknown>>, prefetch: boolean): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    if (await reserve()) return true;
    // only downloads past their reservation hold room; waiting on another read that waits too would deadlock
    const others = [...downloading];
    if (prefetch || others.length === 0 || attempt >= 8) return false;
    await Promise.race(others);
  }
}

export interface Download {
  /** Reads the shard's bytes from the remote. */
  remote: RemoteRead;
  /** Counts the bytes fetched (remoteBytes, and prefetchedBytes for a prefetch). */
  stats: CacheStats;
  prefetch: boolean;
  /** Whether the dataset was closed: the download stops with CLOSED. */
  isClosed: () => boolean;
}

/**
 * Downloads `shard` into `part` (already created) in chunks, checks the whole shard's CRC32C against the index
 * (SHARD_MISMATCH when the remote shard differs) and syncs it.
 */
export async function downloadShard(how: Download, shard: number, record: ShardRecord, part: string): Promise<void> {
  const handle = await fsp.open(part, 'r+');
  try {
    let crc = 0;
    for (let at = 0; at < record.bytes; at += DOWNLOAD_CHUNK_BYTES) {
      if (how.isClosed()) throw new ShardkitError(ErrorCodes.CLOSED, `the dataset was closed while ${record.file} was being cached`);
      const chunk = await how.remote(shard, at, Math.min(DOWNLOAD_CHUNK_BYTES, record.bytes - at));
      how.stats.remoteBytes += chunk.length;
      if (how.prefetch) how.stats.prefetchedBytes += chunk.length;
      crc = crc32c(chunk, crc);
      await handle.write(chunk, 0, chunk.length, at);
    }
    if (crc !== record.crc32c) {
      throw new ShardkitError(ErrorCodes.SHARD_MISMATCH, `${record.file}: the remote shard's CRC32C differs from the index's; the shard was replaced or damaged at the source (run \`shardkit verify\` on it)`, { shard: record.file });
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The CRC32C of the first `size` bytes of `source`, read in download-sized chunks. */
export async function copyCrc32c(source: FileSource, size: number): Promise<number> {
  let crc = 0;
  for (let at = 0; at < size; at += DOWNLOAD_CHUNK_BYTES) crc = crc32c(await source.read(at, Math.min(DOWNLOAD_CHUNK_BYTES, size - at)), crc);
  return crc;
}
