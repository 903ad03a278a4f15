/**
 * The tar member names a {@link LeafScan} lists for verify in the tar layout (verify-scan.c does the same in C): the
 * name of a record of one stored member, and rows for a record of several members all stored as they are (start in
 * the span, size, CRC32C, name). Each name is the key, ".", the extension (the key alone for none), as pack writes
 * it in the tar. A name or a record's rows that do not fit are left out (-1); the scan then grows the arena from
 * what the page wanted and reads the page again (LeafScan.scan).
 */
import { MemberRow } from '../native/native.js';
import { Codec } from '../../formats/index-entry.js';
import type { LeafScan } from './leaf-scan.js';

const DOT = 0x2e;

/** Where the names of the page being scanned go: the scan's arena, table, counts and record columns. */
export interface NameArena {
  names: Uint8Array;
  table: Float64Array;
  namesUsed: number;
  namesWanted: number;
  rowsUsed: number;
  nameStart: Float64Array;
  nameLength: Float64Array;
  memberRow: Float64Array;
}

/** A record's members: codecs, extensions, starts in the span, stored sizes and CRC32Cs at index m. */
export interface MemberShape {
  codecs: Uint8Array;
  extAt: Float64Array;
  extLength: Float64Array;
  start: Float64Array;
  stored: Float64Array;
  crc: Float64Array;
}

/** The bytes of a name: the key, and "." and the extension when there is one. */
const nameBytes = (keyLength: number, extLength: number): number => keyLength + (extLength > 0 ? 1 + extLength : 0);

/** key[0, keyLength), ".", page[extAt, extAt + extLength) into the arena: its start there, or -1 when it does not fit. */
function put(a: NameArena, key: Uint8Array, keyLength: number, page: Uint8Array, extAt: number, extLength: number): number {
  const n = nameBytes(keyLength, extLength);
  if (n > a.names.length - a.namesUsed) return -1;
  const at = a.namesUsed;
  a.names.set(key.subarray(0, keyLength), at);
  if (extLength > 0) {
    a.names[at + keyLength] = DOT;
    a.names.set(page.subarray(extAt, extAt + extLength), at + keyLength + 1);
  }
  a.namesUsed += n;
  return at;
}

/**
 * Record `i`'s names into the arena and its columns: the name of a `lone` record (one stored member), or the rows of
 * a record of `count` members.
 */
export function recordNames(a: NameArena, i: number, lone: boolean, count: number, key: Uint8Array, keyLength: number, page: Uint8Array, m: MemberShape): void {
  const at = lone ? loneName(a, key, keyLength, page, m.extAt[0] as number, m.extLength[0] as number) : -1;
  a.nameStart[i] = at;
  a.nameLength[i] = at < 0 ? 0 : a.namesUsed - at;
  a.memberRow[i] = lone ? -1 : memberRows(a, count, key, keyLength, page, m);
}

/** The name of a record of one stored member (extension at page[extAt, extAt + extLength)): its start, or -1. */
function loneName(a: NameArena, key: Uint8Array, keyLength: number, page: Uint8Array, extAt: number, extLength: number): number {
  a.namesWanted += nameBytes(keyLength, extLength);
  return put(a, key, keyLength, page, extAt, extLength);
}

/**
 * Rows for a record of `count` members (their codecs, extensions, starts in the span, stored sizes and CRC32Cs at
 * index m of the arrays), when all are stored as they are and all fit: the first row's index, else -1.
 */
function memberRows(a: NameArena, count: number, key: Uint8Array, keyLength: number, page: Uint8Array, m: MemberShape): number {
  let n = 0;
  for (let k = 0; k < count; k++) {
    if (m.codecs[k] !== Codec.none) return -1;
    n += nameBytes(keyLength, m.extLength[k] as number);
  }
  a.namesWanted += n;
  if (n > a.names.length - a.namesUsed || count > a.table.length / MemberRow.COLUMNS - a.rowsUsed) return -1;
  const first = a.rowsUsed;
  for (let k = 0; k < count; k++) {
    const row = (first + k) * MemberRow.COLUMNS;
    const at = a.namesUsed;
    a.table[row + MemberRow.NAME_START] = put(a, key, keyLength, page, m.extAt[k] as number, m.extLength[k] as number);
    a.table[row + MemberRow.NAME_LENGTH] = a.namesUsed - at;
    a.table[row + MemberRow.START] = m.start[k] as number;
    a.table[row + MemberRow.SIZE] = m.stored[k] as number;
    a.table[row + MemberRow.CRC] = m.crc[k] as number;
  }
  a.rowsUsed += count;
  return first;
}

/** The name listed at `start` for `length` bytes, as text (tests, messages). */
export function nameAt(scan: LeafScan, start: number, length: number): string {
  return Buffer.from(scan.names.subarray(start, start + length)).toString('utf8');
}
