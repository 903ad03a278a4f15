/** How a dataset is opened: the options of `openDataset`. */
import type { CacheOptions } from '../cache/shard-cache.js';
import type { HttpClientOptions } from '../io/http-client.js';
import type { IoStats } from '../io/io-stats.js';

/**
 * The largest member a reader takes by default (openDataset's `maxMemberBytes`), and so the largest a pass makes:
 * a bigger one could be written but not read back without raising the option.
 */
export const DEFAULT_MAX_MEMBER_BYTES = 1 << 30;

export interface OpenDatasetOptions {
  /** Check every member's CRC32C on get/at (default true). */
  verify?: boolean;
  /**
   * Shard handles open at once (default 64); a 10,000-shard dataset works without raising ulimit. With `cache`, the
   * copies open at once too (default 512: a copy reopened is checked against its proof again).
   */
  maxOpenShards?: number;
  /**
   * Memory for decoded index pages, in bytes of memory (heap and typed arrays): the cache counts what each decoded
   * page takes (its keys, its record columns, the key table lookups build), estimated within a few percent of what
   * V8 holds, and never holds more. Default 256 MiB.
   *
   * A record takes ~140 bytes decoded for tiny samples with ~24-byte keys (~15x its ~9 bytes in the index file), so
   * the default keeps an index of ~1.9M such samples decoded whole; a larger one keeps its recently used pages, and a
   * lookup past them reads its leaf and decodes it up to the record it wants (~20-30 us on a warm page cache, against
   * ~2-5 us from a decoded page). 0 caches nothing. `stats().pageCache` says what it holds (`pages`, `bytes`).
   *
   * @example
   * // a 10^8-sample dataset read by key at random, with a 1 GiB budget for its index
   * const ds = await openDataset('/data/big', { pageCacheBytes: 2 ** 30 });
   */
  pageCacheBytes?: number;
  /**
   * What to check when a shard is first opened: 'size' (one fstat) or 'fingerprint' (also the CRC32C of its first
   * 4 KiB, one read per shard per dataset lifetime; default). Either detects a shard replaced under the index.
   */
  checkShards?: 'size' | 'fingerprint';
  /**
   * Async reads of local shards up to this many bytes are synchronous preads (faster than a thread-pool round trip
   * on a warm page cache); larger ones use the thread pool. Default 64 KiB. Set 0 on network file systems or cold
   * disks, together with the loader's `syncReadMaxBytes: 0`, so reads in flight overlap device latency.
   */
  syncReadMaxBytes?: number;
  /** Refuse members larger than this (default {@link DEFAULT_MAX_MEMBER_BYTES}, 1 GiB): a guard against damaged or hostile indexes. */
  maxMemberBytes?: number;
  /** HTTP options for remote datasets (sockets, retries, timeouts, headers). */
  http?: HttpClientOptions;
  /** Counters to add this dataset's operations to (default: its own, see stats()). */
  ioStats?: IoStats;
  /**
   * Use shardkit's optional native addon when it is built (default true; see `nativeAvailable()`): the
   * synchronous reads of local shards (getSync, atSync, the view twins, and the loader's reads up to
   * syncReadMaxBytes) copy out of a read-only memory map of each shard instead of calling pread, and CRC32C runs on
   * the CPU's instructions, fused with the copy. Results and errors are the same either way. `false`, or SHARDKIT_NATIVE=0 in the environment, keeps
   * the portable path.
   */
  native?: boolean;
  /**
   * A node-local cache of whole shards for datasets on slow storage (http(s), or a path on a network file system):
   * `{ dir, maxBytes }`. Such a dataset is read asynchronously only (getSync and the other sync twins refuse it).
   * Shards are copied into `dir`,
   * verified against the index (size and CRC32C) before anything is served from them, then read locally. Processes
   * of a node that use the same `dir` share it (each shard fetched once). A loader prefetches the shards its order
   * needs next and evicts the one needed furthest in the future. See src/cache/shard-cache.ts.
   *
   * @example
   * const ds = await openDataset('https://data.example/imagenet', { cache: { dir: '/dev/shm/sk', maxBytes: 64 * 2 ** 30 } });
   */
  cache?: CacheOptions;
}
