/**
 * Bulk-loads the B+-tree from entries in strictly increasing key order, streaming: it holds one open page per
 * tree level, so memory is O(height x page size) for any number of entries. Pages go to `writePage` as soon as they
 * are full (out of page-number order by at most one page per level: the sink writes at pageNo x pageSize).
 * Page 0 is left for the header, which the caller writes after `finish()`.
 */
import { ByteWriter, utf8Bytes } from './bytes.js';
import { ErrorCodes, ShardkitError } from './errors.js';
import { type IndexEntry, type MemberEntry } from './index-entry.js';
import { validatePageSize } from './index-layout.js';
import { leafRecordBound, writeLeafRecord } from './leaf-record-writer.js';
import { PAGE_HEADER_BYTES, PageType, encodeBranchRecord, maxKeyBytes, sealPage } from './index-page.js';

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
/** Bytes past the page size in an open page's buffer: most leaf records are written in place even near its end. */
const PAGE_SLACK = 512;

/** What a TOO_LARGE error advises, for both ways of setting the page size. */
const LARGER_PAGES = '`--page-size` on the command line, `pageSize` in the library';

/** A {@link BTreeBuilder} between two entries, as JSON (byte fields in base64). */
export interface BuilderSnapshot {
  pageSize: number;
  /** The open page of each level: its number, its records so far, their count, the entries under it, its first key. */
  levels: { pageNo: number; records: string; count: number; total: number; firstKey: string }[];
  nextPageNo: number;
  lastKey: string | null;
  entryCount: number;
  memberCount: number;
  spanBytes: number;
  firstLeaf: number;
  /** The record the next leaf record is encoded against: its key bytes and entry. */
  prev: { key: string; entry: IndexEntry } | null;
}

export class BTreeBuilder {
  private readonly levels: OpenPage[] = [];
  /** The last entry added and its key's UTF-8 (`lastKeyBytes[0, lastKeyLength)`): the next record is encoded against it. */
  private lastEntry: IndexEntry | undefined;
  private lastKeyBytes: Uint8Array | undefined;
  private lastKeyLength = 0;
  /** The last key's UTF-8 when it was ASCII and the caller gave no bytes (then `lastKeyBytes` is this buffer). */
  private keyScratch = new Uint8Array(64);
  private scratch = new Uint8Array(256);
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

