/**
 * The check of one shard by a full verify, fed its samples one at a time in offset order (shard-stream.ts feeds it
 * during the index walk): the shard is read once, front to back, in chunks, and each sample is checked when the
 * chunk holding it has been read. Whole-file size, fingerprint and CRC32C; each sample's members decompressed and
 * checked against their CRC32C; in the tar layout each member's tar header against the index; spans that overlap
 * the span before them. Memory: one chunk, plus one sample span when a span crosses chunks.
 *
 * Its findings stay in {@link ShardCheck.result} until the caller puts them in the report, in shard order.
 */
import { isHttpDeadline } from '../io/http-client.js';
import { crc32c, crc32cHex } from '../../formats/checksum.js';
import { crc32cSpan } from '../../formats/crc32c-span.js';
import { isShardkitError } from '../../formats/errors.js';
import { Codec, type IndexEntry } from '../../formats/index-entry.js';
import { FINGERPRINT_BYTES, type ShardRecord } from '../../formats/index-layout.js';
import { lz4DecompressMember } from '../../formats/lz4.js';
import type { Manifest } from '../../formats/manifest.js';
import { checkPackedHeader, PACKED_HEADER_BYTES } from '../../formats/packed-layout.js';
import type { ByteSource } from '../io/byte-source.js';
import type { CopyWriter } from '../cache/copy-writer.js';
import { MemberRow, TakeLonesIo, type NativeAddon } from '../native/native.js';
import type { LeafRecords, PageReader } from './check-index.js';
import { LeafScan } from './leaf-scan.js';
import { takeLoneRun } from './lone-run.js';
import { MemberStream } from './member-stream.js';
import { ReadAhead } from './read-ahead.js';
import { openShard, readShard } from './shard-open.js';
import { TarHeaderCheck } from './tar-header-check.js';
import type { VerifyCache } from './verify-cache.js';
import type { DamagedSample, Opener } from './verify-dataset.js';

/** What the check of one shard needs to know. */
export interface ShardCheckInput {
  location: string;
  opener: Opener;
  manifest: Manifest;
  /** The shard as the index's shard table (or, without an index, the manifest) records it. */
  record: ShardRecord;
  /** The shard's position in the shard table. */
  index: number;
  /** What the manifest recorded for this shard. */
  manifestShard: Manifest['shards'][number] | undefined;
  /** Where entries are found again by (leaf, slot) when a sample is not one lone member, or is damaged. */
  pages: PageReader | undefined;
  /** The cache to copy an intact shard into as it is streamed. */
  cache: VerifyCache | undefined;
  /** Damaged samples kept in the result at most (all are counted). */
  maxReported: number;
  chunkBytes: number;
  maxGathered: number;
  /** Called with the number of shard bytes each read brought in. */
  onBytes: (n: number) => void;
  /** The addon whose verifyTakeLones checks runs of tiny samples (undefined: the same loop in JavaScript). */
  native?: NativeAddon | undefined;
}

/** takeLoneRun's numbers in and out (one call at a time: the checks run one after the other). */
const takeIo = new Float64Array(TakeLonesIo.LENGTH);

/** What the check of one shard found. */
export interface ShardResult {
  /** Problems with the shard file itself, in the order found. */
  problems: string[];
  /** Samples whose span overlaps the span before them in the shard (not checked further). */
  overlaps: DamagedSample[];
  damaged: DamagedSample[];
  /** All damaged samples, overlaps included (the lists keep at most maxReported each). */
  damagedCount: number;
  memberBytes: number;
  /** The shard was read to its end. */
  checked: boolean;
  /** Its bytes are not what the manifest recorded (missing, unreadable, another size or CRC32C). */
  changed: boolean;
}

type State = 'new' | 'open' | 'unopened' | 'failed' | 'done';

export class ShardCheck {
  readonly result: ShardResult = { problems: [], overlaps: [], damaged: [], damagedCount: 0, memberBytes: 0, checked: false, changed: false };
  /** The offset of the last sample fed: samples come in offset order (shard-stream.ts sees to it). */
  lastOffset = -1;
  /** The shard's bytes [pos, end), read last. */
  private chunk: Uint8Array = new Uint8Array(0);
  private pos = 0;
  private end = 0;
  private state: State = 'new';
  /** The last sample with a non-empty span: where it ends, and where its entry is (to name it). */
  private prevEnd = 0;
  private prevPage = -1;
  private prevSlot = 0;
  /** True while {@link takeLones} may take samples: open, not failed. */
  private fast = false;
  private source: ByteSource | undefined;
  private size = 0;
  private crc = 0;
  private head: Uint8Array = new Uint8Array(0);
  private copy: CopyWriter | undefined;
  /** Reads the chunks, the next one in flight while one is checked. */
  private reader: ReadAhead | undefined;
  /** A read failed at `failedAt`: the samples fed since are counted, not checked. */
  private failure: { message: string; at: number; left: number } | undefined;
  /** The tar layout's member headers, checked against the index. */
  private readonly tar: TarHeaderCheck | undefined;

