/**
 * The tar layout's part of a full verify: each member's tar header, read by a {@link TarScanner} as the shard's
 * chunks stream past, checked against the index (name and size). The scanner reads ahead of the samples being
 * checked, so the headers it found wait here, by data offset, until their sample is checked.
 */
import { isShardkitError } from '../../formats/errors.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { memberPath } from '../../formats/sample.js';
import { LZ4_NAME_SUFFIX } from '../../formats/sample-layout.js';
import { TarType } from '../../formats/tar-header.js';
import { TarScanner, type TarEntry } from '../../formats/tar-scan.js';
import { isHttpDeadline } from '../io/http-client.js';
import { MemberRow } from '../native/native.js';
import { normalizedName } from '../adopt/member-rules.js';
import type { LeafScan } from './leaf-scan.js';

export class TarHeaderCheck {
  /** Entries read ahead of the samples being checked, by data offset. */
  private readonly headers = new Map<number, TarEntry>();
  private readonly scanner: TarScanner;
  /** Where the scan stopped on a damaged header: it is reported once, with the first member after it. */
  private scanError: { message: string; at: number; reported: boolean } | undefined;

  constructor(file: string) {
    this.scanner = new TarScanner(file, {
      onEntry: (e) => {
        if (e.type === TarType.file || e.type === TarType.oldFile || e.type === TarType.contiguous) this.headers.set(e.dataOffset, e);
      },
    });
  }

  /** The message of the damaged header that stopped the scan, if one did. */
  get scanProblem(): string | undefined {
    return this.scanError?.message;
  }

  /** Scans the shard's next chunk (the chunks come in order, each once). */
  push(chunk: Uint8Array): void {
    if (this.scanError !== undefined || this.scanner.ended) return;
    try {
      this.scanner.push(chunk);
    } catch (err) {
      if (!isShardkitError(err) || isHttpDeadline(err)) throw err;
      this.scanError = { message: err.message, at: this.scanner.offset - 512, reported: false };
    }
  }

  /** Checks the header of member `ext` of `entry`, whose stored bytes start at `at`; `bad` is told what is wrong. */
  check(entry: IndexEntry, ext: string, storedSize: number, at: number, lz4: boolean, bad: (what: string) => void): void {
    const h = this.headers.get(at);
    if (h === undefined) {
      const scanError = this.scanError;
      if (scanError === undefined) bad(`no tar header ends at byte ${at}`);
      else if (!scanError.reported && at > scanError.at) {
        scanError.reported = true;
        bad(`tar header damaged: ${scanError.message}`);
      }
      return;
    }
    const want = memberPath(entry.key, ext) + (lz4 ? LZ4_NAME_SUFFIX : '');
    const got = h.name === undefined ? undefined : normalizedName(h.name);
    if (got !== want) bad(`tar header names ${JSON.stringify(got ?? '(not UTF-8)')}, the index says ${JSON.stringify(want)}`);
    if (h.size !== storedSize) bad(`tar header says ${h.size} bytes, the index says ${storedSize}`);
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
      const h = this.headers.get(r.offset[i] as number);
      if (h === undefined || h.size !== r.length[i] || !sameName(h.nameBytes, names, start, nameLength[i] as number)) break;
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
      const h = this.headers.get(off + (t[at + MemberRow.START] as number));
      if (h === undefined || h.size !== t[at + MemberRow.SIZE] || !sameName(h.nameBytes, r.names, t[at + MemberRow.NAME_START] as number, t[at + MemberRow.NAME_LENGTH] as number)) return false;
    }
    return true;
  }

  /** Forgets the headers of members before `offset` (their samples have been checked). */
  forgetBefore(offset: number): void {
    for (const k of this.headers.keys()) {
      if (k >= offset) break;
      this.headers.delete(k);
    }
  }
}

/** Whether a tar name, after its leading "./" segments (as normalizedName), is names[start, start + length). */
function sameName(tarName: Uint8Array, names: Uint8Array, start: number, length: number): boolean {
  let k = 0;
  while (tarName[k] === DOT && tarName[k + 1] === SLASH) k += 2;
  if (tarName.length - k !== length) return false;
  for (let j = 0; j < length; j++) if (tarName[k + j] !== names[start + j]) return false;
  return true;
}

const DOT = 0x2e;
const SLASH = 0x2f;
