/**
 * Loader: one epoch of a dataset as an async iterable of batches, for training loops.
 *
 * Pipeline per batch: order (planEpoch: seed, epoch, shuffle, rank, worldSize) -> locate (index records) ->
 * fetch (coalesced positional reads, CRC check, LZ4) -> decode (optional, images to pixels) -> yield.
 * The order is known in advance, so batches are fetched ahead of consumption while the bytes fetched but not
 * yet yielded stay under `prefetch` (read-ahead.ts); reads in flight stay under `concurrency`. Local batches of small
 * samples are read synchronously (see batch-read.ts).
 *
 * Shards are assumed to hold contiguous position ranges in key order (what `pack` writes); 'block' shuffle uses
 * that for locality. Any other layout stays correct, only less local.
 */
import pLimit from 'p-limit';
import { RECORD_COLUMNS, RecordColumn, type LeafPage } from '../../formats/index-page.js';
import type { Sample } from '../../formats/sample.js';
import type { CacheStats } from '../cache/shard-cache.js';
import { readBatch, type BatchReadOptions } from './batch-read.js';
import { DEFAULT_LOCAL_COALESCE_GAP_BYTES } from './fetch-plan.js';
import { CachePlan } from './cache-plan.js';
import { allCached, locateCached, readAgainIfDamaged } from './cached-batch.js';
import type { Dataset } from './dataset.js';
import type { DecodedSample } from './decode-image.js';
import { decodeBatchImages } from './decode-batch.js';
import { planEpoch, type EpochPlan, type EpochPlanOptions } from './epoch-plan.js';
import { resolveLoaderOptions, type LoaderOptions, type ResolvedLoaderOptions } from './loader-options.js';
import { expectLoaderState, LOADER_STATE_FORMAT, LOADER_STATE_VERSION, type DatasetIdentity, type LoaderState } from './loader-state.js';
import { closedError, ReadAhead, type BatchSource, type QueuedBatch } from './read-ahead.js';
import { locateAsync } from './record-locate.js';
import { recordRef, type RecordRef } from './record-ref.js';
import type { SlabPool } from './slab-pool.js';
import { DEFAULT_MAX_WASTE, FULL_SHUFFLE_MAX_WASTE } from './window-plan.js';
import { readWindowBatch, SpanWindow, type WindowBatchOptions } from './window-read.js';

/** Counters of what a loader did; plain numbers. */
export interface LoaderStats {
  /** Batches and samples yielded so far. */
  batches: number;
  samples: number;
  /** Samples fetched, yielded or still ahead. */
  fetchedSamples: number;
  /** Positional reads issued: `fetchedSamples / reads` is what coalescing saved. */
  reads: number;
  /** Bytes those reads fetched (holes between coalesced spans included). */
  bytesRead: number;
  /** Bytes fetched (or being fetched) and not yet yielded: now, and the most at any time. */
  prefetchedBytes: number;
  peakPrefetchedBytes: number;
  /** Batches the consumer asked for before they were ready: I/O or decoding held the loop up. */
  stalls: number;
  imagesDecoded: number;
  /**
   * With a shard cache (openDataset's `cache`): its counters since this loader started (hits, misses, remote bytes,
   * prefetched bytes, prefetch stalls, ...). Other users of the dataset's cache meanwhile count too.
   */
  cache?: CacheStats;
}

/**
 * Batches of one epoch. Make it with `ds.loader(options)`; iterate it once with `for await`.
 *
 * Buffers: by default every yielded sample owns its member bytes; the loader never reuses them. For speed,
 * uncompressed members are plain `Uint8Array` views into the buffer of the read that fetched them, which may also
 * hold neighbouring samples of the batch (coalesced reads, at most `maxReadBytes`): mind `byteOffset` when handing
 * `.buffer` to other APIs, and `slice()` a member you keep long if you want the rest of that buffer freed. With `view: true` (local
 * datasets), those read buffers are pooled and reused: member bytes are valid only until the next batch is
 * requested or the loader is closed. Decoded images and LZ4-compressed members are always fresh buffers.
 *
 * @example
 * const loader = ds.loader({ batchSize: 32, shuffle: 'full', seed: 7, epoch: 0 });
 * for await (const batch of loader) {
 *   step(batch);
 *   if (timeToCheckpoint) save(JSON.stringify(loader.state()));
 * }
 */