  /** Adds the next entry; keys must increase strictly in UTF-8 byte order. `keyBytes`: its key's UTF-8, if at hand (kept, not copied). */
  add(entry: IndexEntry, keyBytes?: Uint8Array): void {
    if (this.done) throw new Error('BTreeBuilder.add after finish');
    const text = entry.key;
    // UTF-8 byte order; the common prefix is also what the record shares with the previous one
    let shared = 0;
    let order = 1;
    const last = this.lastKeyBytes;
    // the fast path: the last key was ASCII and sits in `keyScratch`; this one is compared to it as it stands, and
    // only its suffix is written over it further down (no buffer per key: Buffer.from was a fifth of a bulk load)
    const inPlace = keyBytes === undefined && last === this.keyScratch;
    // otherwise `keyScratch` holds no key we need, and takes this one if it is ASCII
    let key = inPlace ? undefined : (keyBytes ?? this.keyIntoScratch(text, 0));
    if (last !== undefined) {
      const lastLength = this.lastKeyLength;
      if (inPlace) {
        // a unit above 0x7f matches no ASCII byte and sorts after all of them, as its UTF-8 lead byte does
        const n = Math.min(lastLength, text.length);
        while (shared < n && text.charCodeAt(shared) === last[shared]) shared++;
        order = shared < n ? text.charCodeAt(shared) - (last[shared] as number) : text.length - lastLength;
      } else {
        const bytes = key as Uint8Array;
        const length = bytes === this.keyScratch ? text.length : bytes.length;
        const n = Math.min(lastLength, length);
        while (shared < n && last[shared] === bytes[shared]) shared++;
        order = shared < n ? (bytes[shared] as number) - (last[shared] as number) : length - lastLength;
      }
      if (order === 0) throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `two samples have the key "${text}"`, { key: text });
      if (order < 0) throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `key "${text}" arrives after "${this.lastKey}": index keys must be sorted`, { key: text });
    }
    const members = entry.members;
    if (members.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample "${text}" has no members`, { key: text });
    // the record stores each member's gap after the previous one: the reader takes no other shape
    let end = 0;
    for (let m = 0; m < members.length; m++) {
      const member = members[m] as MemberEntry;
      if (m === 0 ? member.offset !== 0 : member.offset < end) {
        throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample "${text}" member ${m} starts at ${member.offset}: the first must start its span at 0, and the others after the one before`, { key: text });
      }
      end = member.offset + member.storedSize;
    }
    if (entry.length !== end) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `sample "${text}" span length ${entry.length} does not end at its last member`, { key: text });
    }
    // a key's UTF-8 has at least as many bytes as its UTF-16 units: a key too long is refused before the suffix is written
    if (inPlace && text.length > this.maxKey) this.keyTooLarge(text, utf8Bytes(text).length);
    key ??= this.keyIntoScratch(text, shared);
    const keyLength = key === this.keyScratch ? text.length : key.length;
    if (keyLength > this.maxKey) this.keyTooLarge(text, keyLength);
    const prev = this.lastEntry;
    if (prev === undefined) shared = 0;
    let leaf = this.levels[0];
    let pos = -1;
    if (leaf !== undefined && leaf.count < MAX_RECORDS_PER_PAGE) {
      const bound = leafRecordBound(entry, keyLength);
      // in place when the page's slack holds the longest the record can be; whatever passes the page size is undone
      if (leaf.used + bound <= leaf.buf.length) pos = writeLeafRecord(leaf.buf, leaf.used, entry, key, keyLength, prev, shared);
      else {
        const scratch = this.recordScratch(bound);
        const n = writeLeafRecord(scratch, 0, entry, key, keyLength, prev, shared);
        if (leaf.used + n <= this.pageSize) {
          leaf.buf.set(scratch.subarray(0, n), leaf.used);
          pos = leaf.used + n;
        }
      }
      if (pos > this.pageSize) {
        leaf.buf.fill(0, leaf.used);
        pos = -1;
      }
    }
    if (pos < 0) {
      // a page's first record shares nothing with the one before; refused before anything changes if no page holds it
      const scratch = this.recordScratch(leafRecordBound(entry, keyLength));
      const n = writeLeafRecord(scratch, 0, entry, key, keyLength, undefined, 0);
      if (PAGE_HEADER_BYTES + n > this.pageSize) {
        if (this.lastKeyBytes === this.keyScratch && this.lastKey !== undefined) this.keyIntoScratch(this.lastKey, 0);
        throw new ShardkitError(ErrorCodes.TOO_LARGE, `sample "${text}" with ${members.length} members needs ${n} index bytes; ${this.pageSize}-byte pages hold ${this.pageSize - PAGE_HEADER_BYTES} (use larger pages: ${LARGER_PAGES})`, { key: text });
      }
      const next = this.openPage(key.slice(0, keyLength));
      if (leaf === undefined) this.firstLeaf = next.pageNo;
      else this.closePage(0, leaf, next.pageNo);
      leaf = next;
      this.levels[0] = leaf;
      leaf.buf.set(scratch.subarray(0, n), leaf.used);
      pos = leaf.used + n;
    }
    const page = leaf as OpenPage; // the open leaf took the record, or a new one did
    page.used = pos;
    page.count++;
    page.total++;
    this.lastEntry = entry;
    this.lastKeyBytes = key;
    this.lastKeyLength = keyLength;
    this.lastKey = text;
    this.entryCount++;
    this.memberCount += members.length;
    this.spanBytes += entry.length;
  }

  private keyTooLarge(text: string, bytes: number): never {
    throw new ShardkitError(ErrorCodes.TOO_LARGE, `key "${text.slice(0, 80)}…" is ${bytes} bytes; ${this.pageSize}-byte pages allow ${this.maxKey} (use larger pages: ${LARGER_PAGES})`, { key: text });
  }

  /**
   * `text`'s UTF-8: an ASCII key in `keyScratch` (whose first `from` bytes already hold its start: the previous
   * key's), any other in a buffer of its own (and then `keyScratch` holds no key).
   */
  private keyIntoScratch(text: string, from: number): Uint8Array {
    let buf = this.keyScratch;
    if (buf.length < text.length) {
      buf = new Uint8Array(2 * text.length);
      buf.set(this.keyScratch.subarray(0, from));
      if (this.lastKeyBytes === this.keyScratch) this.lastKeyBytes = buf;
      this.keyScratch = buf;
    }
    for (let i = from; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c > 0x7f) {
        // the last key (if it was there) stays readable for a refusal below: its bytes are written again then
        if (this.lastKeyBytes === buf) this.lastKeyBytes = utf8Bytes(this.lastKey as string);
        return utf8Bytes(text);
      }
      buf[i] = c;
    }
    return buf;
  }

  /** A scratch buffer of at least `bytes`. */
  private recordScratch(bytes: number): Uint8Array {
    if (this.scratch.length < bytes) this.scratch = new Uint8Array(Math.max(bytes, 2 * this.scratch.length));
    return this.scratch;
  }

  /** The state between two entries, as JSON: {@link BTreeBuilder.resume} continues from it (the pages already given to the sink stay there). */
  snapshot(): BuilderSnapshot {
    const b64 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
    const last = this.lastKeyBytes;
    return {
      pageSize: this.pageSize,
      levels: this.levels.map((p) => ({ pageNo: p.pageNo, records: b64(p.buf.subarray(PAGE_HEADER_BYTES, p.used)), count: p.count, total: p.total, firstKey: b64(p.firstKey) })),
      nextPageNo: this.nextPageNo,
      lastKey: this.lastKey ?? null,
      entryCount: this.entryCount,
      memberCount: this.memberCount,
      spanBytes: this.spanBytes,
      firstLeaf: this.firstLeaf,
      prev: this.lastEntry === undefined || last === undefined ? null : { key: b64(last.subarray(0, this.lastKeyLength)), entry: this.lastEntry },
    };
  }

  /**
   * A builder that continues from `snapshot` (taken by {@link BTreeBuilder.snapshot} with the same page size),
   * writing to `sink` where the pages given to the snapshotted builder's sink already are. A snapshot that does not
   * hold together is refused (INVALID_ARG).
   */
  static resume(pageSize: number, sink: PageSink, snapshot: BuilderSnapshot): BTreeBuilder {
    const b = new BTreeBuilder(pageSize, sink);
    const bad = (): never => {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, 'the index checkpoint to resume from is damaged; start over with --force');
    };
    const whole = (n: unknown): number => (Number.isSafeInteger(n) && (n as number) >= 0 ? (n as number) : bad());
    const bytes = (s: unknown): Uint8Array => (typeof s === 'string' ? new Uint8Array(Buffer.from(s, 'base64')) : bad());
    try {
      if (snapshot.pageSize !== pageSize || !Array.isArray(snapshot.levels)) bad();
      b.nextPageNo = whole(snapshot.nextPageNo);
      for (const level of snapshot.levels) {
        const records = bytes(level.records);
        if (PAGE_HEADER_BYTES + records.length > pageSize || whole(level.pageNo) >= b.nextPageNo) bad();
        const buf = new Uint8Array(pageSize + PAGE_SLACK);
        buf.set(records, PAGE_HEADER_BYTES);
        b.levels.push({ pageNo: level.pageNo, buf, used: PAGE_HEADER_BYTES + records.length, count: whole(level.count), total: whole(level.total), firstKey: bytes(level.firstKey) });
      }
      if (snapshot.lastKey !== null && typeof snapshot.lastKey !== 'string') bad();
      b.lastKey = snapshot.lastKey ?? undefined;
      b.entryCount = whole(snapshot.entryCount);
      b.memberCount = whole(snapshot.memberCount);
      b.spanBytes = whole(snapshot.spanBytes);
      b.firstLeaf = whole(snapshot.firstLeaf);
      if (snapshot.prev !== null) {
        b.lastEntry = snapshot.prev.entry;
        b.lastKeyBytes = bytes(snapshot.prev.key);
      } else if (b.lastKey !== undefined) {
        b.lastKeyBytes = utf8Bytes(b.lastKey);
      }
      b.lastKeyLength = b.lastKeyBytes?.length ?? 0;
      return b;
    } catch (err) {
      if (err instanceof ShardkitError) throw err;
      return bad();
    }
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
      // closing a page opens its parent, so the top level's open page is the only one it has: the root
      if (isTop) {
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
    return { pageNo: this.nextPageNo++, buf: new Uint8Array(this.pageSize + PAGE_SLACK), used: PAGE_HEADER_BYTES, count: 0, total: 0, firstKey };
  }

  private sealAndWrite(level: number, page: OpenPage, nextLeaf: number): void {
    const bytes = page.buf.subarray(0, this.pageSize);
    sealPage(bytes, level === 0 ? PageType.leaf : PageType.branch, page.count, page.pageNo, level === 0 ? nextLeaf : level);
    this.sink(page.pageNo, bytes);
  }

  /** Writes a full page at `level` and records it in its parent (opening parent pages as needed); the caller
   * replaces `levels[level]`. */
  private closePage(level: number, page: OpenPage, nextLeaf: number): void {
    this.sealAndWrite(level, page, nextLeaf);
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
