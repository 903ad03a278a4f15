/**
 * Opens an index file with three reads at most (header, shard table; pages on demand) and answers lookups
 * through a bounded cache of decoded pages, synchronously for local files and asynchronously for any source.
 */
import {
  boundHit,
  checkLeafCount,
  checkLeafPage,
  leafRefByKeySync,
  leafRefByPositionSync,
  runAsync,
  runSync,
  seekKey,
  seekLeaf,
  seekLeafSync,
  seekPosition,
  seekPositionSync,
  type LeafHit,
  type LeafRef,
  type PageOp,
  type TreeInfo,
} from '../../formats/btree-reader.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { DEFAULT_PAGE_SIZE, HEADER_BYTES, decodeIndexHeader, decodeShardTable, indexRemedy, type IndexHeader, type ShardRecord } from '../../formats/index-layout.js';
import { decodePage, decodePageTo, entryAt, type LeafPage, type LeafRecord, type LeafStop, type Page } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import type { ByteSource, SyncByteSource } from '../io/byte-source.js';
import { buildKeyTable, findKey } from './leaf-key-table.js';
import { PageCache } from './page-cache.js';
import { MIN_DECODED_RECORD_BYTES, decodedPageBytes, typedArrayBytes } from './page-cost.js';
import { invalidArg } from './shuffle/shuffle-args.js';

export const DEFAULT_PAGE_CACHE_BYTES = 256 << 20;

/** A record's place: its decoded leaf and its index there. */
export interface LeafSlot {
  leaf: LeafPage;
  slot: number;
}

/**
 * Where index pages come from when the reader's first source is a copy (the index's copy in the shard cache,
 * index-copy.ts) and a page read from it fails its check: `open()` gives the index at the dataset's location, read
 * from then on; `dropped` is told once, before (it removes the copy and says so).
 */
export interface IndexFallback {
  open(): ByteSource;
  dropped(err: unknown): void;
}

/** A page from a copy failing with these is damage in the copy (a page checksum, a file cut short). */
const COPY_DAMAGE: ReadonlySet<string> = new Set([ErrorCodes.CORRUPT_INDEX, ErrorCodes.TRUNCATED]);

/** Leaves decode-to-slot remembers at least (a small cache still caches a leaf on its second visit). */
const VISITED_MIN = 1024;

/** Thrown (and caught) by leafOfIfCached's page loader when a page is not decoded yet. */
const PAGE_NOT_CACHED = Symbol('page not cached');

export class IndexReader {
  readonly tree: TreeInfo;
  readonly cache: PageCache;

  private constructor(
    private source: ByteSource,
    readonly header: IndexHeader,
    readonly shards: ShardRecord[],
    cacheBytes: number,
    private fallback: IndexFallback | undefined,
  ) {
    this.tree = { header, file: source.name };
    this.cache = new PageCache(cacheBytes);
    this.outgrowsCache = header.entryCount * MIN_DECODED_RECORD_BYTES > cacheBytes;
  }

  /** The index's decoded records take more than the page cache holds, at the least a record takes (page-cost.ts). */
  private readonly outgrowsCache: boolean;

  /**
   * Decode-to-slot: once the page cache was full (the index's decoded pages take more than it holds), random lookups
   * mostly reach leaves that are not decoded, and a whole leaf was decoded (and soon evicted) for one record: the
   * synchronous lookups then decode a leaf up to the record they want (decodePageTo), and decode and cache it whole on
   * its second visit while `visited` remembers it (sequential and block-shuffled reads then pay one partial decode per
   * leaf more). On from the start when the index's records cannot fit (outgrowsCache). An index the cache holds is
   * decoded a whole leaf at a time.
   */
  get decodeToSlot(): boolean {
    return this.outgrowsCache || this.cache.full;
  }
  /** Leaves decoded in part lately (cleared when it holds as many as the cache has room for: leavesCacheHolds). */
  private readonly visited = new Set<number>();

  /** Pages the cache's budget holds at the mean cost of those it holds now (VISITED_MIN at least). */
  private leavesCacheHolds(): number {
    const { size, bytes, budget } = this.cache;
    return Math.max(VISITED_MIN, size === 0 ? 0 : Math.floor((budget * size) / bytes));
  }

