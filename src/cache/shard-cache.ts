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
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { FileSource, type FileSourceOptions } from '../io/file-source.js';
import { redactLocation } from '../io/location.js';
import { copyName, datasetId, isIndexCopy, partName, scanCache, SPACE_LOCK } from './cache-dir.js';
import { tryLock, unlock, withLock } from './cache-lock.js';
import { hasProof, proofPath, removeCopy, touchCopy, writeProof } from './copy-proof.js';
import { CopyWriter } from './copy-writer.js';
import { chooseVictims, chooseVictimsAhead, type AheadCandidate } from './eviction.js';

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

/**
 * Most copies open at once when openDataset's `maxOpenShards` is not given (when it is, copies obey it as local shards
 * do). Above the local reader's 64: reopening a copy also checks its proof, and a full shuffle over 505 shards with
 * 64 open reopened ~35,000 an epoch, 2.0 s of CPU against 0.12 s with all open (40,000 samples, bench/cache.mjs's
 * timed dataset). 512 stays well under the usual `ulimit -n` of 1024.
 */
export const DEFAULT_CACHE_MAX_OPEN = 512;

/** Downloads go in requests of this many bytes: memory stays flat, and each request is retried on its own. */
const DOWNLOAD_CHUNK_BYTES = 8 * 1024 * 1024;
/** A shard being fetched by another process is looked for again after this long (reads go remote meanwhile). */
const RECHECK_MS = 500;

