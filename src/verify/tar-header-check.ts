/**
 * The tar layout's part of a full verify: each member's tar header, read as the shard's chunks stream past, checked
 * against the index (name and size). The addon reads runs of plain headers (src/native/verify-tar.c); a
 * {@link TarScanner} reads the others (pax, GNU long names, other types, damage, a header cut by a chunk's end), or
 * all of them without the addon. Headers are read ahead of the samples being checked, so they wait here, by data
 * offset, until their sample is checked.
 */
import { isShardkitError } from '../../formats/errors.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { memberPath } from '../../formats/sample.js';
import { LZ4_NAME_SUFFIX } from '../../formats/sample-layout.js';
import { TarType } from '../../formats/tar-header.js';
import { TarScanner } from '../../formats/tar-scan.js';
import { utf8OrUndefined } from '../../formats/bytes.js';
import { isHttpDeadline } from '../io/http-client.js';
import { MemberRow, TarHeadersIo, TarRow, type NativeAddon } from '../native/native.js';
import { normalizedName } from '../adopt/member-rules.js';
import type { LeafScan } from './leaf-scan.js';

export class TarHeaderCheck {
  /**
   * The file entries' headers read ahead of the samples being checked, in shard order: rows [head, tail) of
   * {@link TarRow} columns, their names in `names`. Typed arrays, not an object a header: the garbage collector had
   * one to track for every member of a real tree.
   */
  private rows = new Float64Array(INITIAL_ROWS * TarRow.COLUMNS);
  private head = 0;
  private tail = 0;
  private names = new Uint8Array(INITIAL_NAME_BYTES);
  private namesUsed = 0;
  /** The row found last: samples are checked in shard order, so the next one wanted is usually the next row. */
  private hint = 0;
  private readonly scanner: TarScanner;
  /** Where the scan stopped on a damaged header: it is reported once, with the first member after it. */
  private scanError: { message: string; at: number; reported: boolean } | undefined;

  /** `native`: the addon, which reads runs of plain headers (verify-tar.c); TarScanner reads the others. */
  constructor(
    file: string,
    private readonly native?: NativeAddon,
  ) {
    this.scanner = new TarScanner(file, {
      onEntry: (e) => {
        if (e.type === TarType.file || e.type === TarType.oldFile || e.type === TarType.contiguous) this.addRow(e.dataOffset, e.size, e.nameBytes);
      },
    });
  }

  /** The message of the damaged header that stopped the scan, if one did. */
  get scanProblem(): string | undefined {
    return this.scanError?.message;
  }

  /** Scans the shard's next chunk (the chunks come in order, each once). */
  push(chunk: Uint8Array): void {
    const scanner = this.scanner;
    if (this.scanError !== undefined || scanner.ended) return;
    try {
      if (this.native === undefined) {
        scanner.push(chunk);
        return;
      }
      let i = 0;
      while (i < chunk.length && !scanner.ended) {
        if (scanner.atHeader) {
          const at = this.nativeRun(chunk, i);
          if (at > i) {
            i = at;
            continue;
          }
        }
        i = scanner.pushUntilHeader(chunk, i); // a header the run declined (TarScanner reads or refuses it), or data
      }
    } catch (err) {
      if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
      this.scanError = { message: err.message, at: scanner.offset - 512, reported: false };
    }
  }

  /** The addon's run of plain headers from chunk[from] (a header boundary): where it stopped. */
  private nativeRun(chunk: Uint8Array, from: number): number {
    this.room(MIN_FREE_ROWS, MIN_FREE_NAME_BYTES);
    const io = tarIo;
    io[TarHeadersIo.FROM] = from;
    io[TarHeadersIo.BASE] = this.scanner.offset - from;
    io[TarHeadersIo.ROWS] = this.tail;
    io[TarHeadersIo.NAMES] = this.namesUsed;
    (this.native as NativeAddon).verifyTarHeaders(chunk, this.rows, this.names, io);
    const at = io[TarHeadersIo.AT] as number;
    this.tail = io[TarHeadersIo.ROWS] as number;
    this.namesUsed = io[TarHeadersIo.NAMES] as number;
    if (at > from) this.scanner.passHeaders(at - from, io[TarHeadersIo.NEXT] as number);
    return at;
  }

  /** Checks the header of member `ext` of `entry`, whose stored bytes start at `at`; `bad` is told what is wrong. */
  check(entry: IndexEntry, ext: string, storedSize: number, at: number, lz4: boolean, bad: (what: string) => void): void {
    const row = this.find(at);
    if (row < 0) {
      const scanError = this.scanError;
      if (scanError === undefined) bad(`no tar header ends at byte ${at}`);
      else if (!scanError.reported && at > scanError.at) {
        scanError.reported = true;
        bad(`tar header damaged: ${scanError.message}`);
      }
      return;
    }
    const want = memberPath(entry.key, ext) + (lz4 ? LZ4_NAME_SUFFIX : '');
    const c = row * TarRow.COLUMNS;
    const start = this.rows[c + TarRow.NAME_START] as number;
    const name = this.names.subarray(start, start + (this.rows[c + TarRow.NAME_LENGTH] as number));
    const text = utf8OrUndefined(name);
    const got = text === undefined ? undefined : normalizedName(text);
    if (got !== want) bad(`tar header names ${JSON.stringify(got ?? '(not UTF-8)')}, the index says ${JSON.stringify(want)}`);
    const size = this.rows[c + TarRow.SIZE] as number;
    if (size !== storedSize) bad(`tar header says ${size} bytes, the index says ${storedSize}`);
  }