  /** A cached decoded page: counted at what it takes in memory (page-cost.ts), not at its bytes in the index. */
  private cachePage(pageNo: number, page: Page): void {
    this.cache.set(pageNo, page, decodedPageBytes(page));
  }

  /** `fallback`: when `source` is a copy of the index, where its pages come from if one of the copy's fails. */
  static async open(source: ByteSource, cacheBytes = DEFAULT_PAGE_CACHE_BYTES, fallback?: IndexFallback): Promise<IndexReader> {
    const size = await source.size();
    if (size < HEADER_BYTES) {
      throw new ShardkitError(ErrorCodes.TRUNCATED, `${source.name}: index is ${size} bytes, shorter than its header`, { file: source.name });
    }
    // page 0 whole (the default 4 KiB costs what 128 bytes cost): the header, and a tail that must be zero
    const first = await source.read(0, Math.min(size, DEFAULT_PAGE_SIZE));
    const header = decodeIndexHeader(first, source.name, size);
    const table = await source.read(header.tableOffset, header.tableLength);
    return new IndexReader(source, header, decodeShardTable(table, header, source.name), cacheBytes, fallback);
  }

  get size(): number {
    return this.header.entryCount;
  }

  private loadSync = (pageNo: number): Page => {
    const cached = this.cache.get(pageNo);
    if (cached !== undefined) return cached;
    const page = this.readPageSync(pageNo);
    if (page === undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${this.source.name}: synchronous reads need a local dataset; use the async API`);
    return page;
  };

  /** Page `pageNo`'s bytes, read synchronously (decode-to-slot decodes them in part). */
  private readRawSync(pageNo: number): Uint8Array {
    const src = this.source as SyncByteSource;
    if (typeof src.readSync !== 'function') {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `${this.source.name}: synchronous reads need a local dataset; use the async API`);
    }
    return src.readSync(pageNo * this.header.pageSize, this.header.pageSize);
  }

  /** Page `pageNo` read and decoded synchronously, and cached; undefined when the source is not local. */
  private readPageSync(pageNo: number): Page | undefined {
    const src = this.source as SyncByteSource;
    if (typeof src.readSync !== 'function') return undefined;
    let page: Page;
    try {
      page = decodePage(src.readSync(pageNo * this.header.pageSize, this.header.pageSize), pageNo, this.source.name, false, this.header.layout);
    } catch (err) {
      if (!this.leaveCopy(src, err)) throw err;
      return this.readPageSync(pageNo); // from the index's location now (undefined over http: read asynchronously)
    }
    this.cachePage(pageNo, page);
    return page;
  }

  /** Page `pageNo` read from the source and decoded (from the index's location when the copy's page fails). */
  private async readPage(pageNo: number): Promise<Page> {
    const from = this.source;
    try {
      return decodePage(await from.read(pageNo * this.header.pageSize, this.header.pageSize), pageNo, from.name, false, this.header.layout);
    } catch (err) {
      if (!this.leaveCopy(from, err)) throw err;
      return this.readPage(pageNo);
    }
  }

  /**
   * A read of a page from `from` failed with `err`: when `from` is the index's copy and `err` is damage, the copy is
   * left for the index's location (once: the fallback is told, the copy closed). True when the page should be read
   * again (from the new source).
   */
  private leaveCopy(from: ByteSource, err: unknown): boolean {
    if (from !== this.source) return true; // left already, by another page's read
    const fallback = this.fallback;
    if (fallback === undefined || !(err instanceof ShardkitError) || !COPY_DAMAGE.has(err.code)) return false;
    this.fallback = undefined;
    this.source = fallback.open();
    fallback.dropped(err);
    void from.close().catch(() => undefined); // reads in flight on it finish first
    return true;
  }

  /** Pages being fetched: concurrent lookups that need one page share one read (one HTTP request remotely). */
  private readonly loading = new Map<number, Promise<Page>>();

  /** Leaves are cached without their entry objects (readers make one with entryAt): the budget counts the columns. */
  private loadAsync = (pageNo: number): Page | Promise<Page> => {
    const cached = this.cache.get(pageNo);
    if (cached !== undefined) return cached;
    let pending = this.loading.get(pageNo);
    if (pending === undefined) {
      pending = this.readPage(pageNo)
        .then((page) => {
          this.cachePage(pageNo, page);
          return page;
        })
        .finally(() => this.loading.delete(pageNo));
      this.loading.set(pageNo, pending);
    }
    return pending;
  };

  runSync<T>(op: PageOp<T>): T {
    return runSync(op, this.loadSync);
  }

  runAsync<T>(op: PageOp<T>): Promise<T> {
    return runAsync(op, this.loadAsync);
  }

  findSync(key: string): IndexEntry | undefined {
    const found = this.findSlotSync(key);
    return found === undefined ? undefined : entryAt(found.leaf, found.slot);
  }

  async find(key: string): Promise<IndexEntry | undefined> {
    const found = await this.findSlot(key);
    return found === undefined ? undefined : entryAt(found.leaf, found.slot);
  }

  /** The leaf that holds `key` and its slot there (reads take the record from the leaf's columns), or undefined. */
  findSlotSync(key: string): LeafSlot | undefined {
    if (typeof key !== 'string') throw invalidArg('a string', 'key', key);
    if (!this.decodeToSlot) return this.slotIn(seekLeafSync(this.tree, key, this.loadSync)?.leaf, key);
    const ref = leafRefByKeySync(this.tree, key, this.loadSync);
    if (ref === undefined) return undefined;
    const found = this.leafToSync(ref, { slot: -1, key });
    if (!('index' in found)) return this.slotIn(found, key);
    return found.leaf.keys[0] === key ? { leaf: found.leaf, slot: 0 } : undefined;
  }

  /**
   * The leaf `ref` names, from the page cache, else read and decoded: up to the record `stop` names on a first visit
   * (decode-to-slot), whole on the next one (cached then). Every page is checked as a descent checks it.
   */
  private leafToSync(ref: LeafRef, stop: LeafStop): LeafPage | LeafRecord {
    const cached = this.cache.get(ref.pageNo);
    if (cached !== undefined) return checkLeafPage(this.tree, ref, cached);
    const from = this.source;
    let page: Page | LeafRecord;
    try {
      const bytes = this.readRawSync(ref.pageNo);
      if (this.visited.delete(ref.pageNo)) {
        page = decodePage(bytes, ref.pageNo, from.name, false, this.header.layout);
      } else {
        if (this.visited.size >= this.leavesCacheHolds()) this.visited.clear();
        this.visited.add(ref.pageNo);
        page = decodePageTo(bytes, ref.pageNo, from.name, stop, this.header.layout);
      }
    } catch (err) {
      if (!this.leaveCopy(from, err)) throw err;
      return this.leafToSync(ref, stop); // from the index's location now
    }
    if ('index' in page) {
      checkLeafCount(this.tree, ref, page.count);
      return page;
    }
    this.cachePage(ref.pageNo, page); // decoded whole (a branch where a leaf should be: refused just below)
    return checkLeafPage(this.tree, ref, page);
  }

  async findSlot(key: string): Promise<LeafSlot | undefined> {
    if (typeof key !== 'string') throw invalidArg('a string', 'key', key);
    return this.slotIn((await this.runAsync(seekLeaf(this.tree, key)))?.leaf, key);
  }

  /**
   * Key lookups inside a leaf go through a hash table of its keys (leaf-key-table.ts), built the first time a
   * lookup reaches the leaf and kept on the decoded page as its `keyTable`: one probe instead of ~8 string
   * comparisons of a binary search over ~250 keys. It lives as long as the decoded page does in the page cache.
   */
  private slotIn(leaf: LeafPage | undefined, key: string): LeafSlot | undefined {
    if (leaf === undefined) return undefined;
    let table = leaf.keyTable;
    if (table === undefined) {
      table = leaf.keyTable = buildKeyTable(leaf.keys);
      this.cache.grow(leaf.pageNo, leaf, typedArrayBytes(table)); // the table takes 16-32 bytes a key more
    }
    const slot = findKey(table, leaf.keys, key);
    return slot < 0 ? undefined : { leaf, slot };
  }

  /**
   * The leaf of the last position lookup: sequential and block-shuffled epochs ask for neighbouring positions, which
   * are answered from it without a descent (the leaf was checked against the tree when it was reached).
   */
  private lastLeaf: LeafHit | undefined;

  private nearLeaf(position: number): LeafHit | undefined {
    const hit = this.lastLeaf;
    if (hit === undefined) return undefined;
    const slot = position - hit.base;
    return slot >= 0 && slot < hit.leaf.keys.length ? hit : undefined; // else a descent checks the range
  }

  atSync(position: number): IndexEntry {
    const hit = this.leafOfSync(position);
    return entryAt(hit.leaf, position - hit.base);
  }

  async at(position: number): Promise<IndexEntry> {
    const hit = await this.leafOf(position);
    return entryAt(hit.leaf, position - hit.base);
  }

  /** The leaf holding `position` (0 <= position < size) and its first record's position: slot = position - base. */
  leafOfSync(position: number): LeafHit {
    checkPositionType(position);
    const near = this.nearLeaf(position);
    if (near !== undefined) return near;
    if (!this.decodeToSlot) return (this.lastLeaf = seekPositionSync(this.tree, position, this.loadSync));
    const ref = leafRefByPositionSync(this.tree, position, this.loadSync);
    const found = this.leafToSync(ref, { slot: position - ref.base, key: undefined });
    // a record alone is a leaf of one record whose first sample is `position`
    if ('index' in found) return { leaf: found.leaf, base: position, index: 0 };
    return (this.lastLeaf = { leaf: found, base: ref.base, index: position - ref.base });
  }

  /**
   * {@link IndexReader.leafOfSync} for any source (http too): from decoded pages, and pages read synchronously when
   * the source is local (a FileSource: the index's copy in the shard cache); undefined when a page of the descent is
   * neither (the caller then looks it up with {@link IndexReader.leafOf}).
   */
  leafOfIfCached(position: number): LeafHit | undefined {
    checkPositionType(position);
    const near = this.nearLeaf(position);
    if (near !== undefined) return near;
    try {
      return (this.lastLeaf = seekPositionSync(this.tree, position, this.loadCached));
    } catch (err) {
      if (err === PAGE_NOT_CACHED) return undefined;
      throw err;
    }
  }

  private loadCached = (pageNo: number): Page => {
    if (this.cache.has(pageNo)) return this.cache.get(pageNo) as Page;
    // a local source (the index's copy in the shard cache, index-copy.ts) is read now, as leafOfSync reads it
    if (typeof (this.source as SyncByteSource).readSync === 'function') {
      this.cache.misses++; // as loadSync counts it
      const page = this.readPageSync(pageNo); // undefined: the copy was left for http on this page
      if (page !== undefined) return page;
    }
    throw PAGE_NOT_CACHED; // not counted as a miss: the async lookup that follows counts it
  };

  /** Async twin of {@link IndexReader.leafOfSync}. */
  async leafOf(position: number): Promise<LeafHit> {
    checkPositionType(position);
    return this.nearLeaf(position) ?? (this.lastLeaf = await this.runAsync(seekPosition(this.tree, position)));
  }

  async lowerBound(key: string): Promise<number> {
    return boundHit(await this.runAsync(seekKey(this.tree, key)));
  }

  leafAt(position: number): Promise<LeafHit> {
    return this.runAsync(seekPosition(this.tree, position));
  }

  /**
   * The leaf after `leaf` along the leaf links (forward range scans). The link must lead to a leaf whose first key
   * follows `leaf`'s last key, else CORRUPT_INDEX; `shardkit verify` checks the whole chain against the tree.
   */
  async nextLeaf(leaf: LeafPage): Promise<LeafPage> {
    const bad = (why: string): never => {
      throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${this.source.name}: leaf ${leaf.pageNo} ${why}; ${indexRemedy(this.header.layout)}`, { file: this.source.name });
    };
    if (leaf.next === 0 || leaf.next >= this.header.pageCount) bad(`links to page ${leaf.next}`);
    const next = await this.loadAsync(leaf.next);
    if (next.type !== 'leaf') return bad(`links to page ${leaf.next}, which is not a leaf`);
    if (compareKeys(next.keys[0] as string, leaf.keys[leaf.keys.length - 1] as string) <= 0) bad('links to a leaf out of key order');
    return next;
  }

  close(): Promise<void> {
    return this.source.close();
  }
}

/** A position is a whole number (a string or 1.5 is a caller's mistake, INVALID_ARG); its range the descent checks. */
function checkPositionType(position: unknown): void {
  if (!Number.isInteger(position)) throw invalidArg('an integer', 'position', position);
}