export class Loader<S = Sample> implements AsyncIterableIterator<S[]>, BatchSource<S> {
  /** Samples this loader yields in all (its rank's share of what was left of the epoch). */
  readonly length: number;
  /** Batches it yields; the last may be short unless dropLast. */
  readonly batches: number;
  private readonly ds: Dataset;
  private readonly opts: ResolvedLoaderOptions;
  private readonly plan: EpochPlan;
  private readonly identity: DatasetIdentity;
  private readonly batchOptions: BatchReadOptions;
  /** With a shard cache: how batches whose shards all have ready copies are read (as local ones, cached-batch.ts). */
  private readonly cachedOptions: BatchReadOptions | undefined;
  /** Remote datasets: the rank's next samples, so a read fetches each byte about once (see window-plan.ts). */
  private readonly window: SpanWindow | undefined;
  private readonly windowOptions: WindowBatchOptions;
  /** With a shard cache: when each shard is read next (eviction), and what to prefetch. */
  private readonly cachePlan: CachePlan | undefined;
  private readonly cacheAtStart: CacheStats | undefined;
  /** Reads in flight (http requests and index page lookups, thread-pool reads) stay under `concurrency`. */
  private readonly readLimit: ReturnType<typeof pLimit>;
  private readonly decodeLimit: ReturnType<typeof pLimit>;
  private readonly slabs: SlabPool | undefined;
  /** Mean stored bytes per sample, to estimate a batch's size before its entries are known. */
  private readonly bytesPerSample: number;
  /** Local, copy mode, no decoding: a batch of one sample is read by readOneSync. */
  private readonly readsOneAlone: boolean;
  /** The read-ahead queue: what is started, delivered, counted against prefetch. */
  private readonly ahead: ReadAhead<S>;
  private readonly counters: LoaderStats = {
    batches: 0,
    samples: 0,
    fetchedSamples: 0,
    reads: 0,
    bytesRead: 0,
    prefetchedBytes: 0,
    peakPrefetchedBytes: 0,
    stalls: 0,
    imagesDecoded: 0,
  };
  /** Remote lookups run one batch after another, sorted by position, so each index page is fetched once. */
  private locateTail: Promise<unknown> = Promise.resolve();
  /** Remote batches started whose entries are still being looked up (their size an estimate until then). */
  private locating = 0;