  /**
   * verify's hot path in the tar layout: from record `from` of a leaf scan with names, the first record in [from,
   * count) that is not of `shard`, not one stored member, or whose tar header (the one whose data starts at the
   * record's offset) does not give its name and size. The records before it need only their bytes checked; the
   * record it returns goes to {@link check}, which names what is wrong.
   */
  namedRun(r: LeafScan, from: number, count: number, shard: number): number {
    const { names, nameStart, nameLength } = r;
    let i = from;
    for (; i < count; i++) {
      const start = nameStart[i] as number;
      if (r.shard[i] !== shard || start < 0) break;
      if (!this.gives(this.find(r.offset[i] as number), r.length[i] as number, names, start, nameLength[i] as number)) break;
    }
    return i;
  }

  /**
   * Whether the `count` members of a sample at shard offset `off` (rows from `row` of the scan's member table) each
   * have the tar header that names them and gives their size.
   */
  membersNamed(r: LeafScan, row: number, count: number, off: number): boolean {
    const t = r.table;
    for (let k = 0; k < count; k++) {
      const at = (row + k) * MemberRow.COLUMNS;
      if (!this.gives(this.find(off + (t[at + MemberRow.START] as number)), t[at + MemberRow.SIZE] as number, r.names, t[at + MemberRow.NAME_START] as number, t[at + MemberRow.NAME_LENGTH] as number)) return false;
    }
    return true;
  }

  /** Forgets the headers of members before `offset` (their samples have been checked). */
  forgetBefore(offset: number): void {
    const rows = this.rows;
    while (this.head < this.tail && (rows[this.head * TarRow.COLUMNS + TarRow.DATA] as number) < offset) this.head++;
  }

  /** Whether header row `row` (-1: none) gives `size` and, after its leading "./" segments, the name names[start, start + length). */
  private gives(row: number, size: number, names: Uint8Array, start: number, length: number): boolean {
    if (row < 0) return false;
    const c = row * TarRow.COLUMNS;
    if (this.rows[c + TarRow.SIZE] !== size) return false;
    const own = this.names;
    let k = this.rows[c + TarRow.NAME_START] as number;
    const end = k + (this.rows[c + TarRow.NAME_LENGTH] as number);
    while (own[k] === DOT && own[k + 1] === SLASH && k + 1 < end) k += 2;
    if (end - k !== length) return false;
    for (let j = 0; j < length; j++) if (own[k + j] !== names[start + j]) return false;
    return true;
  }

  /** The row of the header whose data starts at `at`, or -1. */
  private find(at: number): number {
    const rows = this.rows;
    const hint = this.hint;
    if (hint >= this.head && hint < this.tail && rows[hint * TarRow.COLUMNS + TarRow.DATA] === at) {
      this.hint = hint + 1;
      return hint;
    }
    let lo = this.head;
    let hi = this.tail;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((rows[mid * TarRow.COLUMNS + TarRow.DATA] as number) < at) lo = mid + 1;
      else hi = mid;
    }
    if (lo < this.tail && rows[lo * TarRow.COLUMNS + TarRow.DATA] === at) {
      this.hint = lo + 1;
      return lo;
    }
    return -1;
  }

  /** A header TarScanner read (a file entry's): its row. */
  private addRow(dataOffset: number, size: number, name: Uint8Array): void {
    this.room(1, name.length);
    const c = this.tail * TarRow.COLUMNS;
    this.rows[c + TarRow.DATA] = dataOffset;
    this.rows[c + TarRow.SIZE] = size;
    this.rows[c + TarRow.NAME_START] = this.namesUsed;
    this.rows[c + TarRow.NAME_LENGTH] = name.length;
    this.names.set(name, this.namesUsed);
    this.namesUsed += name.length;
    this.tail++;
  }

  /** Room for `rows` more rows and `nameBytes` more name bytes: the rows forgotten dropped first, then the arrays grown. */
  private room(rows: number, nameBytes: number): void {
    const capacity = this.rows.length / TarRow.COLUMNS;
    if (this.tail + rows <= capacity && this.namesUsed + nameBytes <= this.names.length) return;
    const head = this.head;
    const kept = this.tail - head;
    const namesFrom = kept > 0 ? (this.rows[head * TarRow.COLUMNS + TarRow.NAME_START] as number) : this.namesUsed;
    const keptNames = this.namesUsed - namesFrom;
    const rowsNeeded = kept + rows;
    const namesNeeded = keptNames + nameBytes;
    const newRows = rowsNeeded <= capacity ? this.rows : new Float64Array(Math.max(2 * capacity, rowsNeeded) * TarRow.COLUMNS);
    const newNames = namesNeeded <= this.names.length ? this.names : new Uint8Array(Math.max(2 * this.names.length, namesNeeded));
    newRows.set(this.rows.subarray(head * TarRow.COLUMNS, this.tail * TarRow.COLUMNS), 0); // (set copies as memmove does)
    newNames.set(this.names.subarray(namesFrom, this.namesUsed), 0);
    for (let r = 0; r < kept; r++) (newRows[r * TarRow.COLUMNS + TarRow.NAME_START] as number) -= namesFrom;
    this.rows = newRows;
    this.names = newNames;
    this.head = 0;
    this.tail = kept;
    this.namesUsed = keptNames;
    this.hint -= head;
  }
}

/** verifyTarHeaders' io (calls are synchronous: one will do). */
const tarIo = new Float64Array(TarHeadersIo.LENGTH);
const INITIAL_ROWS = 1024;
const INITIAL_NAME_BYTES = 64 * 1024;
/** Before a native run: room for this many headers, and for as many names of the longest ustar form (prefix, "/", name). */
const MIN_FREE_ROWS = 256;
const MIN_FREE_NAME_BYTES = MIN_FREE_ROWS * 256;

const DOT = 0x2e;
const SLASH = 0x2f;
