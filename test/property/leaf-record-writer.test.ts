import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BTreeBuilder } from '../../formats/btree-builder.js';
import { utf8Bytes } from '../../formats/bytes.js';
import { ErrorCodes } from '../../formats/errors.js';
import type { IndexEntry, MemberEntry } from '../../formats/index-entry.js';
import { LeafRecordEncoder, PAGE_HEADER_BYTES, PAGE_LINK, PageType, decodePage, sealPage } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { leafRecordBound, writeLeafRecord } from '../../formats/leaf-record-writer.js';

const keyArb = fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }), fc.constantFrom('train/c000001/000000001', 'train/c000001/000000002', 'é/ü', 'a'));
const memberArb = fc.record({
  ext: fc.constantFrom('bin', 'jpg', 'seg.png', 'cls', 'é', 'x'.repeat(60)),
  gap: fc.oneof(fc.constant(0), fc.nat({ max: 600 })),
  size: fc.oneof(fc.nat({ max: 100 }), fc.nat({ max: 2 ** 40 })),
  lz4: fc.boolean(),
  crc32c: fc.nat({ max: 0xffffffff }),
});
type MemberSpec = typeof memberArb extends fc.Arbitrary<infer T> ? T : never;
const shapeArb = fc.array(memberArb, { minLength: 1, maxLength: 5 });
/** Entries in key order, often repeating the shape, shard and contiguity of the one before (what the flags encode). */
const entriesArb = fc
  .tuple(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 400 }), fc.array(fc.tuple(shapeArb, fc.nat({ max: 7 }), fc.nat({ max: 2 ** 36 })), { minLength: 1, maxLength: 8 }))
  .map(([raw, variants]) => {
    const keys = [...new Set(raw)].sort(compareKeys);
    let shard = 0;
    let end = 0;
    return keys.map((key, i): IndexEntry => {
      const [shape, pick, jump] = variants[i % variants.length] as [MemberSpec[], number, number];
      if (pick === 0) shard++;
      let offset = pick === 0 ? jump : pick === 1 ? end + (jump % 5000) : pick === 2 ? Math.max(0, end - (jump % 5000)) : end;
      if (pick === 0) end = 0;
      const members: MemberEntry[] = [];
      let at = 0;
      shape.forEach((m, j) => {
        const storedSize = m.lz4 ? Math.floor(m.size / 2) : m.size;
        const memberOffset = j === 0 ? 0 : at + m.gap;
        members.push({ ext: j === 0 ? m.ext : `${m.ext}${j}`, offset: memberOffset, size: m.size, storedSize, codec: m.lz4 ? 1 : 0, crc32c: m.crc32c });
        at = memberOffset + storedSize;
      });
      offset = Math.min(offset, 2 ** 50);
      end = offset + at;
      return { key, shard, offset, length: at, members };
    });
  });

describe('leaf records written in place (property)', () => {
  it('are byte for byte the records LeafRecordEncoder makes, with and without the previous record', () => {
    fc.assert(
      fc.property(entriesArb, fc.array(fc.boolean(), { minLength: 1, maxLength: 50 }), (entries, resets) => {
        const encoder = new LeafRecordEncoder();
        let prev: IndexEntry | undefined;
        let prevKey: Uint8Array = new Uint8Array(0);
        entries.forEach((entry, i) => {
          if (resets[i % resets.length]) {
            encoder.reset();
            prev = undefined;
          }
          const key = utf8Bytes(entry.key);
          let shared = 0;
          if (prev !== undefined) while (shared < Math.min(key.length, prevKey.length) && key[shared] === prevKey[shared]) shared++;
          const bound = leafRecordBound(entry, key.length);
          // a key scratch longer than the key, and junk around the record: only [at, end) may change
          const keyScratch = new Uint8Array(key.length + 9).fill(0xee);
          keyScratch.set(key);
          const buf = new Uint8Array(bound + 20).fill(0xaa);
          const end = writeLeafRecord(buf, 10, entry, keyScratch, key.length, prev, shared);
          const expected = encoder.encode(entry, key);
          expect(Buffer.from(buf.subarray(10, end)).toString('hex')).toBe(Buffer.from(expected).toString('hex'));
          expect(end - 10).toBeLessThanOrEqual(bound);
          expect(buf.subarray(end).every((b) => b === 0xaa) && buf.subarray(0, 10).every((b) => b === 0xaa)).toBe(true);
          prev = entry;
          prevKey = key;
        });
      }),
      { numRuns: 150 },
    );
  });

  it('fill leaf pages exactly as LeafRecordEncoder would: records from byte 16, then zeros; the same whether the caller gives key bytes or not, and after refused adds', () => {
    fc.assert(
      fc.property(entriesArb, fc.constantFrom(1024, 4096), (entries, pageSize) => {
        const build = (keyBytesAt: (i: number) => boolean, refusals: boolean): Map<number, Uint8Array> => {
          const pages = new Map<number, Uint8Array>();
          const b = new BTreeBuilder(pageSize, (n, page) => pages.set(n, page.slice()));
          entries.forEach((e, i) => {
            if (refusals && i > 0) {
              // refused adds change nothing: the same key again, one before the last, one with a record no page holds
              const before = entries[i - 1] as IndexEntry;
              expect(() => b.add({ ...e, key: before.key })).toThrow(expect.objectContaining({ code: ErrorCodes.DUPLICATE_KEY }));
              expect(() => b.add({ ...e, key: before.key.slice(0, -1) })).toThrow(expect.objectContaining({ code: ErrorCodes.DUPLICATE_KEY }));
              const huge = Array.from({ length: 600 }, (_, m): MemberEntry => ({ ext: `e${m}`, offset: m, size: 1, storedSize: 1, codec: 0, crc32c: 0 }));
              expect(() => b.add({ ...e, length: 600, members: huge })).toThrow(expect.objectContaining({ code: ErrorCodes.TOO_LARGE }));
            }
            if (keyBytesAt(i)) b.add(e, utf8Bytes(e.key));
            else b.add(e);
          });
          b.finish();
          return pages;
        };
        const pages = build(() => false, false);
        const variants = [build(() => true, false), build((i) => i % 3 === 1, false), build((i) => i % 2 === 0, true)];
        let seen = 0;
        for (const [n, page] of pages) {
          for (const other of variants) expect(Buffer.from(other.get(n) as Uint8Array).equals(Buffer.from(page)), `page ${n}`).toBe(true);
          const decoded = decodePage(page, n, 'idx', true);
          if (decoded.type !== 'leaf') continue;
          const encoder = new LeafRecordEncoder();
          const expected = new Uint8Array(pageSize);
          let at = PAGE_HEADER_BYTES;
          for (const e of decoded.entries) {
            const record = encoder.encode(e, utf8Bytes(e.key));
            expected.set(record, at);
            at += record.length;
          }
          sealPage(expected, PageType.leaf, decoded.entries.length, n, new DataView(page.buffer, page.byteOffset).getUint32(PAGE_LINK, true));
          expect(Buffer.from(page).equals(Buffer.from(expected)), `leaf ${n}`).toBe(true);
          expect(decoded.entries).toEqual(entries.slice(seen, seen + decoded.entries.length));
          seen += decoded.entries.length;
        }
        expect(seen).toBe(entries.length);
      }),
      { numRuns: 80 },
    );
  });
});