  constructor(private readonly input: ShardCheckInput) {
    const { record, manifestShard } = input;
    if (manifestShard !== undefined && manifestShard.file !== record.file) this.result.problems.push(`the manifest names this shard ${manifestShard.file}`);
    this.tar = input.manifest.layout === 'tar' ? new TarHeaderCheck(record.file, input.native) : undefined;
  }

  /** Opens the shard (a missing or unreadable one is a problem of its own: its samples are then not checked). */
  async open(): Promise<void> {
    if (this.state !== 'new') return;
    const opened = await openShard(this.input, this.result);
    if (opened === undefined) {
      this.state = 'unopened';
      return;
    }
    this.source = opened.source;
    this.size = opened.size;
    this.state = 'open';
    this.fast = true;
    // a copy for the cache, kept only if the streamed bytes turn out to be the shard the index describes
    if (this.input.cache !== undefined && this.size === this.input.record.bytes) this.copy = await this.input.cache.start(this.input.index);
  }

  /**
   * The hot path: from record `from` of leaf `pageNo` (`count` records), the run of samples of shard `shard` that are
   * each one member stored as is (`loneCrc`), inside the chunk read last, after the spans before them, and intact
   * (lone-run.ts). In the tar layout, also each member's tar header (name and size), and samples of several stored
   * members one by one. Returns the first record it did not take: a sample of another shard, or one for
   * {@link sample}, which checks it and names what is wrong.
   */
  takeLones(r: LeafRecords, from: number, count: number, shard: number, pageNo: number): number {
    if (!this.fast) return from;
    const tar = this.tar;
    if (tar === undefined) return this.loneRun(r, from, count, shard, pageNo);
    // the tar layout needs the names the scan lists (a decoded page has none: its samples take sample())
    if (!(r instanceof LeafScan)) return from;
    let i = from;
    while (i < count) {
      const named = tar.namedRun(r, i, count, shard);
      if (named > i) {
        const next = this.loneRun(r, i, named, shard, pageNo);
        if (next < named) return next;
        i = next;
      } else if (this.takeMembers(tar, r, i, shard, pageNo)) i++;
      else break;
    }
    return i;
  }

  /** The run of lone samples in records [from, last) (lone-run.ts, natively when it can): the first not taken. */
  private loneRun(r: LeafRecords, from: number, last: number, shard: number, pageNo: number): number {
    const io = takeIo;
    io[TakeLonesIo.FROM] = from;
    io[TakeLonesIo.COUNT] = last;
    io[TakeLonesIo.SHARD] = shard;
    io[TakeLonesIo.POS] = this.pos;
    io[TakeLonesIo.PREV_END] = this.prevEnd;
    io[TakeLonesIo.LAST] = this.lastOffset;
    takeLoneRun(this.chunk, r, io, this.input.native);
    const i = io[TakeLonesIo.NEXT] as number;
    if (i > from) {
      this.prevEnd = io[TakeLonesIo.PREV_END] as number;
      this.lastOffset = io[TakeLonesIo.LAST] as number;
      this.prevPage = pageNo;
      this.prevSlot = i - 1;
      this.result.memberBytes += io[TakeLonesIo.BYTES] as number;
      this.tar?.forgetBefore(this.lastOffset);
    }
    return i;
  }

  /**
   * Tar layout, record `i` of several members all stored as they are (the scan's member rows): taken when it is of
   * `shard`, inside the chunk after the spans before it, and each member has its tar header and its CRC32C.
   */
  private takeMembers(tar: TarHeaderCheck, r: LeafScan, i: number, shard: number, pageNo: number): boolean {
    const row = r.memberRow[i] as number;
    const off = r.offset[i] as number;
    const len = r.length[i] as number;
    if (r.shard[i] !== shard || row < 0 || len === 0 || off < this.prevEnd || off < this.pos || off < this.lastOffset || off + len > this.end) return false;
    const count = r.members[i] as number;
    if (!tar.membersNamed(r, row, count, off)) return false;
    const t = r.table;
    for (let k = 0; k < count; k++) {
      const at = (row + k) * MemberRow.COLUMNS;
      const start = off + (t[at + MemberRow.START] as number) - this.pos;
      if (crc32cSpan(this.chunk, start, start + (t[at + MemberRow.SIZE] as number)) !== t[at + MemberRow.CRC]) return false;
    }
    this.prevEnd = off + len;
    this.lastOffset = off;
    this.prevPage = pageNo;
    this.prevSlot = i;
    this.result.memberBytes += r.size[i] as number;
    tar.forgetBefore(off);
    return true;
  }

