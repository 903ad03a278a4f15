/**
 * Bulk-loads the B+-tree from entries in strictly increasing key order, streaming: it holds one open page per
 * tree level, so memory is O(height x page size) for any number of entries. Pages go to `writePage` as soon as they
 * are full (out of page-number order by at most one page per level: the sink writes at pageNo x pageSize).
 * Page 0 is left for the header, which the caller writes after `finish()`.
 */
import { ByteWriter, utf8Bytes } from './bytes.js';
import { ErrorCodes, ShardkitError } from './errors.js';
import { spanLength, type IndexEntry } from './index-entry.js';
import { validatePageSize } from './index-layout.js';
import { compareKeys } from './key-order.js';
import { LeafRecordEncoder, PAGE_HEADER_BYTES, PageType, encodeBranchRecord, maxKeyBytes, sealPage } from './index-page.js';

export type PageSink = (pageNo: number, page: Uint8Array) => void;

export interface BuiltTree {
  entryCount: number;
  memberCount: number;
  spanBytes: number;
  rootPage: number;
  height: number;
  firstLeaf: number;
  /** Pages used, including header page 0. */
  pageCount: number;
}

interface OpenPage {
  pageNo: number;
  buf: Uint8Array;
  used: number;
  count: number;
  /** Entries in the subtree under this page. */
  total: number;
  firstKey: Uint8Array;
}

const MAX_RECORDS_PER_PAGE = 0xffff;

export class BTreeBuilder {
  private readonly levels: OpenPage[] = [];
  /** Pages already written at each level. */
  private readonly finished: number[] = [];
  private readonly leafEncoder = new LeafRecordEncoder();
  private readonly branchWriter = new ByteWriter(256);
  private nextPageNo = 1;
  private lastKey: string | undefined;
  private entryCount = 0;
  private memberCount = 0;
  private spanBytes = 0;
  private firstLeaf = 0;
  private done = false;
  private readonly maxKey: number;

  constructor(
    private readonly pageSize: number,
    private readonly sink: PageSink,
  ) {
    validatePageSize(pageSize);
    this.maxKey = maxKeyBytes(pageSize);
  }

  /** Adds the next entry; keys must increase strictly in UTF-8 byte order. `keyBytes`: its key's UTF-8, if at hand. */
  add(entry: IndexEntry, keyBytes: Uint8Array = utf8Bytes(entry.key)): void {
    if (this.done) throw new Error('BTreeBuilder.add after finish');
    if (this.lastKey !== undefined) {
      const c = compareKeys(entry.key, this.lastKey);
      if (c === 0) throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `two samples have the key "${entry.key}"`, { key: entry.key });
      if (c < 0) throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `key "${entry.key}" arrives after "${this.lastKey}": index keys must be sorted`, { key: entry.key });
    }
    if (entry.members.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample "${entry.key}" has no members`, { key: entry.key });
    if (entry.length !== spanLength(entry.members)) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample "${entry.key}" span length ${entry.length} does not end at its last member`, { key: entry.key });
    }
    if (keyBytes.length > this.maxKey) {
      throw new ShardkitError(ErrorCodes.TOO_LARGE, `key "${entry.key.slice(0, 80)}…" is ${keyBytes.length} bytes; ${this.pageSize}-byte pages allow ${this.maxKey} (use a larger pageSize)`, { key: entry.key });
    }
    let leaf = this.levels[0];
    if (leaf === undefined) {
      leaf = this.openPage(keyBytes);
      this.levels[0] = leaf;
      this.firstLeaf = leaf.pageNo;
    }
    let record = this.leafEncoder.encode(entry, keyBytes);
    if (leaf.used + record.length > this.pageSize || leaf.count === MAX_RECORDS_PER_PAGE) {
      const next = this.openPage(keyBytes);
      this.closePage(0, leaf, next.pageNo);
      leaf = next;
      this.levels[0] = leaf;
      this.leafEncoder.reset();
      record = this.leafEncoder.encode(entry, keyBytes);
      if (PAGE_HEADER_BYTES + record.length > this.pageSize) {
        throw new ShardkitError(ErrorCodes.TOO_LARGE, `sample "${entry.key}" needs ${record.length} index bytes; ${this.pageSize}-byte pages hold ${this.pageSize - PAGE_HEADER_BYTES} (use a larger pageSize)`, { key: entry.key });
      }
    }
    leaf.buf.set(record, leaf.used);
    leaf.used += record.length;
    leaf.count++;
    leaf.total++;
    this.lastKey = entry.key;
    this.entryCount++;
    this.memberCount += entry.members.length;
    this.spanBytes += entry.length;
  }

  /** Closes every open page bottom-up; the top level's single page is the root. */
  finish(): BuiltTree {
    if (this.done) throw new Error('BTreeBuilder.finish called twice');
    this.done = true;
    let rootPage = 0;
    let height = 0;
    for (let level = 0; level < this.levels.length; level++) {
      const page = this.levels[level] as OpenPage;
      const isTop = level === this.levels.length - 1;
      if (isTop && (this.finished[level] ?? 0) === 0) {
        this.sealAndWrite(level, page, 0);
        rootPage = page.pageNo;
        height = level + 1;
        break;
      }
      this.closePage(level, page, 0);
    }
    return {
      entryCount: this.entryCount,
      memberCount: this.memberCount,
      spanBytes: this.spanBytes,
      rootPage,
      height,
      firstLeaf: this.firstLeaf,
      pageCount: this.nextPageNo,
    };
  }

  private openPage(firstKey: Uint8Array): OpenPage {
    return { pageNo: this.nextPageNo++, buf: new Uint8Array(this.pageSize), used: PAGE_HEADER_BYTES, count: 0, total: 0, firstKey };
  }

  private sealAndWrite(level: number, page: OpenPage, nextLeaf: number): void {
    sealPage(page.buf, level === 0 ? PageType.leaf : PageType.branch, page.count, page.pageNo, level === 0 ? nextLeaf : level);
    this.sink(page.pageNo, page.buf);
  }

  /** Writes a full page at `level` and records it in its parent (opening parent pages as needed); the caller
   * replaces `levels[level]`. */
  private closePage(level: number, page: OpenPage, nextLeaf: number): void {
    this.sealAndWrite(level, page, nextLeaf);
    this.finished[level] = (this.finished[level] ?? 0) + 1;
    // copied: closing a full parent below re-enters this method and reuses the writer
    const record = encodeBranchRecord(page.firstKey, page.pageNo, page.total, this.branchWriter).slice();
    let parent = this.levels[level + 1];
    if (parent === undefined) {
      parent = this.openPage(page.firstKey);
      this.levels[level + 1] = parent;
    } else if (parent.used + record.length > this.pageSize || parent.count === MAX_RECORDS_PER_PAGE) {
      const fresh = this.openPage(page.firstKey);
      this.closePage(level + 1, parent, 0);
      parent = fresh;
      this.levels[level + 1] = parent;
    }
    parent.buf.set(record, parent.used);
    parent.used += record.length;
    parent.count++;
    parent.total += page.total;
  }
}
