/**
 * A node-local cache of whole shards for datasets on slow storage (http(s) URLs, paths on network file systems).
 *
 * Whole shards, not blocks. The index records each shard's size and CRC32C, so a whole copy is verified by the
 * manifest itself before anything is served from it (a block cut through members could only be checked member by
 * member). Fetched in blocks, a shard also costs more: a 1 MiB file read from nginx on loopback as 16 sequential
 * 64 KiB ranges took 4-20x the time of one whole read, as 4 x 256 KiB 0.9-2.6x (medians of 15-25 alternated runs,
 * loaded machine). One lock file per shard is all the coordination processes need. Blocks would win only with a
 * cache smaller than a shard, which here falls back to range reads; and when the plan reads little of a shard
 * before it would be evicted (a full shuffle, a small cache), the loader does not fetch it whole (cache-plan.ts).
 *
 * A copy is made under a temporary name, checked (size, CRC32C of the whole shard against the index), synced and
 * renamed: a killed process leaves a `.part` file that no one trusts and the next scan removes. A process checks
 * each copy again the first time it uses it, reading it whole unless the copy's proof shows it is the very file
 * that was checked (copy-proof.ts); every member read is checked too, so a copy damaged on disk is removed and
 * fetched again, never served. Copies are read through a memory map when the native addon is there.
 * While another process fetches a shard, this one reads what it needs from the remote with range reads.
 * The bytes on disk stay within maxBytes, downloads in progress included: room is made under a directory-wide lock,
 * evicting by Belady's MIN over the loader's plan and LRU for the rest (eviction.ts).
 *
 * This file holds ShardCache (reads, prefetch, the fetch-or-bypass decision, checking a copy before use) and the
 * cache's public types. The bookkeeping of open and parked copies is in open-copies.ts; making room, downloading and
 * checksumming a copy in shard-fetch.ts.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { FileSource, type FileSourceOptions } from '../io/file-source.js';
import { redactLocation } from '../io/location.js';
import { copyName, datasetId, partName } from './cache-dir.js';
import { tryLock, unlock } from './cache-lock.js';
import { hasProof, proofPath, removeCopy, touchCopy, writeProof } from './copy-proof.js';
import { CopyWriter } from './copy-writer.js';
import { DEFAULT_CACHE_MAX_OPEN, OpenCopies, type OpenCopy } from './open-copies.js';
import { copyCrc32c, downloadShard, reserveRoom, reserveWaiting } from './shard-fetch.js';

export { DEFAULT_CACHE_MAX_OPEN };

export interface CacheOptions {
  /** The cache directory (node-local: /dev/shm, a local SSD). Created if missing; shared by processes using it. */
  dir: string;
  /** Most bytes the directory holds (all datasets, downloads in progress included). */
  maxBytes: number;
  /**
   * 'clairvoyant' (default): a loader prefetches the shards its order reads next and eviction keeps the shards it
   * needs soonest (Belady's MIN). 'lru': no prefetch, least recently used out first (for comparison).
   */
  policy?: 'clairvoyant' | 'lru';
  /** Told what the cache did that a user may want to know (it never prints). */
  onEvent?: (event: CacheEvent) => void;
}

/**
 * - `bypass`: a shard is read from the remote with range reads instead of being cached (`reason`: too large for
 *   maxBytes, no room, cache directory failing); said once per shard and reason.
 * - `corrupt`: a copy failed its check and was removed (it will be fetched again).
 */
export type CacheEvent = { type: 'bypass'; shard: string; reason: string } | { type: 'corrupt'; shard: string; reason: string };

/** Plain counters; `loader.stats().cache` and `ds.stats().cache`. */
export interface CacheStats {
  /** Reads served from a local copy that was ready. */
  hits: number;
  /** Reads that waited for a download or went to the remote. */
  misses: number;
  /** Bytes fetched from the remote: downloads and range reads. */
  remoteBytes: number;
  /** Bytes downloaded ahead of need by prefetch. */
  prefetchedBytes: number;
  /** Reads that found their shard's prefetch still in flight and waited for it. */
  prefetchStalls: number;
  /** Reads sent to the remote: the shard could not be cached (see the bypass event), or the plan reads too little of it to fetch it whole. */
  bypassReads: number;
  /** Copies removed to make room. */
  evictions: number;
}

