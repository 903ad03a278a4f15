import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IndexEntry, MemberEntry } from '../../formats/index-entry.js';
import { PAGE_HEADER_BYTES, decodePage, type LeafPage } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { memberPath } from '../../formats/sample.js';
import { checkKeyAndExts } from '../../formats/sample-layout.js';
import { safeKeyBytes } from '../../src/verify/leaf-keys.js';
import { MemberRow } from '../../src/native/native.js';
import { nameAt } from '../../src/verify/leaf-names.js';
import { LeafScan } from '../../src/verify/leaf-scan.js';
import { layMembers, leafPages, resealedLeaf, roomFor, sealedLeaf } from '../helpers/leaf-pages.js';

const asciiKey = fc.string({ unit: fc.constantFrom('a', 'b', '.', '/', '\\', '\0', 'z'), minLength: 0, maxLength: 8 });
const keyArb = fc.oneof(fc.string({ minLength: 1, maxLength: 24 }), asciiKey, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }));
const extArb = fc.constantFrom('bin', 'jpg', 'seg.png', 'x', '', 'é', '画像', 'a/b', 'x'.repeat(30));
const memberArb = fc.tuple(extArb, fc.nat({ max: 3000 }), fc.boolean(), fc.nat({ max: 9 }));

/** Sorted unique entries with 1-20 members, sometimes 60-70 or 250-260 (over 256 take decodePage's path), stored or LZ4, often repeating a shape. */
const entriesArb = fc
  .tuple(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 300 }), fc.array(fc.tuple(fc.oneof({ weight: 5, arbitrary: fc.array(memberArb, { minLength: 1, maxLength: 20 }) }, { weight: 1, arbitrary: fc.array(memberArb, { minLength: 60, maxLength: 70 }) }, { weight: 1, arbitrary: fc.array(memberArb, { minLength: 250, maxLength: 260 }) }), fc.nat({ max: 3 })), { minLength: 1, maxLength: 4 }))
  .map(([raw, shapes]) => {
    let shard = 0;
    let end = 0;
    return [...new Set(raw)].sort(compareKeys).map((key, i): IndexEntry => {
      const [shape, jump] = shapes[i % shapes.length]!;
      if (jump === 0) shard++;
      const offset = jump === 0 ? 0 : end + (jump === 1 ? 0 : jump * 11);
      const { members, length } = layMembers(shape, i);
      end = offset + length;
      return { key, shard, offset, length, members };
    });
  });


/** What the scan read equals what decodePage decodes. */
function expectSame(scan: LeafScan, leaf: LeafPage): void {
  const e = leaf.entries;
  expect(scan.count).toBe(e.length);
  expect(scan.next).toBe(leaf.next);
  expect(scan.firstKey).toBe(e[0]!.key);
  expect(scan.lastKey).toBe(e[e.length - 1]!.key);
  expect([scan.totalMembers, scan.totalLength, scan.totalSize, scan.totalStored, scan.maxEnd]).toEqual([
    e.reduce((t, x) => t + x.members.length, 0),
    e.reduce((t, x) => t + x.length, 0),
    e.reduce((t, x) => t + x.members.reduce((u, m) => u + m.size, 0), 0),
    e.reduce((t, x) => t + x.members.reduce((u, m) => u + m.storedSize, 0), 0),
    Math.max(...e.map((x) => x.offset + x.length)),
  ]);
  expect(scan.oneShard).toBe(e.every((x) => x.shard === e[0]!.shard) ? e[0]!.shard : -1);
  e.forEach((entry, i) => {
    const lone = entry.members.length === 1 && entry.members[0]!.codec === 0;
    expect([scan.shard[i], scan.offset[i], scan.length[i], scan.members[i], scan.size[i], scan.stored[i], scan.loneCrc[i]]).toEqual([
      entry.shard,
      entry.offset,
      entry.length,
      entry.members.length,
      entry.members.reduce((t, m) => t + m.size, 0),
      entry.members.reduce((t, m) => t + m.storedSize, 0),
      lone ? entry.members[0]!.crc32c : -1,
    ]);
    // with names listed: a lone member's tar name; the rows of a sample of several stored members (that each one
    // is there: expectNames)
    if (scan.names.length === 0) return; // not written without names
    const start = scan.nameStart[i]!;
    if (!lone) expect([start, scan.nameLength[i]]).toEqual([-1, 0]);
    else if (start >= 0) expect(nameAt(scan, start, scan.nameLength[i]!)).toBe(memberPath(entry.key, entry.members[0]!.ext));
    const row = scan.memberRow[i]!;
    if (lone || entry.members.some((m) => m.codec !== 0)) expect(row).toBe(-1);
    else if (row >= 0) {
      const t = scan.table;
      const rows = entry.members.map((_, k) => {
        const at = (row + k) * MemberRow.COLUMNS;
        return { start: t[at + MemberRow.START], size: t[at + MemberRow.SIZE], crc: t[at + MemberRow.CRC], name: nameAt(scan, t[at + MemberRow.NAME_START]!, t[at + MemberRow.NAME_LENGTH]!) };
      });
      expect(rows).toEqual(entry.members.map((m) => ({ start: m.offset, size: m.storedSize, crc: m.crc32c, name: memberPath(entry.key, m.ext) })));
    }
  });
}

