/**
 * Dataset: random access to a shardkit dataset in a directory or behind an http(s) URL. Opening costs three
 * reads whatever the dataset's size (manifest, index header, shard table; dataset-open.ts); a lookup costs O(log n)
 * page reads through a bounded page cache; a sample costs one positional read of its span (shard-reader.ts: each
 * shard opened at most once while in use, under a bounded handle budget).
 */
import buffer from 'node:buffer';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { entryAt, MEMBER_COLUMNS, MemberColumn, RECORD_COLUMNS, RecordColumn, type LeafPage } from '../../formats/index-page.js';
import type { Manifest } from '../../formats/manifest.js';
import type { Sample } from '../../formats/sample.js';
import type { CacheStats, ShardCache } from '../cache/shard-cache.js';
import type { ByteSource } from '../io/byte-source.js';
import type { HandlePool } from '../io/handle-pool.js';
import { HttpClient } from '../io/http-client.js';
import { IoStats } from '../io/io-stats.js';
import { isRemote, redactLocation, resolveLocation } from '../io/location.js';
import { readAll } from '../io/open-source.js';
import { nativeAddon, useNativeCrc32c } from '../native/native.js';
import { crc32c } from '../../formats/checksum.js';
import type { IndexReader } from './index-reader.js';
import { decodeRead, decodeRecord, decodeSpan, type DecodeContext } from './sample-decode.js';
import type { ViewSource } from './lone-samples.js';
import { readAgainIfDamaged } from './cached-batch.js';
import { isLone, type RecordRef } from './record-ref.js';
import { assertEntryFits, checkOpenOptions, recordFits } from './dataset-checks.js';
import { openManifestAndIndex } from './dataset-open.js';
import { ShardReader } from './shard-reader.js';
import type { DecodedSample } from './decode-image.js';
import { Loader } from './loader.js';
import { checkKeyRange, rangeEntries, type KeyRange } from './key-range.js';
import { SyncViewReader } from './view-reader.js';
import { SlabPool } from './slab-pool.js';
import type { LoaderOptions } from './loader-options.js';
import { DEFAULT_MAX_MEMBER_BYTES, type OpenDatasetOptions } from './dataset-options.js';

export type { OpenDatasetOptions };

export interface DatasetStats {
  io: ReturnType<IoStats['snapshot']>;
  shardHandles: HandlePool<ByteSource>['counters'];
  /** The index page cache: lookups answered from decoded pages and not, pages held, and the memory they take (at most `pageCacheBytes`). */
  pageCache: { hits: number; misses: number; pages: number; bytes: number };
  /** The node-local shard cache's counters (openDataset's `cache` option), when there is one. */
  cache?: CacheStats;
}

export type { KeyRange };

const EMPTY = new Uint8Array(0);

/** The longest sample span get/read return whole: what one Uint8Array holds. */
const MAX_SPAN_BYTES = buffer.constants.MAX_LENGTH;

export class Dataset {
  readonly location: string;
  readonly manifest: Manifest;
  readonly verify: boolean;
  readonly io: IoStats;
  /** @internal */
  readonly index: IndexReader;
  /** @internal The shards' bytes: handles, cache, read buffers (shard-reader.ts). */
  readonly reader: ShardReader;
  private readonly maxMemberBytes: number;
  /** What the fast record check lets through: maxMemberBytes, and no more than one buffer holds. */
  private readonly recordLimitBytes: number;
  private readonly client: HttpClient | undefined;
  private readonly isRemote: boolean;
  private closed = false;
  /** @internal The node-local shard cache, when opened with `cache`. */
  readonly cache: ShardCache | undefined;
  private viewReader: SyncViewReader | undefined;
  private slabPool: SlabPool | undefined;
  private readonly decodeContexts: DecodeContext[] = [];
  /** True when local shards are read through memory maps (the native addon is built and enabled). */
  readonly native: boolean;
  /** @internal True when the shard cache's copies are read through memory maps (the addon is built and enabled). */
  readonly cacheNative: boolean;
  /** @internal The CRC32C that verifies members: the addon's hardware one when enabled. */
  readonly memberCrc32c: (bytes: Uint8Array) => number;

