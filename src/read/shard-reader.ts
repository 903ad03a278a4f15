/**
 * ShardReader: the bytes of a dataset's shards. Each shard is opened at most once while in use, under a bounded
 * handle budget (LRU), and checked once against the index's shard table when first opened; reads go through the
 * node-local shard cache when there is one. Synchronous reads (local shards, or ready cached copies) land in owned
 * arena buffers or in a caller's buffer; asynchronous ones run on the thread pool or as ranged GETs.
 */
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import type { Manifest } from '../../formats/manifest.js';
import type { Sample } from '../../formats/sample.js';
import { DEFAULT_CACHE_MAX_OPEN, ShardCache } from '../cache/shard-cache.js';
import type { ByteSource } from '../io/byte-source.js';
import { FileSource } from '../io/file-source.js';
import { HandlePool, DEFAULT_MAX_OPEN } from '../io/handle-pool.js';
import type { HttpClient } from '../io/http-client.js';
import { HttpSource } from '../io/http-source.js';
import type { IoStats } from '../io/io-stats.js';
import { isRemote, resolveLocation } from '../io/location.js';
import type { NativeAddon } from '../native/native.js';
import { checkShardOnOpen } from './dataset-checks.js';
import type { OpenDatasetOptions } from './dataset-options.js';
import { readLoneSamples, type ViewSource } from './lone-samples.js';
import { ReadArena } from './read-arena.js';
import type { RecordRef } from './record-ref.js';
import type { DecodeContext } from './sample-decode.js';

export class ShardReader {
  readonly pool: HandlePool<ByteSource>;
  /** The node-local shard cache, when opened with `cache`. */
  readonly cache: ShardCache | undefined;
  /** True when local shards are read through memory maps (the native addon is built and enabled). */
  readonly native: boolean;
  /** True when the shard cache's copies are read through memory maps. */
  readonly cacheNative: boolean;
  /** Owned read buffers for get/at and the loader's copy mode (see read-arena.ts). */
  readonly arena = new ReadArena();
  private readonly shardLocations: string[];
  private readonly shardByLocation = new Map<string, number>();
  private readonly checked = new Set<number>();
  private readonly checkShards: 'size' | 'fingerprint';
  private readonly shards: readonly ShardRecord[];
  private readonly layout: Manifest['layout'];

  constructor(
    location: string,
    manifest: Manifest,
    shards: readonly ShardRecord[],
    options: OpenDatasetOptions,
    io: IoStats,
    client: HttpClient | undefined,
    addon: NativeAddon | undefined,
    remote: boolean,
  ) {
    this.shards = shards;
    this.layout = manifest.layout;
    // With a cache, every shard fetched is checked whole (CRC32C) before use: the 4 KiB fingerprint read is not sent.
    this.checkShards = options.cache !== undefined ? 'size' : (options.checkShards ?? 'fingerprint');
    this.shardLocations = shards.map((s) => resolveLocation(location, s.file));
    this.shardLocations.forEach((loc, i) => this.shardByLocation.set(loc, i));
    this.native = addon !== undefined && !remote;
    this.cacheNative = addon !== undefined && options.cache !== undefined;
    const sourceOptions = { stats: io, mmap: this.native, ...(options.syncReadMaxBytes === undefined ? {} : { syncReadMaxBytes: options.syncReadMaxBytes }) };
    this.pool = new HandlePool<ByteSource>({
      maxOpen: options.maxOpenShards ?? DEFAULT_MAX_OPEN,
      open: (loc) =>
        isRemote(loc)
          ? Promise.resolve(new HttpSource(loc, { client: client as HttpClient, size: this.shardRecord(loc).bytes, sizeMismatchCode: ErrorCodes.SHARD_MISMATCH }))
          : FileSource.open(loc, sourceOptions),
      openSync: (loc) => FileSource.openSync(loc, sourceOptions),
      onOpen: (source, loc) => this.checkShard(source, loc),
    });
    this.cache =
      options.cache === undefined
        ? undefined
        : ShardCache.open(options.cache, isRemote(location) ? location : path.resolve(location), manifest.index.crc32c, shards, (shard, offset, length) => this.pool.use(this.shardLocations[shard] as string, (src) => src.read(offset, length)), { mmap: addon !== undefined }, options.maxOpenShards ?? DEFAULT_CACHE_MAX_OPEN);
  }

  shardLocation(shard: number): string {
    return this.shardLocations[shard] as string;
  }

  shardName(shard: number): string {
    return this.shards[shard]?.file ?? `#${shard}`;
  }