  /** Checks the sample at `off` (`len` bytes; entry in slot `slot` of leaf `pageNo`), reading as far as it ends. */
  async sample(off: number, len: number, loneCrc: number, pageNo: number, slot: number): Promise<void> {
    this.lastOffset = off;
    if (len > 0) {
      const overlapped = this.prevPage >= 0 && this.prevEnd > off;
      const before = { page: this.prevPage, slot: this.prevSlot };
      this.prevEnd = off + len;
      this.prevPage = pageNo;
      this.prevSlot = slot;
      if (overlapped) {
        const e = await this.entry(pageNo, slot);
        const other = await this.entry(before.page, before.slot);
        this.report(this.result.overlaps, { key: e.key, shard: this.input.record.file, offset: e.offset, what: `span overlaps sample ${JSON.stringify(other.key)}` });
        return;
      }
    }
    await this.open();
    if (this.state === 'failed') {
      (this.failure as { left: number }).left++;
      return;
    }
    if (this.state !== 'open') return;
    // read on to the chunk where the span starts (every byte is read: the whole-file checksum needs them)
    while (len === 0 ? off > this.end : off >= this.end) {
      if (this.end >= this.size) return this.pastEnd(pageNo, slot);
      if (!(await this.readNext())) return this.unchecked();
    }
    if (off + len <= this.end && off >= this.pos) {
      const span = this.chunk.subarray(off - this.pos, off - this.pos + len);
      if (!(this.tar === undefined && loneCrc >= 0 && crc32cSpan(this.chunk, off - this.pos, off - this.pos + len) === loneCrc)) await this.checkEntry(await this.entry(pageNo, slot), span);
      else this.result.memberBytes += len;
    } else if (len > this.input.maxGathered) {
      if (!(await this.streamSpan(off, len, pageNo, slot))) return;
    } else {
      const span = new Uint8Array(len);
      for (;;) {
        const from = Math.max(off, this.pos);
        const to = Math.min(off + len, this.end);
        span.set(this.chunk.subarray(from - this.pos, to - this.pos), from - off);
        if (off + len <= this.end) break;
        if (this.end >= this.size) return this.pastEnd(pageNo, slot);
        if (!(await this.readNext())) return this.unchecked();
      }
      await this.checkEntry(await this.entry(pageNo, slot), span);
    }
    this.tar?.forgetBefore(off);
  }

  /** Reads the rest of the shard, then checks the whole file (size, fingerprint, packed header, CRC32C). */
  async finish(): Promise<ShardResult> {
    if (this.state === 'new') await this.open();
    const { record, manifestShard, cache, index } = this.input;
    let copied = false;
    try {
      if (this.state === 'open') {
        while (this.end < this.size) {
          if (!(await this.readNext())) break;
        }
      }
      if (this.state === 'open') copied = (await this.copy?.commit()) ?? false;
    } finally {
      await this.copy?.abort();
      await this.reader?.stop();
      await this.source?.close();
      if (this.state === 'open' || this.state === 'failed') cache?.finished(index, record.bytes, copied, this.size === record.bytes && this.crc >>> 0 === record.crc32c >>> 0);
    }
    if (this.failure !== undefined) {
      const { left } = this.failure;
      this.result.problems.push(`${this.failure.message}; the shard from byte ${this.failure.at} on (${left} sample${left === 1 ? '' : 's'}) was not checked`);
    }
    if (this.state === 'open') {
      this.result.checked = true;
      this.checkHead(this.head, this.size);
      if (manifestShard !== undefined && crc32cHex(this.crc) !== manifestShard.crc32c) this.result.changed = true;
      if (this.size === record.bytes && this.crc >>> 0 !== record.crc32c) {
        this.result.problems.push(`whole-file CRC32C is ${crc32cHex(this.crc)}, the index says ${crc32cHex(record.crc32c)}${this.tar?.scanProblem === undefined ? '' : `; ${this.tar.scanProblem}`}`);
      }
    }
    this.state = 'done';
    this.fast = false;
    return this.result;
  }

  /** Stops without a result (the shard is checked again from the start another way): no copy is kept. */
  async abandon(): Promise<void> {
    this.state = 'done';
    this.fast = false;
    try {
      await this.copy?.abort();
      await this.reader?.stop();
    } finally {
      await this.source?.close();
    }
  }

  /** Size, fingerprint and (packed) shard header only: a quick verify. */
  async quick(): Promise<ShardResult> {
    const opened = await openShard(this.input, this.result);
    if (opened === undefined) return this.result;
    try {
      let head: Uint8Array;
      try {
        head = await opened.source.read(0, Math.min(opened.size, FINGERPRINT_BYTES));
      } catch (err) {
        if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
        this.result.problems.push(`${err.message}; its fingerprint was not checked`);
        return this.result;
      }
      this.checkHead(head, opened.size);
    } finally {
      await opened.source.close();
    }
    this.result.checked = true;
    return this.result;
  }