  private constructor(location: string, manifest: Manifest, index: IndexReader, options: OpenDatasetOptions, io: IoStats, client: HttpClient | undefined) {
    this.location = location;
    this.manifest = manifest;
    this.index = index;
    this.io = io;
    this.client = client;
    // A local dataset read through a cache (a network file system) is read as a remote one: asynchronously, by the
    // cache's copies, with the loader's remote defaults (deep read-ahead, windowed reads).
    this.isRemote = isRemote(location) || options.cache !== undefined;
    this.verify = options.verify ?? true;
    this.maxMemberBytes = options.maxMemberBytes ?? DEFAULT_MAX_MEMBER_BYTES;
    this.recordLimitBytes = Math.min(this.maxMemberBytes, MAX_SPAN_BYTES);
    const addon = options.native === false ? undefined : nativeAddon();
    this.memberCrc32c = addon === undefined ? crc32c : addon.crc32c;
    this.reader = new ShardReader(location, manifest, index.shards, options, io, client, addon, this.isRemote);
    this.native = this.reader.native;
    this.cacheNative = this.reader.cacheNative;
    this.cache = this.reader.cache;
  }

  /** Opens the dataset at a directory path or an http(s) URL. */
  static async open(location: string, options: OpenDatasetOptions = {}): Promise<Dataset> {
    if (typeof location !== 'string' || location === '') {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a dataset directory or URL but received ${JSON.stringify(location)}`);
    }
    checkOpenOptions(options);
    const io = options.ioStats ?? new IoStats();
    const client = isRemote(location) ? new HttpClient({ ...options.http, stats: io }) : undefined;
    let index: IndexReader | undefined;
    try {
      const parts = await openManifestAndIndex(location, options, io, client);
      index = parts.index;
      return new Dataset(location, parts.manifest, index, options, io, client);
    } catch (err) {
      // nothing may stay open behind a failed open: the index handle, the HTTP sockets
      await index?.close().catch(() => undefined);
      client?.close();
      throw err;
    }
  }

  /** Number of samples. */
  get size(): number {
    return this.index.size;
  }

  /** The sample with `key`; SHARDKIT_ERR_KEY_NOT_FOUND when there is none. */
  async get(key: string): Promise<Sample> {
    this.assertOpen();
    const found = await this.index.findSlot(key);
    if (found === undefined) throw this.notFound(key);
    return this.readRecord(found.leaf, found.slot);
  }

  /** Synchronous `get` for local datasets: the fast path (no promise, no thread-pool round trip). */
  getSync(key: string): Sample {
    this.assertLocal('getSync');
    const found = this.index.findSlotSync(key);
    if (found === undefined) throw this.notFound(key);
    return this.readRecordSync(found.leaf, found.slot, undefined);
  }

  async has(key: string): Promise<boolean> {
    this.assertOpen();
    return (await this.index.findSlot(key)) !== undefined;
  }

  hasSync(key: string): boolean {
    this.assertLocal('hasSync');
    return this.index.findSlotSync(key) !== undefined;
  }

  /** The i-th sample in key order (0 <= i < size). */
  async at(position: number): Promise<Sample> {
    this.assertOpen();
    const hit = await this.index.leafOf(position);
    return this.readRecord(hit.leaf, position - hit.base);
  }

  atSync(position: number): Sample {
    this.assertLocal('atSync');
    const hit = this.index.leafOfSync(position);
    return this.readRecordSync(hit.leaf, position - hit.base, undefined);
  }

  /** Where a sample is: its index entry (shard, span, members). */
  async locate(key: string): Promise<IndexEntry> {
    const entry = await this.index.find(key);
    if (entry === undefined) throw this.notFound(key);
    return entry;
  }

  /** Index entries in key order within `range`, lazily, leaf page by leaf page. */
  async *entries(range: KeyRange = {}): AsyncGenerator<IndexEntry & { position: number }> {
    this.assertOpen();
    yield* rangeEntries(this.index, checkKeyRange(range));
  }

  /** Keys in order within `range` (lazy). */
  async *keys(range: KeyRange = {}): AsyncGenerator<string> {
    for await (const e of this.entries(range)) yield e.key;
  }

  /** Reads and decodes the sample an index entry locates (one positional read). */
  async read(entry: IndexEntry): Promise<Sample> {
    this.checkEntry(entry);
    const span = entry.length === 0 ? EMPTY : await this.reader.readShardBytes(entry.shard, entry.offset, entry.length);
    return decodeSpan(entry, span, this.decodeContext(entry.shard));
  }

  /** get/at: the sample of leaf record `slot`, one positional read (one ranged GET remotely), decoded from the columns. */
  private readRecord(leaf: LeafPage, slot: number): Promise<Sample> {
    const read = (): Promise<Sample> => this.readRecordOnce(leaf, slot);
    return readAgainIfDamaged(this, read, read) as Promise<Sample>; // a damaged cached copy: read again (cached-batch.ts)
  }

  private async readRecordOnce(leaf: LeafPage, slot: number): Promise<Sample> {
    const r = slot * RECORD_COLUMNS;
    const length = leaf.rows[r + RecordColumn.length] as number;
    this.checkRecord(leaf, slot);
    const shard = leaf.rows[r + RecordColumn.shard] as number;
    const offset = leaf.rows[r + RecordColumn.offset] as number;
    const span = length === 0 ? EMPTY : await this.reader.readShardBytes(shard, offset, length);
    return decodeRecord(leaf, slot, span, this.verify, this.memberCrc32c, undefined) ?? decodeSpan(entryAt(leaf, slot), span, this.decodeContext(shard));
  }

  /** The sample an index entry locates, synchronously (local datasets): one read of its span. */
  readSync(entry: IndexEntry): Sample {
    this.assertLocal('readSync');
    this.checkEntry(entry);
    const ctx = this.decodeContext(entry.shard);
    if (entry.length === 0) return decodeSpan(entry, EMPTY, ctx);
    const only = entry.members.length === 1 ? (entry.members[0] as MemberEntry) : undefined;
    const buffer = this.reader.arena.take(entry.length);
    const crc = this.reader.readSpanSync(entry.shard, entry.offset, entry.length, buffer, 0, this.verify && only?.codec === Codec.none ? only.storedSize : undefined);
    return decodeRead(entry, only, buffer, ctx, crc);
  }

  /**
   * @internal The loader's lone samples of one shard (each read alone, one uncompressed member), read as
   * {@link readLoneSamples} reads them into arena views (or `into`) and decoded into `samples`, checked with `verify`.
   * Records must have passed checkRecord.
   */
  readLoneSamplesSync(shard: number, refs: readonly RecordRef[], requests: readonly number[], samples: Sample[], into: ViewSource = this.reader.arena, verify = true): void {
    this.reader.readLoneSamplesSync(shard, refs, requests, samples, into, this.decodeContext(shard, verify));
  }

  /** @internal How members of a shard's samples are decoded and named in errors (made once per shard and verify). */
  decodeContext(shard: number, verify = this.verify): DecodeContext {
    // through a cache, damage may be in the local copy (changed on disk after this process checked it): the copy is
    // dropped, so the next read of the shard checks it again and fetches it anew when it is damaged
    const cache = this.cache;
    return (this.decodeContexts[2 * shard + (verify ? 1 : 0)] ??= {
      dataset: redactLocation(this.location),
      shard: this.shardName(shard),
      verify,
      crc32c: this.memberCrc32c,
      ...(cache === undefined ? {} : { onDamage: () => cache.suspect(shard) }),
    });
  }

  /**
   * An async iterable of batches (arrays of samples) over one epoch, in an order that is a pure function of
   * (dataset, seed, epoch); see {@link LoaderOptions}. Reads run ahead of consumption, coalesced per batch.
   *
   * @example
   * for await (const batch of ds.loader({ batchSize: 32, shuffle: 'full', seed: 1, epoch })) train(batch);
   */
  loader(options?: LoaderOptions & { decode?: 'none' }): Loader<Sample>;
  loader(options: LoaderOptions): Loader<DecodedSample>;
  loader(options: LoaderOptions = {}): Loader<Sample> | Loader<DecodedSample> {
    this.assertOpen();
    return new Loader(this, options);
  }

  /**
   * No-allocation twin of {@link Dataset.getSync} for local datasets: member bytes are views into one buffer this
   * dataset reuses, valid only until the next `getViewSync`/`atViewSync` call or close(). Copy what you keep
   * (`bytes.slice()`: members are plain Uint8Arrays, so slice copies). LZ4-compressed members are fresh buffers.
   * The fastest read when each sample is used up before the next one is read (one pread, no allocation).
   */
  getViewSync(key: string): Sample {
    this.assertLocal('getViewSync');
    const found = this.index.findSlotSync(key);
    if (found === undefined) throw this.notFound(key);
    return this.readRecordSync(found.leaf, found.slot, this.views);
  }

  /** No-allocation twin of {@link Dataset.atSync}; the same lifetime rule as {@link Dataset.getViewSync}. */
  atViewSync(position: number): Sample {
    this.assertLocal('atViewSync');
    const hit = this.index.leafOfSync(position);
    return this.readRecordSync(hit.leaf, position - hit.base, this.views);
  }

  /**
   * @internal getSync, atSync, their view twins and the loader: the sample of leaf record `slot`, read and decoded
   * from the leaf's columns (LeafPage.rows), so the entry, member array and member objects, apart on the heap, are
   * not touched: on random access their cache misses cost ~1 us a sample (20,000 samples of 1-10 KiB). Into a buffer
   * from `views` (the reused view buffer, or the loader's view-mode slab), else an arena buffer.
   */
  readRecordSync(leaf: LeafPage, slot: number, views: ViewSource | undefined, verify = this.verify): Sample {
    this.checkRecord(leaf, slot);
    return this.readCheckedRecordSync(leaf, slot, views, verify);
  }

  /** @internal {@link Dataset.readRecordSync} of a record that passed checkRecord (the loader checks when it locates). */
  readCheckedRecordSync(leaf: LeafPage, slot: number, views: ViewSource | undefined, verify: boolean): Sample {
    const r = slot * RECORD_COLUMNS;
    const length = leaf.rows[r + RecordColumn.length] as number;
    const shard = leaf.rows[r + RecordColumn.shard] as number;
    let span: Uint8Array = EMPTY;
    let crc: number | undefined;
    if (length > 0) {
      const offset = leaf.rows[r + RecordColumn.offset] as number;
      const firstMember = (leaf.rows[r + RecordColumn.firstMember] as number) * MEMBER_COLUMNS;
      const buffer = views === undefined ? this.reader.arena.take(length) : views.take(length);
      // the first member starts the span (a lone one fills it); the CRC32C is of its stored bytes
      const firstLength = isLone(leaf, slot) ? length : (leaf.memberRows[firstMember + MemberColumn.storedSize] as number);
      crc = this.reader.readSpanSync(shard, offset, length, buffer, 0, verify ? firstLength : undefined);
      span = buffer.length === length ? buffer : buffer.subarray(0, length);
    }
    return decodeRecord(leaf, slot, span, verify, this.memberCrc32c, crc) ?? decodeSpan(entryAt(leaf, slot), span, this.decodeContext(shard, verify), crc);
  }

  /**
   * @internal checkEntry's checks on leaf record `slot`, from the leaf's columns: the span inside its shard, no member
   * over maxMemberBytes. When they fail, checkEntry runs on the entry and throws its error, naming the sample.
   */
  checkRecord(leaf: LeafPage, slot: number): void {
    if (!recordFits(leaf, slot, this.index.shards, this.recordLimitBytes)) this.checkEntry(entryAt(leaf, slot));
  }

  /** True when the dataset is behind an http(s) URL, or read through a shard cache (no synchronous reads). */
  get remote(): boolean {
    return this.isRemote;
  }

  /**
   * @internal The loader's positional read of one coalesced run, for a local dataset and a run of at most
   * DEFAULT_SYNC_READ_MAX_BYTES: one pread, into `target` at `targetOffset` when given (view mode's pooled
   * slabs), else into a fresh buffer. Returns the bytes read.
   */
  readShardRangeSync(shard: number, offset: number, length: number, target?: Uint8Array, targetOffset = 0): Uint8Array {
    return this.reader.readShardRangeSync(shard, offset, length, target, targetOffset);
  }

  /**
   * @internal Async twin of {@link Dataset.readShardRangeSync} for any run: local runs go to the thread pool with
   * the shard handle held until the read ends (the loader decides which runs come here: syncReadMaxBytes); remote
   * runs are one ranged GET (`target` is ignored: the response body is returned).
   */
  readShardRange(shard: number, offset: number, length: number, target?: Uint8Array, targetOffset = 0): Promise<Uint8Array> {
    return this.reader.readShardRange(shard, offset, length, target, targetOffset);
  }

  /** Operation counters: files opened, reads, bytes, page cache hits. */
  stats(): DatasetStats {
    return {
      io: this.io.snapshot(),
      shardHandles: { ...this.reader.pool.counters },
      pageCache: { hits: this.index.cache.hits, misses: this.index.cache.misses, pages: this.index.cache.size, bytes: this.index.cache.bytes },
      ...(this.cache === undefined ? {} : { cache: { ...this.cache.stats } }),
    };
  }

  /** Shard records from the index (file, bytes, samples, checksums). */
  get shards(): readonly ShardRecord[] {
    return this.index.shards;
  }

  shardName(shard: number): string {
    return this.reader.shardName(shard);
  }

  shardLocation(shard: number): string {
    return this.reader.shardLocation(shard);
  }

  /**
   * Reads one of the files a pass left beside the dataset (listed in `manifest.files`, e.g. `classes.txt`), whole.
   * @throws ShardkitError KEY_NOT_FOUND when the manifest lists no such file; SHARD_MISSING when it is gone.
   */
  async readExtraFile(name: string): Promise<Uint8Array> {
    this.assertOpen();
    if (!this.manifest.files.includes(name)) {
      throw new ShardkitError(ErrorCodes.KEY_NOT_FOUND, `${redactLocation(this.location)} has no file ${JSON.stringify(name)} in its manifest's files`, { file: redactLocation(this.location) });
    }
    return readAll(resolveLocation(this.location, name), this.client === undefined ? { stats: this.io } : { stats: this.io, client: this.client });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.slabPool?.clear();
    await this.reader.close();
    await this.index.close();
    this.client?.close();
  }

