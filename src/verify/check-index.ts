/**
 * Checks every invariant of an index file, page by page, reporting problems instead of stopping at the first:
 * every page reachable exactly once from the root, levels decreasing by one to the leaves, keys strictly increasing
 * across leaves, each branch key equal to the first key of its child, subtree counts equal to what the parent
 * promised, leaf links in key order from the header's first leaf, header totals (samples, members, span bytes),
 * each shard's sample count in the shard table, every key and extension safe by the writer's rules (no `..`
 * segment, no `/` in an extension), and every span inside its shard and apart from every other span of that
 * shard (the last two by the sink the shard pass gives: see shard-stream.ts). Also sums the members' original and
 * stored bytes, for the caller to compare with the manifest.
 * Memory: one byte per page and 8 bytes per shard; nothing per sample. Each leaf's records go to a {@link LeafSink}
 * as the leaf is read, in key order, and are not kept.
 */
import { isHttpDeadline } from '../io/http-client.js';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry } from '../../formats/index-entry.js';
import type { IndexHeader, ShardRecord } from '../../formats/index-layout.js';
import { PAGE_FLAGS, decodePage, entryAt, type LeafPage, type Page } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { checkStoredKeyAndExts } from '../../formats/sample-layout.js';
import { LeafScan } from './leaf-scan.js';
import { ReadAhead } from './read-ahead.js';
import type { ByteSource } from '../io/byte-source.js';
import type { NativeAddon } from '../native/native.js';

/**
 * One leaf's samples, record i at index i (its slot in the leaf): where its span is and, for a sample that is one
 * member stored as is filling its span, that member's CRC32C (else -1: its entry says what to check).
 */
export interface LeafRecords {
  count: number;
  shard: ArrayLike<number>;
  offset: ArrayLike<number>;
  length: ArrayLike<number>;
  loneCrc: ArrayLike<number>;
}

/** Takes each leaf's records as the walk reads them, in key order (a shard number may be outside the table). */
export interface LeafSink {
  leaf(records: LeafRecords, pageNo: number): void | Promise<void>;
  /** The sink checks tar member names: the walk's scan lists the name of each record of one stored member. */
  readonly names?: boolean;
}

export interface IndexProblem {
  what: string;
  /** The sample concerned, when the problem is about one. */
  key?: string;
  shard?: number;
  offset?: number;
}

export interface IndexCheckResult {
  pages: number;
  samples: number;
  members: number;
  /** Original bytes over all members of the samples found. */
  memberBytes: number;
  /** Stored bytes (after compression) over the same members. */
  storedBytes: number;
  /** Samples the tree places in each shard (valid shard numbers only). */
  perShard: Float64Array;
  problems: IndexProblem[];
}

/**
 * How much of the index {@link PageReader.read} reads at once: the leaves of an index written by pack lie one after
 * the other, and one read of 1 MiB costs less than 256 reads of a page (a system call each, or an HTTP request).
 */
export const INDEX_WINDOW_BYTES = 1 << 20;

/** Decoded pages, read once each during the walk and again (rarely) when a span is checked. */
export class PageReader {
  private readonly cache = new Map<number, Page>();
  private window: Uint8Array = new Uint8Array(0);
  private reader: ReadAhead | undefined;
  private windowStart = 0;
  private fileBytes: number | undefined;

  constructor(
    private readonly source: ByteSource,
    private readonly header: IndexHeader,
    private readonly maxCached = 256,
  ) {}