/** After a scan, every sample of stored members has its names: names that did not fit made room, and were read again. */
function expectNames(scan: LeafScan, leaf: LeafPage): void {
  leaf.entries.forEach((entry, i) => {
    if (entry.members.length === 1 && entry.members[0]!.codec === 0) expect(scan.nameStart[i]).toBeGreaterThanOrEqual(0);
    else if (entry.members.every((m) => m.codec === 0)) expect(scan.memberRow[i]).toBeGreaterThanOrEqual(0);
  });
}

const writerAccepts = (e: IndexEntry): boolean => {
  try {
    checkKeyAndExts(e.key, e.members.map((m) => m.ext));
    return true;
  } catch {
    return false;
  }
};

describe('verify leaf scan (property)', () => {
  it('safeKeyBytes accepts exactly the keys checkKeyAndExts accepts', () => {
    fc.assert(
      fc.property(fc.oneof(asciiKey, fc.string({ unit: fc.constantFrom('a', '.', '/', '\\', '\0', 'é', '😀'), minLength: 0, maxLength: 8 })), (key) => {
        const bytes = new TextEncoder().encode(key);
        const padded = new Uint8Array(bytes.length + 3).fill(0x2f); // bytes past the length are not looked at
        padded.set(bytes);
        expect(safeKeyBytes(padded, bytes.length)).toBe(writerAccepts({ key, shard: 0, offset: 0, length: 0, members: [{ ext: 'x', offset: 0, size: 0, storedSize: 0, codec: 0, crc32c: 0 }] }));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads every leaf of writer-accepted names with up to 256 members as decodePage does, and no other leaf', () => {
    fc.assert(
      fc.property(entriesArb, fc.constantFrom(1024, 4096), fc.boolean(), (entries, pageSize, names) => {
        const scan = new LeafScan(undefined, names);
        for (const [n, page] of leafPages(entries, roomFor(entries, pageSize))) {
          const leaf = decodePage(page, n, 'idx', true) as LeafPage;
          const takes = leaf.entries.every((e) => e.members.length <= 256 && writerAccepts(e));
          expect(scan.scan(page, n)).toBe(takes);
          if (takes) expectSame(scan, leaf);
          if (takes && names) expectNames(scan, leaf);
          expect(scan.scan(page, n + 1)).toBe(false); // a page read from the wrong place
        }
      }),
      { numRuns: 80 },
    );
  });

  it('on damaged leaves (checksum made to match): takes none that decodePage refuses, and reads the others as it does', () => {
    fc.assert(
      fc.property(entriesArb, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 3 }), fc.boolean(), (entries, flips, names) => {
        const scan = new LeafScan(undefined, names);
        for (const [n, clean] of leafPages(entries, roomFor(entries, 1024))) {
          const page = clean.slice();
          // inside the records (the zero tail is read by neither)
          let used = page.length;
          while (used > PAGE_HEADER_BYTES + 1 && page[used - 1] === 0) used--;
          for (const [at, mask] of flips) page[PAGE_HEADER_BYTES + (at % (used - PAGE_HEADER_BYTES))]! ^= mask;
          const leaf = resealedLeaf(page, n);
          const took = scan.scan(page, n);
          if (leaf === undefined) expect(took).toBe(false);
          else if (took) expectSame(scan, leaf);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("lists each lone stored member's tar name (key.ext) and rows for samples of several stored members, whatever the arena's room", () => {
    const validKey = fc.tuple(fc.constantFrom('train', 'val', 'a.b'), fc.nat(30), fc.nat(99_999)).map(([d, c, i]) => `${d}/c${c}/${String(i).padStart(5, '0')}`);
    const validExt = fc.constantFrom('jpg', 'x', 'seg.png', 'cls', '');
    const validMember = fc.tuple(validExt, fc.nat({ max: 3000 }), fc.boolean(), fc.nat({ max: 9 }));
    const entries = fc
      .tuple(fc.uniqueArray(validKey, { minLength: 1, maxLength: 300 }), fc.array(fc.oneof({ weight: 4, arbitrary: fc.array(validMember, { minLength: 1, maxLength: 3 }) }, { weight: 1, arbitrary: fc.array(validMember, { minLength: 17, maxLength: 30 }) }), { minLength: 1, maxLength: 4 }))
      .map(([raw, shapes]) => {
        let end = 0;
        return [...new Set(raw)].sort(compareKeys).map((key, i): IndexEntry => {
          const { members, length } = layMembers(shapes[i % shapes.length]!, i);
          const offset = end;
          end += length;
          return { key, shard: 0, offset, length, members };
        });
      })
      .filter((es) => es.every(writerAccepts));
    fc.assert(
      fc.property(entries, fc.constantFrom(1024, 4096), fc.nat(200), (es, pageSize, room) => {
        const scan = new LeafScan(undefined, true);
        let lone = 0;
        for (const [n, page] of leafPages(es, pageSize)) {
          const leaf = decodePage(page, n, 'idx', true) as LeafPage;
          scan.names = new Uint8Array(room + 1); // a small arena: some names do not fit, then it grows and reads again
          expect(scan.scan(page, n)).toBe(true);
          expectSame(scan, leaf);
          expectNames(scan, leaf);
          lone += leaf.entries.filter((e) => e.members.length === 1 && e.members[0]!.codec === 0).length;
        }
        return lone >= 0;
      }),
      { numRuns: 150 },
    );
  });

  it('takes no leaf whose records are out of key order or whose span does not start at its first member', () => {
    const member = (offset: number): MemberEntry => ({ ext: 'bin', offset, size: 4, storedSize: 4, codec: 0, crc32c: 1 });
    const page = (entries: IndexEntry[]): Uint8Array => sealedLeaf(entries);
    const entry = (key: string, offset: number): IndexEntry => ({ key, shard: 0, offset: 8 * offset, length: 4 + offset, members: [member(offset)] });
    const scan = new LeafScan();
    expect(scan.scan(page([entry('a/1', 0), entry('a/2', 0)]), 3)).toBe(true);
    for (const bad of [[entry('a/2', 0), entry('a/1', 0)], [entry('a/1', 0), entry('a/1', 0)], [entry('a/1', 0), entry('a/', 0)], [entry('a/1', 0), entry('a/2', 3)]]) {
      expect(() => decodePage(page(bad), 3, 'idx')).toThrow();
      expect(scan.scan(page(bad), 3)).toBe(false);
    }
  });
});