  /** @internal Use `ds.loader(options)`. */
  constructor(ds: Dataset, options: LoaderOptions) {
    this.ds = ds;
    const resolved = resolveLoaderOptions(options, ds.remote, ds.verify);
    // With a shard cache, read ahead within a quarter of it: batches read far ahead need shards the cache has no room
    // for yet, which are then read remotely (and fetched again later).
    this.opts = ds.cache === undefined ? resolved : { ...resolved, prefetch: Math.min(resolved.prefetch, Math.floor(ds.cache.maxBytes / 4)) };
    this.identity = { index: ds.manifest.index.crc32c, samples: ds.size };
    const planOptions: EpochPlanOptions = {
      shardSizes: ds.shards.map((s) => s.samples),
      seed: options.seed ?? 0,
      epoch: options.epoch ?? 0,
      shuffle: options.shuffle ?? 'none',
      batchSize: this.opts.batchSize,
      ...(options.windowShards === undefined ? {} : { shuffleOptions: { windowShards: options.windowShards } }),
      ...(options.rank === undefined ? {} : { rank: options.rank }),
      ...(options.worldSize === undefined ? {} : { worldSize: options.worldSize }),
      ...(options.partition === undefined ? {} : { partition: options.partition }),
      ...(options.dropLast === undefined ? {} : { dropLast: options.dropLast }),
      ...(options.resumeFrom === undefined ? {} : { resumeFrom: expectLoaderState(options.resumeFrom, this.identity) }),
    };
    this.plan = planEpoch(planOptions, { merge: 'mergeLoaderStates()' });
    this.length = this.plan.length;
    this.batches = this.plan.batches;
    this.bytesPerSample = ds.size === 0 ? 0 : ds.manifest.totals.storedBytes / ds.size;
    this.ahead = new ReadAhead<S>(this, { batches: this.batches, batchSize: this.opts.batchSize, length: this.length, prefetch: this.opts.prefetch, bytesPerSample: this.bytesPerSample }, this.counters);
    this.readLimit = pLimit(this.opts.concurrency);
    this.decodeLimit = pLimit(this.opts.decodeConcurrency);
    this.slabs = this.opts.view && !ds.remote ? ds.viewSlabs(Math.max(this.opts.prefetch, this.opts.maxReadBytes) * 2) : undefined;
    this.batchOptions = {
      gapBytes: this.opts.coalesceGapBytes,
      maxReadBytes: this.opts.maxReadBytes,
      syncReadMaxBytes: this.opts.syncReadMaxBytes,
      verify: this.opts.verify,
      slabs: this.slabs,
      limit: (fn) => this.whileOpen(this.readLimit, fn),
    };
    this.cachedOptions = ds.cache === undefined ? undefined : { ...this.batchOptions, gapBytes: options.coalesceGapBytes ?? DEFAULT_LOCAL_COALESCE_GAP_BYTES, cached: true };
    this.readsOneAlone = !ds.remote && this.slabs === undefined && this.opts.isImage === undefined;
    this.windowOptions = { ...this.batchOptions, maxWaste: options.shuffle === 'full' ? FULL_SHUFFLE_MAX_WASTE : DEFAULT_MAX_WASTE };
    // The window holds at most its samples' bytes: as many samples as `prefetch` holds at the shards' mean bytes
    // per sample (tar headers and padding included), and at least one batch.
    const shardBytesPerSample = ds.size === 0 ? 1 : Math.max(1, ds.shards.reduce((n, s) => n + s.bytes, 0) / ds.size);
    const plan = this.plan;
    this.window = ds.remote ? new SpanWindow((i) => plan.at(i), plan.length, Math.max(this.opts.batchSize, Math.floor(this.opts.prefetch / shardBytesPerSample))) : undefined;
    if (ds.cache !== undefined) this.cacheAtStart = { ...ds.cache.stats };
    if (ds.cache !== undefined && ds.cache.policy === 'clairvoyant') {
      // across epochs: the next epoch's order (from its start) follows this one's
      const { resumeFrom: _resume, ...fresh } = planOptions;
      const next = (): EpochPlan => planEpoch({ ...fresh, epoch: plan.epoch + 1 }); // made when the cache plan needs it
      const starts: number[] = [];
      ds.shards.reduce((n, s) => (starts.push(n), n + s.samples), 0);
      const shardBytes = ds.shards.map((s) => s.bytes);
      // Downloads ahead: within prefetch and a quarter of the cache (at least one shard), so the shards being read
      // keep their room; fetched ahead: at most half the cache, the rest holds what is being read and kept for later.
      const largest = Math.max(0, ...shardBytes);
      const inFlight = Math.max(largest, Math.min(this.opts.prefetch, ds.cache.maxBytes / 4));
      this.cachePlan = new CachePlan(ds.cache, shardBytes, ds.shards.map((s) => s.samples), starts, [plan, next], inFlight, Math.max(largest, ds.cache.maxBytes / 2));
      ds.cache.nextUse = this.cachePlan.nextUse;
      ds.cache.admit = this.cachePlan.admit;
    }
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next batch; `done` after the last one, after an error, or after return()/close(). */
  next(): Promise<IteratorResult<S[], undefined>> {
    return this.ahead.next();
  }

  /**
   * Stops the loader (what `break` in a `for await` calls): no more reads start. In view mode the batch held goes
   * back to the dataset's pool of read buffers (its bytes are no longer valid), batches read ahead are dropped.
   */
  return(): Promise<IteratorReturnResult<undefined>> {
    this.ahead.stop();
    return Promise.resolve({ done: true, value: undefined });
  }

  /** Same as return(). */
  async close(): Promise<void> {
    await this.return();
  }

  /**
   * Where this rank stands, as small plain JSON: pass it as `resumeFrom` (same dataset and options) to get
   * exactly the samples not yet yielded. Counts only batches already delivered. With several ranks, each rank
   * resumes from its own state when the world size stays the same; to change the world size, merge all ranks'
   * states with `mergeLoaderStates` and resume every rank from the result.
   */
  state(): LoaderState {
    return {
      format: LOADER_STATE_FORMAT,
      version: LOADER_STATE_VERSION,
      dataset: { ...this.identity },
      progress: this.plan.state(this.counters.samples),
    };
  }

  stats(): LoaderStats {
    const cache = this.ds.cache;
    const start = this.cacheAtStart;
    if (cache === undefined || start === undefined) return { ...this.counters };
    const now = cache.stats;
    const delta = Object.fromEntries(Object.entries(now).map(([k, v]) => [k, v - start[k as keyof CacheStats]])) as unknown as CacheStats;
    return { ...this.counters, cache: delta };
  }

  /** @internal BatchSource: read-ahead waits while remote batches started earlier are still being located. */
  mayReadAhead(): boolean {
    return this.locating === 0;
  }

  /** @internal BatchSource */
  delivered(): void {
    this.cachePlan?.consumed(this.counters.samples);
  }

  /** @internal BatchSource */
  giveBack(slab: Uint8Array): void {
    this.slabs?.give(slab);
  }

  /** @internal BatchSource: the loader stopped; the shard cache's plan hooks are this loader's no longer. */
  stopped(): void {
    const cache = this.ds.cache;
    if (cache !== undefined && cache.nextUse === this.cachePlan?.nextUse) {
      cache.nextUse = undefined;
      cache.admit = undefined;
    }
  }

  private get finished(): boolean {
    return this.ahead.finished;
  }

  /** @internal BatchSource: starts the batch of samples [first, first + batch.count). */
  startBatch(pending: QueuedBatch<S>, first: number): S[] | Promise<S[]> {
    const count = pending.count;
    this.cachePlan?.advance(first);
    // every earlier batch located (so the window moved past it), and this one's pages and copies at hand
    const cached = this.cachedOptions !== undefined && this.locating === 0 ? locateCached(this.ds, (i) => this.plan.at(i), first, count) : undefined;
    if (cached !== undefined) return this.fetchCached(pending, cached, first);
    if (!this.ds.remote) {
      const one = count === 1 && this.readsOneAlone ? this.readOneSync(pending, first) : undefined;
      return one ?? this.fetch(pending, this.locateSync(first, count), first);
    }
    this.locating++;
    const located = this.locateTail.then(() => this.locateAsync(first, count));
    this.locateTail = located.catch(() => undefined);
    return located.then(
      (refs) => {
        this.locating--;
        if (this.finished) throw closedError(); // located after return(): nothing of it is read
        // its index pages were looked up; its shards may all have copies by now (read as local ones, then)
        const samples = this.cachedOptions !== undefined && allCached(this.ds, refs) ? this.fetchCached(pending, refs, first) : readAgainIfDamaged(this.ds, () => this.fetch(pending, refs, first), () => this.fetchBatch(pending, refs, this.batchOptions));
        this.ahead.scheduleFill(); // the size is known now: read-ahead may go on
        return samples;
      },
      (err: unknown) => {
        this.locating--;
        throw err;
      },
    );
  }

  /**
   * A local batch of one sample in copy mode, undecoded, read as Dataset.atSync reads it: no RecordRef, no read plan,
   * no BatchRead (a loader with batchSize 1 pays this per sample). Undefined when the span is over syncReadMaxBytes:
   * the batch is then read as any other (asynchronously).
   */
  private readOneSync(pending: QueuedBatch<S>, first: number): S[] | undefined {
    const position = this.plan.at(first);
    const hit = this.ds.index.leafOfSync(position);
    const slot = position - hit.base;
    this.ds.checkRecord(hit.leaf, slot);
    const length = hit.leaf.rows[slot * RECORD_COLUMNS + RecordColumn.length] as number;
    if (length > this.opts.syncReadMaxBytes) return undefined;
    const sample = this.ds.readCheckedRecordSync(hit.leaf, slot, undefined, this.opts.verify);
    const c = this.counters;
    if (length > 0) c.reads++;
    c.bytesRead += length;
    c.fetchedSamples++;
    this.ahead.setBytes(pending, length);
    return [sample as S];
  }

  private locateSync(first: number, count: number): RecordRef[] {
    const refs = new Array<RecordRef>(count);
    for (let i = 0; i < count; i++) {
      const position = this.plan.at(first + i);
      const hit = this.ds.index.leafOfSync(position);
      refs[i] = this.located(hit.leaf, position - hit.base);
    }
    return refs;
  }

  private locateAsync(first: number, count: number): Promise<RecordRef[]> {
    const positions = Array.from({ length: count }, (_, i) => this.plan.at(first + i));
    return locateAsync(this.ds, positions, (fn) => this.whileOpen(this.readLimit, fn), () => this.finished);
  }

  /** A record to read, checked as the dataset checks entries (a damaged index fails here, naming the sample). */
  private located(leaf: LeafPage, slot: number): RecordRef {
    this.ds.checkRecord(leaf, slot);
    return recordRef(leaf, slot);
  }

  private fetch(pending: QueuedBatch<S>, refs: RecordRef[], first: number): S[] | Promise<S[]> {
    if (this.window !== undefined) return this.fetchWindow(pending, refs, first, this.window);
    return this.fetchBatch(pending, refs, this.batchOptions);
  }

  /** A batch whose shards all have ready copies in the shard cache, read as a local one (cached-batch.ts). */
  private fetchCached(pending: QueuedBatch<S>, refs: RecordRef[], first: number): S[] | Promise<S[]> {
    const dropped = this.window?.skip(first, refs.length) ?? 0;
    if (dropped > 0) this.ahead.addPrefetched(-dropped);
    // a copy found damaged (a member check): the batch is read again through the remote path (cached-batch.ts)
    return readAgainIfDamaged(this.ds, () => this.fetchBatch(pending, refs, this.cachedOptions as BatchReadOptions), () => this.fetchBatch(pending, refs, this.batchOptions));
  }

  /** A batch read by readBatch: local shards, or copies in the shard cache (`options.cached`). */
  private fetchBatch(pending: QueuedBatch<S>, refs: RecordRef[], options: BatchReadOptions): S[] | Promise<S[]> {
    const read = readBatch(this.ds, refs, options);
    pending.slab = read.slab;
    this.ahead.setBytes(pending, read.bytes);
    this.counters.reads += read.reads;
    this.counters.bytesRead += read.bytes;
    this.counters.fetchedSamples += refs.length;
    const isImage = this.opts.isImage;
    if (isImage === undefined) return read.samples as S[] | Promise<S[]>;
    return Promise.resolve(read.samples).then((samples) => this.decodeImages(samples, isImage) as Promise<S[]>);
  }

  /** A remote batch: spans held for it are taken, its reads keep spans of later batches (counted as prefetched). */
  private fetchWindow(pending: QueuedBatch<S>, refs: RecordRef[], first: number, window: SpanWindow): Promise<S[]> {
    const read = readWindowBatch(this.ds, refs, first, (i) => this.plan.at(i), window, this.windowOptions);
    this.ahead.setBytes(pending, read.bytes - read.held + read.taken);
    if (!this.finished) this.ahead.addPrefetched(read.held - read.taken);
    this.counters.reads += read.reads;
    this.counters.bytesRead += read.bytes;
    this.counters.fetchedSamples += refs.length;
    const isImage = this.opts.isImage;
    if (isImage === undefined) return read.samples as Promise<S[]>;
    return read.samples.then((samples) => this.decodeImages(samples, isImage) as Promise<S[]>);
  }

  private decodeImages(samples: Sample[], isImage: (ext: string) => boolean): Promise<DecodedSample[]> {
    return decodeBatchImages(samples, isImage, (fn) => this.whileOpen(this.decodeLimit, fn), () => void this.counters.imagesDecoded++);
  }

  /**
   * Runs `fn` under `limit` unless the loader was stopped by the time its turn comes: work queued behind the limit
   * (reads of batches started ahead, image decodes) then fails with CLOSED at once instead of running for batches
   * nobody will receive. Its batch's promise still settles, so a next() waiting on it returns.
   */
  private whileOpen<T>(limit: ReturnType<typeof pLimit>, fn: () => Promise<T>): Promise<T> {
    return limit(() => (this.finished ? Promise.reject(closedError()) : fn()));
  }
}
