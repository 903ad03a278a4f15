/**
 * Checks every invariant of an index file, page by page, reporting problems instead of stopping at the first:
 * every page reachable exactly once from the root, levels decreasing by one to the leaves, keys strictly increasing
 * across leaves, each branch key equal to the first key of its child, subtree counts equal to what the parent
 * promised, leaf links in key order from the header's first leaf, header totals (samples, members, span bytes),
 * each shard's sample count in the shard table, every key and extension safe by the writer's rules (no `..`
 * segment, no `/` in an extension), and every span inside its shard and apart from every other span of that
 * shard. Also sums the members' original and stored bytes, for the caller to compare with the manifest.
 * Memory: one byte per page, 31 bytes per sample (the span table the shard pass needs anyway), 8 bytes per shard.
 */
import { isHttpDeadline } from '../io/http-client.js';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry } from '../../formats/index-entry.js';
import type { IndexHeader, ShardRecord } from '../../formats/index-layout.js';
import { PAGE_FLAGS, PAGE_HEADER_BYTES, decodePage, type LeafPage, type Page } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { checkStoredKeyAndExts } from '../../formats/sample-layout.js';
import { LeafScan } from './leaf-scan.js';
import type { ByteSource } from '../io/byte-source.js';

/** The smallest leaf record: key varints (2), flags, size varint, CRC32C (a record that takes the rest from the one before). */
const MIN_LEAF_RECORD_BYTES = 8;

/** Where every sample's span is, by position in key order; `leaf`/`slot` find its entry again. */
export class SpanTable {
  length = 0;
  shard: Uint32Array;
  offset: Float64Array;
  span: Float64Array;
  leaf: Uint32Array;
  slot: Uint16Array;
  /** 1 when the sample is one member stored as is that fills its span: `crc` is then its CRC32C (checked without its entry). */
  lone: Uint8Array;
  crc: Uint32Array;

  /** `capacity`: the samples expected (the index header's count): no doubling, no slack (31 bytes a sample). */
  constructor(capacity = 1024) {
    const n = Math.max(1, capacity);
    this.shard = new Uint32Array(n);
    this.offset = new Float64Array(n);
    this.span = new Float64Array(n);
    this.leaf = new Uint32Array(n);
    this.slot = new Uint16Array(n);
    this.lone = new Uint8Array(n);
    this.crc = new Uint32Array(n);
  }

  /** `loneCrc`: the CRC32C of a sample that is one member stored as is filling its span, else -1. */
  push(shard: number, offset: number, span: number, leaf: number, slot: number, loneCrc: number): void {
    if (this.length === this.shard.length) this.grow();
    const i = this.length++;
    this.shard[i] = shard;
    this.offset[i] = offset;
    this.span[i] = span;
    this.leaf[i] = leaf;
    this.slot[i] = slot;
    if (loneCrc >= 0) {
      this.lone[i] = 1;
      this.crc[i] = loneCrc;
    }
  }

  private grow(): void {
    const n = this.shard.length * 2;
    const g = <T extends Uint32Array | Float64Array | Uint16Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.shard = g(this.shard, (k) => new Uint32Array(k));
    this.offset = g(this.offset, (k) => new Float64Array(k));
    this.span = g(this.span, (k) => new Float64Array(k));
    this.leaf = g(this.leaf, (k) => new Uint32Array(k));
    this.slot = g(this.slot, (k) => new Uint16Array(k));
    this.lone = g(this.lone, (k) => new Uint8Array(k));
    this.crc = g(this.crc, (k) => new Uint32Array(k));
  }

  /** Positions of each shard's samples in offset order. */
  byShard(shards: number): Uint32Array[] {
    const counts = new Uint32Array(shards);
    for (let i = 0; i < this.length; i++) if ((this.shard[i] as number) < shards) counts[this.shard[i] as number]!++;
    const out = Array.from(counts, (c) => new Uint32Array(c));
    const fill = new Uint32Array(shards);
    for (let i = 0; i < this.length; i++) {
      const s = this.shard[i] as number;
      if (s < shards) out[s]![fill[s]!++] = i;
    }
    // a shard written in key order (what pack does) is in offset order already: a check instead of a sort with a
    // comparator (minutes at 10^8 samples)
    for (const list of out) if (!this.inOffsetOrder(list)) list.sort((a, b) => (this.offset[a] as number) - (this.offset[b] as number) || a - b);
    return out;
  }

  private inOffsetOrder(list: Uint32Array): boolean {
    for (let i = 1; i < list.length; i++) if ((this.offset[list[i - 1] as number] as number) > (this.offset[list[i] as number] as number)) return false;
    return true;
  }
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
  spans: SpanTable;
  /** Keys by position (only for samples named in problems) are found again through `spans`. */
  problems: IndexProblem[];
}

/** Decoded pages, read once each during the walk and again (rarely) when a span is checked. */
export class PageReader {
  private readonly cache = new Map<number, Page>();

  constructor(
    private readonly source: ByteSource,
    private readonly header: IndexHeader,
    private readonly maxCached = 256,
  ) {}