/** When a plan reads `shard` next, at or after `from` (a position in the plan; default: the reader's cursor). */
export type NextUse = (shard: number, from?: number) => number;

/** Reads `length` bytes at `offset` of shard `shard` from the remote (the dataset's http source). */
export type RemoteRead = (shard: number, offset: number, length: number) => Promise<Uint8Array>;

/** A shard being fetched by another process is looked for again after this long (reads go remote meanwhile). */
const RECHECK_MS = 500;

export class ShardCache {
  readonly dir: string;
  readonly stats: CacheStats = { hits: 0, misses: 0, remoteBytes: 0, prefetchedBytes: 0, prefetchStalls: 0, bypassReads: 0, evictions: 0 };
  /**
   * When the current plan reads shard s next, at or after `from` (default: now); smaller is sooner, Infinity: not
   * planned. Set by the loader.
   */
  nextUse: NextUse | undefined;
  /** Whether fetching shard s whole pays now (else its reads go remote); set by the loader. Undefined: always. */
  admit: ((shard: number) => boolean) | undefined;
  private readonly root: string;
  /** Open and parked copies (open-copies.ts): at most maxOpen open, parked ones opened again by their proof when read. */
  private readonly copies: OpenCopies;
  private readonly inflight = new Map<number, { promise: Promise<OpenCopy | undefined>; prefetch: boolean }>();
  /** Shards not to try again before this time (another process fetches them, or no room). */
  private readonly retryAt = new Map<number, number>();
  private readonly said = new Set<string>();
  /** Downloads of this process that hold reserved room (settled either way). */
  private readonly downloading = new Set<Promise<unknown>>();
  private closed = false;
  private readonly copyPaths: string[] = [];
  /** How many times a read found a member of a copy damaged (suspect): a read that fails after it reads again. */
  suspects = 0;
  /** How many times this process stopped trusting an open copy (evicted, suspected): a plan's idle scan is stale. */
  readyDrops = 0;

  private constructor(
    root: string,
    dir: string,
    private readonly shards: readonly ShardRecord[],
    private readonly remote: RemoteRead,
    private readonly options: CacheOptions,
    /** How copies are opened (the dataset's choice: memory-mapped when the native addon is there). */
    private readonly sourceOptions: FileSourceOptions,
    /** Most copies open at once (the dataset's maxOpenShards, else DEFAULT_CACHE_MAX_OPEN). */
    maxOpen: number,
  ) {
    this.root = root;
    this.dir = dir;
    this.copies = new OpenCopies(maxOpen, sourceOptions);
  }