  /**
   * The bytes of page `pageNo`, undecoded and not cached: a view into a window of {@link INDEX_WINDOW_BYTES} read
   * ahead (the window after it is read while this one is checked), valid until the next call. A window that cannot
   * be read whole is not used: the page alone is read, and fails with the error that names it.
   */
  async read(pageNo: number): Promise<Uint8Array> {
    const { pageSize } = this.header;
    const at = pageNo * pageSize;
    const from = at - this.windowStart;
    if (from >= 0 && from + pageSize <= this.window.length) return this.window.subarray(from, from + pageSize);
    this.fileBytes ??= await this.source.size();
    const windowBytes = (bytes: number): number => {
      const room = Math.min(INDEX_WINDOW_BYTES, this.fileBytes as number - bytes);
      return room - (room % pageSize);
    };
    const length = windowBytes(at);
    if (length > pageSize) {
      try {
        this.reader ??= new ReadAhead(this.source);
        this.window = await this.reader.read(at, length, windowBytes(at + length));
        this.windowStart = at;
        return this.window.subarray(0, pageSize);
      } catch (err) {
        if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
      }
    }
    return this.source.read(at, pageSize);
  }

  async load(pageNo: number): Promise<Page> {
    const hit = this.cache.get(pageNo);
    if (hit !== undefined) return hit;
    // a page read alone: branch pages lie apart from the leaves, and must not move the leaves' window
    const bytes = await this.source.read(pageNo * this.header.pageSize, this.header.pageSize);
    const page = decodePage(bytes, pageNo, this.source.name, true, this.header.layout);
    // the page checksum covers the flags byte, but decodePage accepts any flags (readers ignore them): SPEC says 0
    if (bytes[PAGE_FLAGS] !== 0) throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${this.source.name}: page ${pageNo} has unknown flags ${bytes[PAGE_FLAGS]}`);
    if (this.cache.size >= this.maxCached) this.cache.delete(this.cache.keys().next().value as number);
    this.cache.set(pageNo, page);
    return page;
  }

  /** Waits for the window read ahead, if any: before the source is closed. */
  async stop(): Promise<void> {
    await this.reader?.stop();
  }

  /** The entry in slot `slot` of leaf `pageNo` (as a {@link LeafSink} saw it). */
  async entry(pageNo: number, slot: number): Promise<IndexEntry> {
    // that entry alone: `entries` would make (and keep) every entry of the page for the one or two asked for
    return entryAt((await this.load(pageNo)) as LeafPage, slot);
  }
}

/**
 * Walks the index checking every invariant; each leaf's records go to `sink` in key order as they are read (leaves
 * read by `native`'s scan when given: the same records, faster).
 */
export async function checkIndex(
  pages: PageReader,
  header: IndexHeader,
  shards: readonly ShardRecord[],
  sink: LeafSink,
  onProgress?: (pagesDone: number, pagesTotal: number) => void,
  native?: NativeAddon,
): Promise<IndexCheckResult> {
  const problems: IndexProblem[] = [];
  let samples = 0;
  const slow = new DecodedRecords();
  const seen = new Uint8Array(header.pageCount);
  let visited = 0;
  let members = 0;
  let spanBytes = 0;
  let memberBytes = 0;
  let storedBytes = 0;
  const perShard = new Float64Array(shards.length);
  // the last key seen: a string after a decoded page; after a scanned one its bytes (lastKeyBytes, UTF-8), made a
  // string only when a decoded page follows (the scan's walk makes no key string)
  let lastKey: string | undefined;
  let lastKeyBytes = new Uint8Array(0);
  let lastKeyLength = -1;
  const lastKeyString = (): string | undefined => {
    if (lastKeyLength >= 0) {
      lastKey = Buffer.from(lastKeyBytes.buffer, lastKeyBytes.byteOffset, lastKeyLength).toString('utf8');
      lastKeyLength = -1;
    }
    return lastKey;
  };
  let prevLeaf: { pageNo: number; next: number } | undefined;
  const scan = new LeafScan(native, sink.names === true);

  /**
   * The leaf walk without an object per sample (leaf-scan.ts): a leaf it reads, and in which nothing is wrong, is
   * counted here; false sends the page to decodePage and the checks below, which name what is wrong.
   */
  const fastLeaf = async (pageNo: number, promised: number, firstKey: string | undefined): Promise<boolean> => {
    let bytes: Uint8Array;
    try {
      bytes = await pages.read(pageNo);
    } catch (err) {
      if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
      return false;
    }
    if (!scan.scan(bytes, pageNo)) return false;
    const n = scan.count;
    if (n !== promised || (firstKey !== undefined && !scan.firstKeyIs(firstKey))) return false;
    if (prevLeaf === undefined ? pageNo !== header.firstLeaf : prevLeaf.next !== pageNo) return false;
    if (lastKeyLength >= 0 ? !scan.firstKeyAfter(lastKeyBytes, lastKeyLength) : lastKey !== undefined && compareKeys(lastKey, scan.firstKey) >= 0) return false;
    // every span inside its shard: a leaf of one shard (the common case) checks its last end, others each span
    const one = scan.oneShard;
    if (one >= 0) {
      const shard = shards[one];
      if (shard === undefined || scan.maxEnd > shard.bytes) return false;
    } else {
      for (let i = 0; i < n; i++) {
        const shard = shards[scan.shard[i] as number];
        if (shard === undefined || (scan.offset[i] as number) + (scan.length[i] as number) > shard.bytes) return false;
      }
    }
    prevLeaf = { pageNo, next: scan.next };
    // the leaf's last key is kept by taking the scan's buffer (it gets this one back for its next page)
    lastKeyLength = scan.lastKeyLength;
    const keyBytes = scan.lastKeyBytes;
    scan.lastKeyBytes = lastKeyBytes;
    lastKeyBytes = keyBytes;
    members += scan.totalMembers;
    spanBytes += scan.totalLength;
    memberBytes += scan.totalSize;
    storedBytes += scan.totalStored;
    if (one >= 0) perShard[one]! += n;
    else for (let i = 0; i < n; i++) perShard[scan.shard[i] as number]!++;
    samples += n;
    await sink.leaf(scan, pageNo);
    return true;
  };
  const problem = (what: string, extra: Omit<IndexProblem, 'what'> = {}): void => void problems.push({ what, ...extra });

  /** Visits a subtree; returns the samples it holds (what was found, not what was promised). */
  const visit = async (pageNo: number, level: number, promised: number, firstKey: string | undefined): Promise<number> => {
    if (!Number.isInteger(pageNo) || pageNo < 1 || pageNo >= header.pageCount) {
      problem(`page ${pageNo} is outside the index (pages 1..${header.pageCount - 1})`);
      return 0;
    }
    if (seen[pageNo]) {
      problem(`page ${pageNo} is reached twice from the root`);
      return 0;
    }
    seen[pageNo] = 1;
    visited++;
    if (visited % 64 === 0) onProgress?.(visited, header.pageCount - 1);
    if (level === 0 && (await fastLeaf(pageNo, promised, firstKey))) return promised;
    let page: Page;
    try {
      page = await pages.load(pageNo);
    } catch (err) {
      if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
      problem(err.message);
      return 0;
    }
    const firstOfPage = page.keys[0] as string;
    if (firstKey !== undefined && firstOfPage !== firstKey) problem(`page ${pageNo} starts with key ${JSON.stringify(firstOfPage)} but its parent says ${JSON.stringify(firstKey)}`);
    if (page.type === 'leaf') {
      if (level !== 0) problem(`page ${pageNo} is a leaf where a branch of level ${level} belongs`);
      if (prevLeaf === undefined ? pageNo !== header.firstLeaf : prevLeaf.next !== pageNo) {
        problem(prevLeaf === undefined ? `the header's first leaf is page ${header.firstLeaf}, the tree's is ${pageNo}` : `leaf ${prevLeaf.pageNo} links to page ${prevLeaf.next}, the next leaf is ${pageNo}`);
      }
      prevLeaf = { pageNo, next: page.next };
      lastKeyString();
      page.entries.forEach((e) => {
        if (lastKey !== undefined && compareKeys(lastKey, e.key) >= 0) problem(`key ${JSON.stringify(e.key)} (page ${pageNo}) does not come after ${JSON.stringify(lastKey)}`, { key: e.key });
        lastKey = e.key;
        try {
          // the writer's own rules: a key it would refuse names files outside the directory extract writes to (an
          // extension with a backslash, which earlier writers stored, stays one file name)
          checkStoredKeyAndExts(e.key, e.members.map((m) => m.ext));
        } catch (err) {
          if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
          problem(err.message, { key: e.key, shard: e.shard, offset: e.offset });
        }
        members += e.members.length;
        spanBytes += e.length;
        for (const m of e.members) {
          memberBytes += m.size;
          storedBytes += m.storedSize;
        }
        const shard = shards[e.shard];
        if (shard === undefined) problem(`sample points to shard ${e.shard}, the index has ${shards.length}`, { key: e.key, shard: e.shard, offset: e.offset });
        else {
          perShard[e.shard]!++;
          if (e.offset + e.length > shard.bytes) problem(`span [${e.offset}, ${e.offset + e.length}) is outside its ${shard.bytes}-byte shard`, { key: e.key, shard: e.shard, offset: e.offset });
        }
      });
      samples += page.entries.length;
      await sink.leaf(slow.of(page), pageNo);
      if (page.entries.length !== promised) problem(`page ${pageNo} holds ${page.entries.length} samples, its parent says ${promised}`);
      return page.entries.length;
    }
    if (page.level !== level) problem(`page ${pageNo} is a branch of level ${page.level} where level ${level} belongs`);
    const total = page.starts[page.starts.length - 1] as number;
    if (total !== promised) problem(`page ${pageNo} counts ${total} samples, its parent says ${promised}`);
    let found = 0;
    for (let i = 0; i < page.children.length; i++) {
      const count = (page.starts[i + 1] as number) - (page.starts[i] as number);
      found += await visit(page.children[i] as number, Math.max(0, level - 1), count, page.keys[i]);
    }
    return found;
  };

  if (header.entryCount > 0) await visit(header.rootPage, header.height - 1, header.entryCount, undefined);
  if (prevLeaf !== undefined && prevLeaf.next !== 0) problem(`the last leaf (page ${prevLeaf.pageNo}) links to page ${prevLeaf.next}`);
  for (let p = 1; p < header.pageCount; p++) if (!seen[p]) problem(`page ${p} is not reachable from the root`);
  if (samples !== header.entryCount) problem(`the tree holds ${samples} samples, the header says ${header.entryCount}`);
  if (members !== header.memberCount) problem(`the tree holds ${members} members, the header says ${header.memberCount}`);
  if (spanBytes !== header.spanBytes) problem(`the tree's spans add up to ${spanBytes} bytes, the header says ${header.spanBytes}`);
  shards.forEach((s, i) => {
    if (perShard[i] !== s.samples) problem(`the tree places ${perShard[i]} samples in shard ${i} (${s.file}), the shard table says ${s.samples}`);
  });
  onProgress?.(visited, header.pageCount - 1);
  return { pages: visited, samples, members, memberBytes, storedBytes, perShard, problems };
}

/** A decoded leaf's entries as {@link LeafRecords} (the walk's slow path: pages LeafScan does not take). */
class DecodedRecords implements LeafRecords {
  count = 0;
  shard: number[] = [];
  offset: number[] = [];
  length: number[] = [];
  loneCrc: number[] = [];

  of(page: LeafPage): this {
    this.count = page.entries.length;
    this.shard = page.entries.map((e) => e.shard);
    this.offset = page.entries.map((e) => e.offset);
    this.length = page.entries.map((e) => e.length);
    this.loneCrc = page.entries.map((e) => {
      const m0 = e.members[0];
      const lone = e.members.length === 1 && m0 !== undefined && m0.codec === Codec.none && m0.offset === 0 && m0.storedSize === e.length;
      return lone ? m0.crc32c >>> 0 : -1;
    });
    return this;
  }
}