  /** The bytes of page `pageNo`, undecoded and not cached. */
  async read(pageNo: number): Promise<Uint8Array> {
    return this.source.read(pageNo * this.header.pageSize, this.header.pageSize);
  }

  async load(pageNo: number): Promise<Page> {
    const hit = this.cache.get(pageNo);
    if (hit !== undefined) return hit;
    const bytes = await this.read(pageNo);
    const page = decodePage(bytes, pageNo, this.source.name, true, this.header.layout);
    // the page checksum covers the flags byte, but decodePage accepts any flags (readers ignore them): SPEC says 0
    if (bytes[PAGE_FLAGS] !== 0) throw new ShardkitError(ErrorCodes.CORRUPT_INDEX, `${this.source.name}: page ${pageNo} has unknown flags ${bytes[PAGE_FLAGS]}`);
    if (this.cache.size >= this.maxCached) this.cache.delete(this.cache.keys().next().value as number);
    this.cache.set(pageNo, page);
    return page;
  }

  /** The entry of the sample at `position` (as recorded in `spans`). */
  async entry(spans: SpanTable, position: number): Promise<IndexEntry> {
    const page = (await this.load(spans.leaf[position] as number)) as LeafPage;
    return page.entries[spans.slot[position] as number] as IndexEntry;
  }
}

export async function checkIndex(
  pages: PageReader,
  header: IndexHeader,
  shards: readonly ShardRecord[],
  onProgress?: (pagesDone: number, pagesTotal: number) => void,
): Promise<IndexCheckResult> {
  const problems: IndexProblem[] = [];
  // sized by the header's sample count, but no larger than the pages can hold (a damaged count allocates nothing huge)
  const spans = new SpanTable(Math.min(header.entryCount, header.pageCount * Math.floor((header.pageSize - PAGE_HEADER_BYTES) / MIN_LEAF_RECORD_BYTES)));
  const seen = new Uint8Array(header.pageCount);
  let visited = 0;
  let members = 0;
  let spanBytes = 0;
  let memberBytes = 0;
  let storedBytes = 0;
  // counted as the leaves are walked, not from the span table: the table is all the memory verify adds per sample
  const perShard = new Float64Array(shards.length);
  let lastKey: string | undefined;
  let prevLeaf: { pageNo: number; next: number } | undefined;
  const scan = new LeafScan();

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
    if (n !== promised || (firstKey !== undefined && scan.firstKey !== firstKey)) return false;
    if (prevLeaf === undefined ? pageNo !== header.firstLeaf : prevLeaf.next !== pageNo) return false;
    if (lastKey !== undefined && compareKeys(lastKey, scan.firstKey) >= 0) return false;
    for (let i = 0; i < n; i++) {
      const shard = shards[scan.shard[i] as number];
      if (shard === undefined || (scan.offset[i] as number) + (scan.length[i] as number) > shard.bytes) return false;
    }
    prevLeaf = { pageNo, next: scan.next };
    lastKey = scan.lastKey;
    for (let i = 0; i < n; i++) {
      const shard = scan.shard[i] as number;
      members += scan.members[i] as number;
      spanBytes += scan.length[i] as number;
      memberBytes += scan.size[i] as number;
      storedBytes += scan.stored[i] as number;
      perShard[shard]!++;
      spans.push(shard, scan.offset[i] as number, scan.length[i] as number, pageNo, i, scan.loneCrc[i] as number);
    }
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
      page.entries.forEach((e, slot) => {
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
        const m0 = e.members[0];
        const lone = e.members.length === 1 && m0 !== undefined && m0.codec === Codec.none && m0.offset === 0 && m0.storedSize === e.length;
        spans.push(e.shard, e.offset, e.length, pageNo, slot, lone ? m0.crc32c >>> 0 : -1);
      });
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
  if (spans.length !== header.entryCount) problem(`the tree holds ${spans.length} samples, the header says ${header.entryCount}`);
  if (members !== header.memberCount) problem(`the tree holds ${members} members, the header says ${header.memberCount}`);
  if (spanBytes !== header.spanBytes) problem(`the tree's spans add up to ${spanBytes} bytes, the header says ${header.spanBytes}`);
  shards.forEach((s, i) => {
    if (perShard[i] !== s.samples) problem(`the tree places ${perShard[i]} samples in shard ${i} (${s.file}), the shard table says ${s.samples}`);
  });
  onProgress?.(visited, header.pageCount - 1);
  return { pages: visited, samples: spans.length, members, memberBytes, storedBytes, spans, problems };
}

/** Spans of one shard (positions in offset order) that overlap the span before them. */
export function overlappingSpans(spans: SpanTable, positions: Uint32Array): [number, number][] {
  const out: [number, number][] = [];
  let prev = -1;
  for (const p of positions) {
    if (prev >= 0 && (spans.span[p] as number) > 0 && (spans.offset[prev] as number) + (spans.span[prev] as number) > (spans.offset[p] as number)) out.push([prev, p]);
    if ((spans.span[p] as number) > 0) prev = p;
  }
  return out;
}