interface Ready {
  source: FileSource;
}

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
  /** Open verified copies, least recently used first (Map order), at most maxOpen of them. */
  private readonly ready = new Map<number, Ready>();
  /**
   * Copies this process verified (or found by their proof) and keeps closed to stay within maxOpen: opened again, by
   * their proof, when read (readyNow). One descriptor (and map) per open copy; a cache of thousands of shards would
   * otherwise run out of descriptors (`ulimit -n`, often 1024).
   */
  private readonly parked = new Set<number>();
  /**
   * Shards whose copy was evicted (or distrusted) by this process since openVerified began opening it: the copy it
   * opens is then not made ready. Without this, a copy evicted between its rename and its open stayed ready through
   * its unlinked file: reads never went remote again and the disk held more than maxBytes (bench/cache.mjs, full
   * shuffle, 25 % LRU cache: 25 of 26 shards ready, 6 on disk).
   */
  private readonly dropped = new Set<number>();
  /** Shards whose copy openVerified is opening: reserve() does not evict them (they are about to be read). */
  private readonly opening = new Set<number>();
  private readonly inflight = new Map<number, { promise: Promise<Ready | undefined>; prefetch: boolean }>();
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
    private readonly maxOpen: number,
  ) {
    this.root = root;
    this.dir = dir;
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
    if (got === undefined && pending?.prefetch === true) got = await (this.ready.get(shard) ?? this.inflight.get(shard)?.promise ?? this.acquire(shard, false));
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
    return this.ready.has(shard);
  }

  /**
   * {@link ShardCache.isReady}, or else opens the shard's copy now, synchronously, when its proof shows it is the very
   * file that was checked (copy-proof.ts), as openVerified trusts it: a new process then reads its first batches of
   * each shard synchronously too. A copy without a proof, or one this process is fetching or opening, is left to the
   * async path (which checks it whole, or waits).
   */
  readyNow(shard: number): boolean {
    if (this.ready.has(shard)) return true;
    if (this.closed || this.inflight.has(shard) || this.opening.has(shard)) return false;
    const record = this.shards[shard] as ShardRecord;
    const file = this.copyPath(shard);
    const wasParked = this.parked.delete(shard);
    let source: FileSource | undefined;
    if (hasProof(file, record.crc32c)) {
      try {
        source = FileSource.openSync(file, this.sourceOptions);
        if (source.sizeSync() !== record.bytes) {
          source.closeSync();
          source = undefined;
        }
      } catch {
        source = undefined; // evicted by another process meanwhile
      }
    }
    if (source === undefined) {
      // a copy this process trusted is gone: a read that counted on it is read again (readAgainIfDamaged)
      if (wasParked) this.suspects++;
      return false;
    }
    touchCopy(file); // LRU across processes
    this.setReady(shard, source);
    return true;
  }

  /**
   * For a prefetch: whether `shard` has a verified copy, opened now ({@link ShardCache.readyNow}) while fewer than
   * maxOpen are open, else only found by its proof and parked (opened when read): a prefetch scan never closes a copy
   * that the reads before it need.
   */
  findNow(shard: number): boolean {
    if (this.ready.size < this.maxOpen) return this.readyNow(shard);
    if (this.parked.has(shard)) return true;
    if (this.closed || this.inflight.has(shard) || this.opening.has(shard)) return false;
    if (!hasProof(this.copyPath(shard), (this.shards[shard] as ShardRecord).crc32c)) return false;
    this.parked.add(shard);
    return true;
  }

  /** The open copy of `shard`, opened again when it was parked; undefined when there is none (or no longer). */
  private openCopy(shard: number): Ready | undefined {
    const local = this.ready.get(shard);
    if (local !== undefined) {
      if (this.parked.size > 0) {
        // most recently used last: the copy closed to make room is the least recently used
        this.ready.delete(shard);
        this.ready.set(shard, local);
      }
      return local;
    }
    return this.parked.has(shard) && this.readyNow(shard) ? this.ready.get(shard) : undefined;
  }

  /** Records `source` as the open copy of `shard`; past maxOpen, the least recently used other copy is closed and parked. */
  private setReady(shard: number, source: FileSource): Ready {
    const open = this.ready.get(shard);
    if (open !== undefined && !open.source.isClosed) {
      // opened meanwhile by another path (readyNow while openVerified awaited): one descriptor per copy
      if (open.source !== source) void source.close().catch(() => undefined);
      return open;
    }
    const ready = { source };
    this.ready.set(shard, ready);
    this.parked.delete(shard);
    if (this.ready.size > this.maxOpen) {
      for (const [s, r] of this.ready) {
        if (s === shard) continue;
        this.ready.delete(s);
        this.parked.add(s);
        void r.source.close().catch(() => undefined); // async reads in flight on it finish first
        break;
      }
    }
    return ready;
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
    return this.ready.size + this.parked.size;
  }

  /** Whether the shard's copy is ready (open or parked) or on its way in this process. */
  has(shard: number): boolean {
    return this.ready.has(shard) || this.parked.has(shard) || this.inflight.has(shard);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.inflight.values()].map((p) => p.promise.catch(() => undefined)));
    for (const r of this.ready.values()) await r.source.close();
    this.ready.clear();
    this.parked.clear();
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

  private acquire(shard: number, prefetch: boolean): Promise<Ready | undefined> {
    const promise = this.obtain(shard, prefetch).finally(() => this.inflight.delete(shard));
    this.inflight.set(shard, { promise, prefetch });
    return promise;
  }

  /** A verified local copy of `shard`: found, or fetched by this process; undefined when it must be read remotely. */
  private async obtain(shard: number, prefetch: boolean): Promise<Ready | undefined> {
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
      if (!(await this.reserveWaiting(shard, part, prefetch))) {
        // a read finds no room only when every copy is needed as soon: do not scan again for each of its reads.
        // A prefetch that finds none is simply early; the read that needs the shard asks again.
        if (!prefetch) this.retryAt.set(shard, Date.now() + RECHECK_MS);
        return this.bypass(shard, 'no room: every cached shard is needed sooner than this one (or is being fetched)');
      }
      const downloaded = this.download(shard, record, part, prefetch);
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
  private async openVerified(shard: number, file: string, justWritten = false): Promise<Ready | undefined> {
    this.dropped.delete(shard);
    this.opening.add(shard);
    try {
      return await this.openChecked(shard, file, justWritten);
    } finally {
      this.opening.delete(shard);
    }
  }

  private async openChecked(shard: number, file: string, justWritten: boolean): Promise<Ready | undefined> {
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
      if (!trusted && size === record.bytes) {
        for (let at = 0; at < size; at += DOWNLOAD_CHUNK_BYTES) crc = crc32c(await source.read(at, Math.min(DOWNLOAD_CHUNK_BYTES, size - at)), crc);
      }
    } catch {
      size = -1;
    }
    if (size !== record.bytes || (!trusted && crc !== record.crc32c)) {
      await source.close();
      removeCopy(file);
      this.say({ type: 'corrupt', shard: record.file, reason: size !== record.bytes ? `its copy is ${size} bytes, the index says ${record.bytes}` : 'its copy fails its CRC32C' });
      return undefined;
    }
    if (this.closed || this.dropped.has(shard)) {
      await source.close();
      return undefined;
    }
    if (!trusted) writeProof(file, record.crc32c);
    touchCopy(file); // LRU across processes
    return this.setReady(shard, source);
  }

  /**
   * {@link reserve}; for a read, when this process's own downloads hold the room, waits for them and tries again
   * (they become copies that can be evicted) rather than reading the shard remotely.
   */
  private async reserveWaiting(shard: number, part: string, prefetch: boolean): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      if (await this.reserve(shard, part, this.nextUse, prefetch)) return true;
      // only downloads past their reservation hold room; waiting on another read that waits too would deadlock
      const others = [...this.downloading];
      if (prefetch || others.length === 0 || attempt >= 8) return false;
      await Promise.race(others);
    }
  }

  /**
   * Makes room for `part` under the directory-wide lock: scans every file of the cache, evicts what the policy
   * picks, and creates `part` while still holding the lock, so concurrent reservations cannot overshoot maxBytes.
   */
  private reserve(shard: number, part: string, nextUse: NextUse | undefined, prefetch = false): Promise<boolean> {
    const record = this.shards[shard] as ShardRecord;
    return withLock(path.join(this.root, SPACE_LOCK), () => {
      const files = scanCache(this.root);
      const used = files.reduce((n, f) => n + f.bytes, 0);
      const need = used + record.bytes - this.options.maxBytes;
      const mine = new Map<string, number>();
      this.shards.forEach((_, i) => mine.set(this.copyPath(i), i));
      const forUse = nextUse === undefined ? Infinity : nextUse(shard);
      const candidates: AheadCandidate[] = files
        // this dataset's index copy is read by every process that uses it (index-copy.ts): never evicted by them
        .filter((f) => f.complete && !this.opening.has(mine.get(f.path) ?? -1) && !(path.dirname(f.path) === this.dir && isIndexCopy(path.basename(f.path))))
        .map((f) => {
          const s = mine.get(f.path);
          const planned = s !== undefined && nextUse !== undefined;
          return { id: f.path, bytes: f.bytes, lastUse: f.mtimeMs, nextUse: planned ? nextUse(s) : Infinity, nextUseThen: planned ? nextUse(s, forUse) : Infinity };
        });
      // a prefetch evicts only what MIN would when the shard is read; a read evicts what it must now
      const victims = prefetch && Number.isFinite(forUse) ? chooseVictimsAhead(candidates, need, forUse) : chooseVictims(candidates, need, forUse);
      if (victims === undefined) return false;
      for (const v of victims) {
        removeCopy(v.id);
        this.stats.evictions++;
        const s = mine.get(v.id);
        if (s !== undefined) this.dropReady(s);
      }
      fs.closeSync(fs.openSync(part, 'wx'));
      return true;
    });
  }

  /** Where the copy of `shard` goes (made once per shard: a new process asks for every copy as it opens it). */
  private copyPath(shard: number): string {
    return (this.copyPaths[shard] ??= path.join(this.dir, copyName(this.shards[shard] as ShardRecord)));
  }

  private dropReady(shard: number): void {
    this.readyDrops++;
    this.dropped.add(shard);
    this.parked.delete(shard);
    const r = this.ready.get(shard);
    if (r === undefined) return;
    this.ready.delete(shard);
    void r.source.close().catch(() => undefined); // reads in flight finish first (FileSource closes after them)
  }

  private async download(shard: number, record: ShardRecord, part: string, prefetch: boolean): Promise<void> {
    const handle = await fsp.open(part, 'r+');
    try {
      let crc = 0;
      for (let at = 0; at < record.bytes; at += DOWNLOAD_CHUNK_BYTES) {
        if (this.closed) throw new ShardkitError(ErrorCodes.CLOSED, `the dataset was closed while ${record.file} was being cached`);
        const chunk = await this.remote(shard, at, Math.min(DOWNLOAD_CHUNK_BYTES, record.bytes - at));
        this.stats.remoteBytes += chunk.length;
        if (prefetch) this.stats.prefetchedBytes += chunk.length;
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