  /** Bytes of a shard: from the cache when there is one, else from the shard's source. */
  readShardBytes(shard: number, offset: number, length: number): Promise<Uint8Array> {
    if (this.cache !== undefined) return this.cache.read(shard, offset, length);
    return this.pool.use(this.shardLocations[shard] as string, (src) => src.read(offset, length));
  }

  /**
   * Reads `length` bytes at `offset` in `shard` into `buffer` at `bufferOffset`. With `crcLength` (from a memory map),
   * returns the CRC32C of the first `crcLength` bytes read, computed in the same native call as the copy; else
   * undefined (pread, or no checksum asked for).
   */
  readSpanSync(shard: number, offset: number, length: number, buffer: Uint8Array, bufferOffset: number, crcLength: number | undefined): number | undefined {
    const source = this.acquireSyncSource(shard, 1);
    try {
      if (crcLength !== undefined && (this.native || this.cacheNative)) return source.readIntoSyncCrc32c(buffer, bufferOffset, length, offset, 0, crcLength);
      source.readIntoSync(buffer, bufferOffset, length, offset);
      return undefined;
    } finally {
      this.releaseSyncSource(source);
    }
  }

  /**
   * The lone samples of one shard (each read alone, one uncompressed member), read as {@link readLoneSamples} reads
   * them into arena views (or `into`) and decoded into `samples` with `ctx`.
   */
  readLoneSamplesSync(shard: number, refs: readonly RecordRef[], requests: readonly number[], samples: Sample[], into: ViewSource, ctx: DecodeContext): void {
    const source = this.acquireSyncSource(shard, requests.length);
    try {
      readLoneSamples(source, into, refs, requests, samples, ctx);
    } finally {
      this.releaseSyncSource(source);
    }
  }

  /** One pread of a local run, into `target` at `targetOffset` when given, else into a fresh arena buffer. */
  readShardRangeSync(shard: number, offset: number, length: number, target: Uint8Array | undefined, targetOffset: number): Uint8Array {
    if (target === undefined) {
      const buffer = this.arena.take(length); // exactly `length` bytes: no second view to make
      this.readSpanSync(shard, offset, length, buffer, 0, undefined);
      return buffer;
    }
    this.readSpanSync(shard, offset, length, target, targetOffset, undefined);
    return target.subarray(targetOffset, targetOffset + length);
  }

  /** Async twin of readShardRangeSync: a thread-pool read locally, one ranged GET remotely (`target` ignored). */
  async readShardRange(shard: number, offset: number, length: number, target: Uint8Array | undefined, targetOffset: number): Promise<Uint8Array> {
    const loc = this.shardLocations[shard] as string;
    if (isRemote(loc) || this.cache !== undefined) return this.readShardBytes(shard, offset, length);
    const source = (await this.pool.acquireWhenFree(loc)) as FileSource; // held across the await: within maxOpenShards
    try {
      const buffer = target ?? this.arena.take(length);
      await source.readInto(buffer, targetOffset, length, offset);
      return buffer.subarray(targetOffset, targetOffset + length);
    } finally {
      this.pool.release(source);
    }
  }

  async close(): Promise<void> {
    await this.cache?.close();
    await this.pool.close();
  }

  /**
   * The open file of `shard` for `reads` synchronous reads: a pooled handle of a local shard, or the ready copy in
   * the shard cache (the loader reads through it only after ShardCache.isReady said so, in the same synchronous
   * call). Give it back with releaseSyncSource.
   */
  private acquireSyncSource(shard: number, reads: number): FileSource {
    if (this.cache === undefined) return this.pool.acquireSync(this.shardLocations[shard] as string) as FileSource;
    const copy = this.cache.readySync(shard, reads);
    if (copy === undefined) {
      throw new ShardkitError(ErrorCodes.BAD_STATE, `${this.shardName(shard)}: its cached copy in ${this.cache.dir} is not ready for synchronous reads; read it with the async API (get, at, loader)`, { shard: this.shardName(shard) });
    }
    return copy;
  }

  private releaseSyncSource(source: FileSource): void {
    if (this.cache === undefined) this.pool.release(source);
  }

  private shardRecord(loc: string): ShardRecord {
    return this.shards[this.shardByLocation.get(loc) as number] as ShardRecord;
  }

  /** Runs once per shard per dataset: size (and fingerprint) against the index's shard table. */
  private checkShard(source: ByteSource, loc: string): void | Promise<void> {
    const shard = this.shardByLocation.get(loc) as number;
    if (this.checked.has(shard)) return;
    const done = checkShardOnOpen(source, this.shardRecord(loc), this.layout, this.checkShards);
    if (done === undefined) this.checked.add(shard);
    else return done.then(() => void this.checked.add(shard));
  }
}