  /**
   * @internal The slabs of view-mode loaders (pooled read buffers, see slab-pool.ts), shared by this dataset's loaders
   * so that the next epoch's loader reuses the slabs of the last one instead of allocating (and faulting in) new
   * ones; returned slabs are kept up to the largest `keepBytes` asked for, and dropped at close().
   */
  viewSlabs(keepBytes: number): SlabPool {
    const pool = (this.slabPool ??= new SlabPool(keepBytes));
    pool.keepAtLeast(keepBytes);
    return pool;
  }

  private get views(): SyncViewReader {
    return (this.viewReader ??= new SyncViewReader());
  }

  /** The synchronous twins read local files only; over http they would block on the network. */
  private assertLocal(method: string): void {
    this.assertOpen();
    if (this.cache !== undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${method} does not read through the shard cache ${this.cache.dir}: use the async API (get, at, loader)`);
    if (this.remote) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${method} needs a local dataset; ${redactLocation(this.location)} is remote: use the async API`);
  }

  private assertOpen(): void {
    if (this.closed) throw new ShardkitError(ErrorCodes.CLOSED, `dataset ${redactLocation(this.location)} is closed`);
  }

  private notFound(key: string): ShardkitError {
    return new ShardkitError(ErrorCodes.KEY_NOT_FOUND, `no sample with key ${JSON.stringify(key)} in ${redactLocation(this.location)}`, { key, file: redactLocation(this.location) });
  }