  /** Reads the next chunk: whole-file checksum, cache copy, fingerprint bytes, tar headers. False when it failed. */
  private async readNext(): Promise<boolean> {
    const at = this.end;
    const { chunkBytes } = this.input;
    this.reader ??= new ReadAhead(this.source as ByteSource);
    const length = Math.min(chunkBytes, this.size - at);
    const chunk = await readShard(this.reader, at, length, Math.min(chunkBytes, this.size - at - length), this.result);
    if (chunk === undefined) {
      this.state = 'failed';
      this.fast = false;
      this.failure = { message: this.result.problems.pop() as string, at, left: 0 };
      return false;
    }
    this.chunk = chunk;
    this.pos = at;
    this.end = at + chunk.length;
    this.crc = crc32c(chunk, this.crc);
    await this.copy?.write(chunk);
    if (at < FINGERPRINT_BYTES) this.head = concat(this.head, chunk.subarray(0, FINGERPRINT_BYTES - at));
    this.tar?.push(chunk);
    this.input.onBytes(chunk.length);
    return true;
  }

  /** A read failed while the sample being checked was not complete: it is one of the samples not checked. */
  private unchecked(): void {
    (this.failure as { left: number }).left++;
  }

  private async pastEnd(pageNo: number, slot: number): Promise<void> {
    const entry = await this.entry(pageNo, slot);
    this.damage({ key: entry.key, shard: this.input.record.file, offset: entry.offset, what: `the shard ends at byte ${this.size}, before this sample's span ends` });
  }

  /** A span too long to gather, checked as it streams past (see member-stream.ts). False when it was not completed. */
  private async streamSpan(off: number, len: number, pageNo: number, slot: number): Promise<boolean> {
    const entry = await this.entry(pageNo, slot);
    const streamed = new MemberStream(entry, this.input.record.file);
    for (;;) {
      const from = Math.max(off, this.pos);
      const to = Math.min(off + len, this.end);
      streamed.push(this.chunk.subarray(from - this.pos, to - this.pos), from);
      if (off + len <= this.end) break;
      if (this.end >= this.size) {
        await this.pastEnd(pageNo, slot);
        return false;
      }
      if (!(await this.readNext())) {
        this.unchecked();
        return false;
      }
    }
    // the whole span has been read: every member's tar header has been scanned
    for (const v of streamed.finish()) {
      const bad = (what: string): void => this.damage({ key: entry.key, shard: this.input.record.file, offset: v.at, what: `member "${v.member.ext}": ${what}` });
      this.tar?.check(entry, v.member.ext, v.member.storedSize, v.at, v.member.codec === Codec.lz4, bad);
      this.result.memberBytes += v.member.size;
      if (v.problem !== undefined) bad(v.problem);
    }
    return true;
  }

  private async checkEntry(entry: IndexEntry, span: Uint8Array): Promise<void> {
    const file = this.input.record.file;
    for (const m of entry.members) {
      const at = entry.offset + m.offset;
      const bad = (what: string): void => this.damage({ key: entry.key, shard: file, offset: at, what: `member "${m.ext}": ${what}` });
      this.tar?.check(entry, m.ext, m.storedSize, at, m.codec === Codec.lz4, bad);
      const stored = span.subarray(m.offset, m.offset + m.storedSize);
      let bytes: Uint8Array;
      try {
        bytes = m.codec === Codec.lz4 ? lz4DecompressMember(stored, m.size, `${file} byte ${at}`) : stored;
      } catch (err) {
        if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
        bad(err.message);
        continue;
      }
      this.result.memberBytes += m.size;
      if (crc32c(bytes) !== m.crc32c) bad(`checksum mismatch (CRC32C ${crc32cHex(crc32c(bytes))}, the index says ${crc32cHex(m.crc32c)})`);
    }
  }

  private checkHead(head: Uint8Array, size: number): void {
    const { record } = this.input;
    if (record.fingerprint >= 0 && size === record.bytes && crc32c(head) !== record.fingerprint) {
      this.result.problems.push('its first 4 KiB differ from what the index recorded (fingerprint); the shard was replaced or damaged');
    }
    if (this.input.manifest.layout === 'packed') {
      try {
        checkPackedHeader(head.subarray(0, PACKED_HEADER_BYTES), record.file);
      } catch (err) {
        if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
        this.result.problems.push(err.message);
      }
    }
  }

  private entry(pageNo: number, slot: number): Promise<IndexEntry> {
    return (this.input.pages as PageReader).entry(pageNo, slot);
  }

  private damage(d: DamagedSample): void {
    this.report(this.result.damaged, d);
  }

  private report(list: DamagedSample[], d: DamagedSample): void {
    this.result.damagedCount++;
    if (list.length < this.input.maxReported) list.push(d);
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b.slice();
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
