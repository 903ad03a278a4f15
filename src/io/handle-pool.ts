import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { ByteSource } from './byte-source.js';
import { expectIntegerInRange } from './io-options.js';

/** Enough handles for the shards a loader touches at once, far under the usual `ulimit -n` of 1024. */
export const DEFAULT_MAX_OPEN = 64;
const MAX_OPEN_LIMIT = 65_536;

export interface HandlePoolOptions<T extends ByteSource> {
  /** Opens the source for a key (a path or URL); used by {@link HandlePool.acquire}. */
  open: (key: string) => Promise<T>;
  /** Opens synchronously; required only for {@link HandlePool.acquireSync}. */
  openSync?: (key: string) => T;
  /** At most this many sources open at once (see acquireSync for the one exception). Default 64. */
  maxOpen?: number;
  /**
   * Called once per actual open, before anyone reads (e.g. to check a shard's size or fingerprint). If it throws,
   * the source is closed and the acquire fails; the next acquire of that key opens again. Must be synchronous
   * (return nothing) for sources opened by acquireSync.
   */
  onOpen?: (source: T, key: string) => void | Promise<void>;
  /** Errors from closing an evicted source, which has no caller left to report to. Ignored if not given. */
  onCloseError?: (err: unknown, key: string) => void;
}

/** What the pool did, for the bench and for tests; plain numbers. */
export interface HandlePoolCounters {
  /** Sources opened (each onOpen call). */
  opens: number;
  /** Sources closed (evicted, released over budget, or at pool close). */
  closes: number;
  /** Idle sources closed to make room for another key. */
  evictions: number;
  /** Acquires that found their source already open. */
  hits: number;
  /** Async acquires that had to wait because every open source was in use. */
  waits: number;
  /** acquireSync calls that opened past maxOpen because every open source was in use. */
  overflows: number;
  /** The most sources open (or opening) at one time. */
  peakOpen: number;
}

interface Entry<T> {
  readonly key: string;
  source: T | undefined;
  /** Settles when an async open (and onOpen) finished; undefined once open or for sync opens. */
  opening: Promise<void> | undefined;
  refs: number;
  /** Links in the idle list (least recently released first); `idle` says whether the entry is in it. */
  idle: boolean;
  older: Entry<T> | undefined;
  newer: Entry<T> | undefined;
}

/**
 * A bounded, LRU set of open byte sources keyed by location: one open per shard per process, however many shards.
 *
 * Semantics:
 * - `acquire(key)`/`acquireSync(key)` return the open source for `key`, opening it if needed, and take a
 *   reference; every acquire must be paired with exactly one `release(source)` (or use `use`/`useSync`).
 * - A source with references is never closed: eviction picks the least recently released idle source.
 * - At most `maxOpen` sources are open or opening. When all of them are in use, `acquire` and `acquireWhenFree`
 *   wait (FIFO-ish) for a release. `acquireSync` cannot wait, so it opens one past the budget and that source is
 *   closed as soon as it is released; with one synchronous reader the overshoot is at most one handle.
 * - Concurrent acquires of one key share one open. If onOpen or the open fails, every waiter gets the error and
 *   nothing is cached.
 * - `close()` closes idle sources now and in-use ones at their release; later acquires fail with CLOSED.
 *
 * @example
 * const pool = new HandlePool({ open: (p) => FileSource.open(p), openSync: (p) => FileSource.openSync(p) });
 * const bytes = await pool.use(shardPath, (src) => src.read(offset, length));
 */
export class HandlePool<T extends ByteSource> {
  readonly maxOpen: number;
  readonly counters: HandlePoolCounters = {
    opens: 0,
    closes: 0,
    evictions: 0,
    hits: 0,
    waits: 0,
    overflows: 0,
    peakOpen: 0,
  };
  private readonly options: HandlePoolOptions<T>;
  /** Open or opening entries. */
  private readonly entries = new Map<string, Entry<T>>();
  /**
   * Entries with no references, least recently released first: an intrusive doubly linked list, so the acquire and
   * release of every synchronous read move an entry with a few pointer writes instead of a Map delete and insert
   * (measured ~0.1 us per getSync, and no hash-table rehashing from the churn).
   */
  private idleOldest: Entry<T> | undefined;
  private idleNewest: Entry<T> | undefined;
  private idleCount = 0;
  private readonly bySource = new Map<T, Entry<T>>();
  private slotWaiters: Array<() => void> = [];
  private closed = false;