  /** @internal Refuses entries that point outside their shard or hold oversized members (damaged index). */
  checkEntry(entry: IndexEntry): void {
    // a span or member no buffer holds (maxMemberBytes raised past it): a coded error, not a RangeError from the
    // allocation; an entry outside its shard is CORRUPT_INDEX first
    if (entry.length > MAX_SPAN_BYTES || entry.members.some((m) => m.size > MAX_SPAN_BYTES)) {
      assertEntryFits(entry, this.index.shards, Number.MAX_SAFE_INTEGER, this.index.tree);
      throw new ShardkitError(
        ErrorCodes.TOO_LARGE,
        `sample ${JSON.stringify(entry.key)} spans ${entry.length} bytes, more than one buffer holds (${MAX_SPAN_BYTES}): read it member by member with \`shardkit get --out FILE\` or \`shardkit extract\`, which stream`,
        { key: entry.key },
      );
    }
    assertEntryFits(entry, this.index.shards, this.maxMemberBytes, this.index.tree);
  }
}

/** Opens a dataset directory or http(s) URL. See {@link Dataset}. */
export function openDataset(location: string, options: OpenDatasetOptions = {}): Promise<Dataset> {
  // index pages and the manifest are checked with the addon's CRC32C when it is there: @node-rs/crc32 is then never
  // loaded (~5 ms of a fresh process, bench/fresh.mjs)
  if (options.native !== false) useNativeCrc32c();
  return Dataset.open(location, options);
}
