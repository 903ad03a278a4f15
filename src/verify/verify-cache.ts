/**
 * `verify` with a node-local shard cache (`cache` option, `--cache-dir`): verify checks the SOURCE, never a copy.
 *
 * A cached copy proves nothing about the shard at the source: a server's disk can rot after the copy was made. So
 * verify streams every shard from the source as it always does, and the cache only gains from it: a shard whose
 * streamed bytes match the index (size and whole-file CRC32C) is written into the cache on the way, read once, so
 * a training run after it starts warm. A shard damaged at the source is reported as damaged and is not copied. When
 * the cache already holds a verified copy of a damaged shard (made when it was intact), the report says where: that
 * copy is the shard the manifest describes, and putting it back repairs the source.
 *
 * Room: verify evicts copies outside what it has seen (other datasets, least recently used first) but never a copy
 * of this dataset it copied or found earlier in the same run; with a cache smaller than the dataset it fills the
 * cache with the first shards and stops copying. Evicting them for later ones would write and throw away bytes, and
 * a training run's shuffled order gains nothing from the later ones over the earlier ones.
 */
import path from 'node:path';
import type { ShardRecord } from '../../formats/index-layout.js';
import type { CopyWriter } from '../cache/copy-writer.js';
import { ShardCache, type CacheOptions } from '../cache/shard-cache.js';
import { isRemote } from '../io/location.js';

/** What verify did with the cache; in the report as `cache`. */
export interface VerifyCacheReport {
  dir: string;
  /** Shards verified at the source and copied into the cache by this run. */
  copied: number;
  copiedBytes: number;
  /** Shards whose copy was in the cache already (verified from the source all the same). */
  alreadyCached: number;
  /** Intact shards not copied: no room without evicting an earlier one, or another process was fetching them. */
  notCopied: number;
}

export class VerifyCache {
  readonly report: VerifyCacheReport;
  /** Shards this run copied or found copied: kept when room is made for later ones. */
  private readonly kept = new Set<number>();

  private constructor(private readonly cache: ShardCache) {
    this.report = { dir: path.resolve(cache.dir, '..'), copied: 0, copiedBytes: 0, alreadyCached: 0, notCopied: 0 };
  }

  static open(options: CacheOptions, location: string, indexCrc32c: string, shards: readonly ShardRecord[]): VerifyCache {
    // the same cache subdirectory a loader of this dataset uses (shard-cache.ts); verify never reads through it
    const noRemote = (): Promise<Uint8Array> => Promise.reject(new Error('verify reads shards from the source, not through the cache'));
    return new VerifyCache(ShardCache.open(options, isRemote(location) ? location : path.resolve(location), indexCrc32c, shards, noRemote));
  }

  /** A writer for shard `i`'s copy, or undefined (already cached, busy, no room). */
  async start(i: number): Promise<CopyWriter | undefined> {
    const got = await this.cache.startCopy(i, (s) => (this.kept.has(s) ? s : Infinity));
    if (got === 'cached') {
      this.kept.add(i);
      this.report.alreadyCached++;
      return undefined;
    }
    if (typeof got === 'string') return undefined;
    return got;
  }

  /** Records how shard `i` ended: its copy kept, or an intact shard left out. */
  finished(i: number, bytes: number, copied: boolean, intact: boolean): void {
    if (copied) {
      this.kept.add(i);
      this.report.copied++;
      this.report.copiedBytes += bytes;
    } else if (intact && !this.kept.has(i)) {
      this.report.notCopied++;
    }
  }

  /** For a shard damaged at the source: the path of a copy in the cache that checks out, if any. */
  verifiedCopy(i: number): Promise<string | undefined> {
    return this.cache.verifiedCopy(i);
  }

  close(): Promise<void> {
    return this.cache.close();
  }
}