  constructor(options: HandlePoolOptions<T>) {
    if (typeof options.open !== 'function') {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected function for open but received ${typeof options.open}`);
    }
    this.maxOpen = expectIntegerInRange('maxOpen', options.maxOpen ?? DEFAULT_MAX_OPEN, 1, MAX_OPEN_LIMIT);
    this.options = options;
  }

  /** Sources open or being opened right now. */
  get openCount(): number {
    return this.entries.size;
  }

  /** Sources open with at least one reference. */
  get inUseCount(): number {
    return this.entries.size - this.idleCount;
  }

  async acquire(key: string): Promise<T> {
    for (;;) {
      this.assertOpen();
      const entry = this.entries.get(key);
      if (entry !== undefined) {
        this.ref(entry);
        if (entry.source === undefined) await this.awaitOpening(entry);
        else this.counters.hits++;
        return this.sourceOf(entry);
      }
      if (this.makeRoom()) {
        const fresh = this.addEntry(key);
        fresh.refs = 1;
        fresh.opening = this.openAsync(fresh);
        await this.awaitOpening(fresh);
        return this.sourceOf(fresh);
      }
      this.counters.waits++;
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
  }

  /**
   * For an async reader of sources that open synchronously (local files, whose onOpen is synchronous): waits while
   * every open source is in use, as acquire does, then takes the source as acquireSync does. So reads held across an
   * await never open past maxOpen, however many run at once (acquireSync in each went one past it per read).
   */
  async acquireWhenFree(key: string): Promise<T> {
    for (;;) {
      this.assertOpen();
      if (this.entries.has(key) || this.entries.size < this.maxOpen || this.idleOldest !== undefined) return this.acquireSync(key);
      this.counters.waits++;
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
  }

  acquireSync(key: string): T {
    this.assertOpen();
    const entry = this.entries.get(key);
    if (entry?.source !== undefined) {
      this.ref(entry);
      this.counters.hits++;
      return entry.source;
    }
    const openSync = this.options.openSync;
    if (openSync === undefined) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, 'Expected an openSync option for acquireSync but received none');
    }
    // An async open of this key may be in flight; the sync open wins and the async one closes its duplicate.
    const target = entry ?? (this.makeRoom() ? this.addEntry(key) : this.addOverflowEntry(key));
    let source: T | undefined;
    try {
      source = openSync(key);
      this.counters.opens++;
      const hookResult = this.options.onOpen?.(source, key);
      if (isPromiseLike(hookResult)) {
        hookResult.then(undefined, () => undefined);
        throw new ShardkitError(
          ErrorCodes.INVALID_ARG,
          `Expected a synchronous onOpen for acquireSync but it returned a Promise (${key})`,
        );
      }
    } catch (err) {
      if (source !== undefined) this.closeQuietly(key, source);
      if (target.opening === undefined) this.removeEntry(target);
      this.wakeOne();
      throw err;
    }
    target.source = source;
    this.bySource.set(source, target);
    this.ref(target);
    return source;
  }

  /** Drops one reference taken by acquire/acquireSync. Releasing a source that holds none is a bug: INVALID_ARG. */
  release(source: T): void {
    const entry = this.bySource.get(source);
    if (entry === undefined || entry.refs === 0) {
      throw new ShardkitError(
        ErrorCodes.INVALID_ARG,
        `Expected a source acquired from this pool but received ${source.name}, which holds no reference`,
      );
    }
    entry.refs--;
    if (entry.refs > 0) return;
    if (this.closed || this.entries.size > this.maxOpen) {
      this.evict(entry, false);
    } else {
      this.idleAppend(entry);
    }
    this.wakeOne();
  }

  /** Acquires `key`, runs `fn`, and releases even if `fn` throws. */
  async use<R>(key: string, fn: (source: T) => Promise<R> | R): Promise<R> {
    const source = await this.acquire(key);
    try {
      return await fn(source);
    } finally {
      this.release(source);
    }
  }

  useSync<R>(key: string, fn: (source: T) => R): R {
    const source = this.acquireSync(key);
    try {
      return fn(source);
    } finally {
      this.release(source);
    }
  }

  /** Closes idle sources now and in-use ones when released; pending and later acquires fail with CLOSED. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const closing: Array<Promise<void>> = [];
    const idle: Array<Entry<T>> = [];
    for (let e = this.idleOldest; e !== undefined; e = e.newer) idle.push(e);
    for (const entry of idle) {
      const source = entry.source;
      this.removeEntry(entry);
      if (source !== undefined) {
        this.counters.closes++;
        closing.push(source.close().catch((err: unknown) => this.options.onCloseError?.(err, entry.key)));
      }
    }
    const waiters = this.slotWaiters;
    this.slotWaiters = [];
    for (const wake of waiters) wake();
    await Promise.all(closing);
  }

  private async openAsync(entry: Entry<T>): Promise<void> {
    let source: T | undefined;
    try {
      source = await this.options.open(entry.key);
      this.counters.opens++;
      await this.options.onOpen?.(source, entry.key);
    } catch (err) {
      if (source !== undefined) this.closeQuietly(entry.key, source);
      if (entry.source === undefined) this.removeEntry(entry);
      this.wakeOne();
      throw err;
    } finally {
      entry.opening = undefined;
    }
    if (entry.source !== undefined) {
      this.closeQuietly(entry.key, source); // acquireSync opened this key meanwhile
      return;
    }
    entry.source = source;
    this.bySource.set(source, entry);
    if (this.closed && entry.refs === 0) this.evict(entry, false);
  }

  private async awaitOpening(entry: Entry<T>): Promise<void> {
    try {
      await entry.opening;
    } catch (err) {
      if (entry.source !== undefined) return; // acquireSync opened the key while the async open failed
      entry.refs--;
      throw err;
    }
  }

  private sourceOf(entry: Entry<T>): T {
    const source = entry.source;
    if (source === undefined) throw new Error('HandlePool invariant: acquired entry has no source');
    if (this.closed) {
      this.release(source);
      this.assertOpen();
    }
    return source;
  }

  /** True if a new entry fits in the budget, after evicting the least recently used idle source if needed. */
  private makeRoom(): boolean {
    if (this.entries.size < this.maxOpen) return true;
    const oldest = this.idleOldest;
    if (oldest === undefined) return false;
    this.evict(oldest, true);
    return this.entries.size < this.maxOpen;
  }

  private addEntry(key: string): Entry<T> {
    const entry: Entry<T> = { key, source: undefined, opening: undefined, refs: 0, idle: false, older: undefined, newer: undefined };
    this.entries.set(key, entry);
    if (this.entries.size > this.counters.peakOpen) this.counters.peakOpen = this.entries.size;
    return entry;
  }

  private addOverflowEntry(key: string): Entry<T> {
    this.counters.overflows++;
    return this.addEntry(key);
  }

  private ref(entry: Entry<T>): void {
    if (entry.refs === 0) this.idleRemove(entry);
    entry.refs++;
  }

  private evict(entry: Entry<T>, forRoom: boolean): void {
    const source = entry.source;
    this.removeEntry(entry);
    if (source === undefined) return;
    if (forRoom) this.counters.evictions++;
    this.closeQuietly(entry.key, source);
  }

  private removeEntry(entry: Entry<T>): void {
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    this.idleRemove(entry);
    if (entry.source !== undefined) this.bySource.delete(entry.source);
  }

  private idleAppend(entry: Entry<T>): void {
    if (entry.idle) this.idleRemove(entry);
    entry.idle = true;
    entry.older = this.idleNewest;
    entry.newer = undefined;
    if (this.idleNewest === undefined) this.idleOldest = entry;
    else this.idleNewest.newer = entry;
    this.idleNewest = entry;
    this.idleCount++;
  }

  private idleRemove(entry: Entry<T>): void {
    if (!entry.idle) return;
    entry.idle = false;
    if (entry.older === undefined) this.idleOldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === undefined) this.idleNewest = entry.older;
    else entry.newer.older = entry.older;
    entry.older = undefined;
    entry.newer = undefined;
    this.idleCount--;
  }

  /** Sources release their OS resource inside close() before it returns (FileSource does), so the bound holds now. */
  private closeQuietly(key: string, source: T): void {
    this.counters.closes++;
    source.close().catch((err: unknown) => this.options.onCloseError?.(err, key));
  }

  private wakeOne(): void {
    const wake = this.slotWaiters.shift();
    if (wake !== undefined) wake();
  }

  private assertOpen(): void {
    if (this.closed) throw new ShardkitError(ErrorCodes.CLOSED, 'The handle pool was closed; open the dataset again');
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}