  /** Opens (and creates) the cache for one dataset; fails with IO naming the directory when it cannot be written. */
  static open(options: CacheOptions, location: string, indexCrc32c: string, shards: readonly ShardRecord[], remote: RemoteRead, sourceOptions: FileSourceOptions = {}, maxOpen = DEFAULT_CACHE_MAX_OPEN): ShardCache {
    const root = path.resolve(options.dir);
    const dir = path.join(root, datasetId(location, indexCrc32c));
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'identity.json'), `${JSON.stringify({ location: redactLocation(location).replace(/\?\.\.\.$/, ''), indexCrc32c })}\n`);
    } catch (err) {
      throw new ShardkitError(ErrorCodes.IO, `cannot use the cache directory ${root}: ${(err as Error).message}; choose a writable directory (cache.dir, --cache-dir)`, { file: root, cause: err });
    }
    return new ShardCache(root, dir, shards, remote, options, sourceOptions, maxOpen);
  }

  /** Reads from the shard's local copy, fetching it first if this process may; else from the remote. */
  async read(shard: number, offset: number, length: number): Promise<Uint8Array> {
    const local = this.openCopy(shard);
    if (local !== undefined) {
      this.stats.hits++;
      return local.source.read(offset, length);
    }
    const pending = this.inflight.get(shard);
    if (pending?.prefetch === true) this.stats.prefetchStalls++;
    let got = await (pending?.promise ?? this.acquire(shard, false));
    // a prefetch that found no room was early; the read asks for itself (it evicts what it must now)
    if (got === undefined && pending?.prefetch === true) got = await (this.copies.get(shard) ?? this.inflight.get(shard)?.promise ?? this.acquire(shard, false));
    this.stats.misses++;
    // closed to stay within maxOpen while this read awaited: opened again (or, gone, the read is made again)
    if (got !== undefined) return (got.source.isClosed ? (this.openCopy(shard) ?? got) : got).source.read(offset, length);
    this.stats.bypassReads++;
    this.stats.remoteBytes += length;
    return this.remote(shard, offset, length);
  }

  /** Starts fetching `shard` into the cache ahead of need (no-op when it is there, on its way, or cannot be). */
  prefetch(shard: number): Promise<void> {
    // a copy its proof vouches for is opened now: the batch that reads it next is then read synchronously
    if (this.has(shard) || this.findNow(shard)) return Promise.resolve();
    return this.acquire(shard, true).then(() => undefined);
  }

  get policy(): 'clairvoyant' | 'lru' {
    return this.options.policy ?? 'clairvoyant';
  }

  get maxBytes(): number {
    return this.options.maxBytes;
  }

  /**
   * A read of `shard` failed its member check: this process stops trusting its open copy, and its proof is removed.
   * The next read checks the copy whole again (size, CRC32C) and, when it is damaged, removes it and fetches the
   * shard anew; the read that failed is read again that way (readAgainIfDamaged, cached-batch.ts).
   */
  suspect(shard: number): void {
    this.suspects++;
    fs.rmSync(proofPath(this.copyPath(shard)), { force: true }); // no process trusts it unread now
    this.dropReady(shard);
  }

  /**
   * Whether this process holds a ready, verified copy of `shard` now: the loader then reads the shard's samples
   * synchronously, as it reads local shards ({@link ShardCache.readySync}).
   */
  isReady(shard: number): boolean {
    return this.copies.isOpen(shard);
  }

  /**
   * {@link ShardCache.isReady}, or else opens the shard's copy now, synchronously, when its proof shows it is the very
   * file that was checked (copy-proof.ts), as openVerified trusts it: a new process then reads its first batches of
   * each shard synchronously too. A copy without a proof, or one this process is fetching or opening, is left to the
   * async path (which checks it whole, or waits).
   */
  readyNow(shard: number): boolean {
    if (this.copies.isOpen(shard)) return true;
    if (this.closed || this.inflight.has(shard) || this.copies.isOpening(shard)) return false;
    const opened = this.copies.openByProof(shard, this.copyPath(shard), this.shards[shard] as ShardRecord);
    // a copy this process trusted is gone: a read that counted on it is read again (readAgainIfDamaged)
    if (opened === 'lost') this.suspects++;
    return opened === 'open';
  }

  /**
   * For a prefetch: whether `shard` has a verified copy, opened now ({@link ShardCache.readyNow}) while fewer than
   * maxOpen are open, else only found by its proof and parked (opened when read): a prefetch scan never closes a copy
   * that the reads before it need.
   */
  findNow(shard: number): boolean {
    if (this.copies.openCount < this.copies.maxOpen) return this.readyNow(shard);
    if (this.copies.isParked(shard)) return true;
    if (this.closed || this.inflight.has(shard) || this.copies.isOpening(shard)) return false;
    if (!hasProof(this.copyPath(shard), (this.shards[shard] as ShardRecord).crc32c)) return false;
    this.copies.park(shard);
    return true;
  }

  /** The open copy of `shard`, opened again when it was parked; undefined when there is none (or no longer). */
  private openCopy(shard: number): OpenCopy | undefined {
    const local = this.copies.use(shard);
    if (local !== undefined) return local;
    return this.copies.isParked(shard) && this.readyNow(shard) ? this.copies.get(shard) : undefined;
  }

  /**
   * The open copy of `shard` for `reads` synchronous reads, counted as hits; undefined when it is not ready (any more):
   * the caller reads through {@link ShardCache.read}. A copy evicted later is closed (its map too) only after this
   * synchronous call's reads, and one removed by another process stays readable through the open descriptor and map.
   */
  readySync(shard: number, reads: number): FileSource | undefined {
    const local = this.openCopy(shard);
    if (local === undefined || local.source.isClosed) return undefined;
    this.stats.hits += reads;
    return local.source;
  }

  /** How many shards have a verified copy in this process, open or parked (closed to stay within maxOpen). */
  get readyShards(): number {
    return this.copies.count;
  }

  /** Whether the shard's copy is ready (open or parked) or on its way in this process. */
  has(shard: number): boolean {
    return this.copies.isOpen(shard) || this.copies.isParked(shard) || this.inflight.has(shard);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.inflight.values()].map((p) => p.promise.catch(() => undefined)));
    await this.copies.closeAll();
  }

  /**
   * Starts a copy of `shard` that the caller fills with bytes it reads from the source anyway (verify), so a later
   * reader starts warm. `cached`: a copy is there already; `busy`: another process fetches it; `no-room`: making
   * room would evict a shard `nextUse` ranks sooner (a verify keeps the shards it copied first, see verify-dataset.ts)
   * or the shard is larger than maxBytes. The writer keeps the copy only if it checks out (copy-writer.ts).
   */
  async startCopy(shard: number, nextUse: NextUse): Promise<CopyWriter | 'cached' | 'busy' | 'no-room'> {
    const record = this.shards[shard] as ShardRecord;
    const copy = this.copyPath(shard);
    if (fs.existsSync(copy)) return 'cached';
    if (record.bytes > this.options.maxBytes) return 'no-room';
    const lock = `${copy}.lock`;
    fs.mkdirSync(this.dir, { recursive: true });
    if (!tryLock(lock)) return 'busy';
    try {
      if (fs.existsSync(copy)) {
        unlock(lock);
        return 'cached';
      }
      const part = path.join(this.dir, partName(path.basename(copy)));
      if (!(await this.reserve(shard, part, nextUse))) {
        unlock(lock);
        return 'no-room';
      }
      return new CopyWriter(await fsp.open(part, 'r+'), record, part, copy, lock);
    } catch (err) {
      unlock(lock);
      throw err;
    }
  }

  /** The path of the shard's copy when there is one and it checks out (size and CRC32C), else undefined. */
  async verifiedCopy(shard: number): Promise<string | undefined> {
    const copy = this.copyPath(shard);
    return (await this.openVerified(shard, copy)) === undefined ? undefined : copy;
  }

  private acquire(shard: number, prefetch: boolean): Promise<OpenCopy | undefined> {
    const promise = this.obtain(shard, prefetch).finally(() => this.inflight.delete(shard));
    this.inflight.set(shard, { promise, prefetch });
    return promise;
  }

  /** A verified local copy of `shard`: found, or fetched by this process; undefined when it must be read remotely. */
  private async obtain(shard: number, prefetch: boolean): Promise<OpenCopy | undefined> {
    const record = this.shards[shard] as ShardRecord;
    if ((this.retryAt.get(shard) ?? 0) > Date.now()) return this.bypass(shard, undefined);
    const copy = this.copyPath(shard);
    const found = await this.openVerified(shard, copy);
    if (found !== undefined) return found;
    if (record.bytes > this.options.maxBytes) return this.bypass(shard, `shards larger than the cache's ${this.options.maxBytes} bytes are read with range reads`);
    if (this.admit !== undefined && !this.admit(shard)) return undefined; // the plan reads too little of it to fetch it whole
    const lock = `${copy}.lock`;
    let locked: boolean;
    try {
      fs.mkdirSync(this.dir, { recursive: true }); // the directory may have been removed under us
      locked = tryLock(lock);
    } catch (err) {
      return this.bypass(shard, `the cache directory fails (${(err as Error).message})`);
    }
    if (!locked) {
      // another process fetches it: read from the remote meanwhile, look again soon
      this.retryAt.set(shard, Date.now() + RECHECK_MS);
      return this.bypass(shard, undefined);
    }
    try {
      // it may have been completed between our look and our lock
      const again = await this.openVerified(shard, copy);
      if (again !== undefined) return again;
      const part = path.join(this.dir, partName(path.basename(copy)));
      if (!(await reserveWaiting(() => this.reserve(shard, part, this.nextUse, prefetch), this.downloading, prefetch))) {
        // a read finds no room only when every copy is needed as soon: do not scan again for each of its reads.
        // A prefetch that finds none is simply early; the read that needs the shard asks again.
        if (!prefetch) this.retryAt.set(shard, Date.now() + RECHECK_MS);
        return this.bypass(shard, 'no room: every cached shard is needed sooner than this one (or is being fetched)');
      }
      const downloaded = downloadShard({ remote: this.remote, stats: this.stats, prefetch, isClosed: () => this.closed }, shard, record, part);
      const settled = downloaded.catch(() => undefined);
      this.downloading.add(settled);
      try {
        await downloaded;
        fs.renameSync(part, copy);
        writeProof(copy, record.crc32c);
      } catch (err) {
        fs.rmSync(part, { force: true });
        throw err;
      } finally {
        this.downloading.delete(settled);
      }
      return await this.openVerified(shard, copy, true);
    } finally {
      unlock(lock);
    }
  }

  /**
   * The copy at `file`, checked and opened; removed when it fails the check. Checked: its size, and its whole-shard
   * CRC32C unless this process just checked it while writing it or a proof shows it is the file that was checked
   * (copy-proof.ts); a copy checked here gets a proof.
   */
  private async openVerified(shard: number, file: string, justWritten = false): Promise<OpenCopy | undefined> {
    this.copies.beginOpening(shard);
    try {
      return await this.openChecked(shard, file, justWritten);
    } finally {
      this.copies.endOpening(shard);
    }
  }

  private async openChecked(shard: number, file: string, justWritten: boolean): Promise<OpenCopy | undefined> {
    const record = this.shards[shard] as ShardRecord;
    let source: FileSource;
    try {
      source = await FileSource.open(file, this.sourceOptions);
    } catch {
      return undefined;
    }
    const trusted = justWritten || hasProof(file, record.crc32c);
    let crc = 0;
    let size = -1;
    try {
      size = source.sizeSync();
      if (!trusted && size === record.bytes) crc = await copyCrc32c(source, size);
    } catch {
      size = -1;
    }
    if (size !== record.bytes || (!trusted && crc !== record.crc32c)) {
      await source.close();
      removeCopy(file);
      this.say({ type: 'corrupt', shard: record.file, reason: size !== record.bytes ? `its copy is ${size} bytes, the index says ${record.bytes}` : 'its copy fails its CRC32C' });
      return undefined;
    }
    if (this.closed || this.copies.wasDropped(shard)) {
      await source.close();
      return undefined;
    }
    if (!trusted) writeProof(file, record.crc32c);
    touchCopy(file); // LRU across processes
    return this.copies.set(shard, source);
  }

  /** Makes room for `part` (reserveRoom, shard-fetch.ts), evicting this dataset's copies from this process too. */
  private reserve(shard: number, part: string, nextUse: NextUse | undefined, prefetch = false): Promise<boolean> {
    const mine = new Map<string, number>();
    this.shards.forEach((_, i) => mine.set(this.copyPath(i), i));
    const bytes = (this.shards[shard] as ShardRecord).bytes;
    const isOpening = (s: number): boolean => this.copies.isOpening(s);
    const evicted = (_file: string, s: number | undefined): void => {
      this.stats.evictions++;
      if (s !== undefined) this.dropReady(s);
    };
    return reserveRoom({ root: this.root, dir: this.dir, maxBytes: this.options.maxBytes, shard, bytes, part, copies: mine, nextUse, prefetch, isOpening, evicted });
  }

  /** Where the copy of `shard` goes (made once per shard: a new process asks for every copy as it opens it). */
  private copyPath(shard: number): string {
    return (this.copyPaths[shard] ??= path.join(this.dir, copyName(this.shards[shard] as ShardRecord)));
  }

  private dropReady(shard: number): void {
    this.readyDrops++;
    this.copies.drop(shard);
  }

  private bypass(shard: number, reason: string | undefined): undefined {
    if (reason !== undefined) this.say({ type: 'bypass', shard: (this.shards[shard] as ShardRecord).file, reason });
    return undefined;
  }

  /** Each event once per reason (the first shard it happened to is named), whatever the number of shards. */
  private say(event: CacheEvent): void {
    const key = `${event.type}\0${event.reason}`;
    if (this.said.has(key)) return;
    this.said.add(key);
    this.options.onEvent?.(event);
  }
}
