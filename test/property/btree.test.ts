import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BTreeBuilder } from '../../formats/btree-builder.js';
import { boundHit, keyHit, positionHit, seekKey, seekLeaf, seekLeafSync, seekPosition, seekPositionSync } from '../../formats/btree-reader.js';
import { ErrorCodes } from '../../formats/errors.js';
import { spanLength, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import { MEMBER_COLUMNS, MemberColumn, RECORD_COLUMNS, RecordColumn, decodePage, type LeafPage } from '../../formats/index-page.js';
import { compareKeys, isSimpleKey } from '../../formats/key-order.js';
import { buildMemoryIndex, entryFor } from '../helpers/memory-index.js';

const keyArb = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc.string({ minLength: 200, maxLength: 900 }),
);

function sortedUnique(keys: string[]): string[] {
  return [...new Set(keys)].sort(compareKeys);
}

describe('B+-tree index (property)', () => {
  it('key lookups agree with a Map, position lookups with sorted order, lower bounds with a scan', () => {
    fc.assert(
      fc.property(fc.array(keyArb, { minLength: 1, maxLength: 600 }), fc.array(keyArb, { maxLength: 30 }), fc.constantFrom(1024, 4096), (raw, probes, pageSize) => {
        const keys = sortedUnique(raw);
        const entries = keys.map((k, i) => entryFor(k, i));
        const idx = buildMemoryIndex(entries, pageSize);
        const map = new Map(entries.map((e) => [e.key, e]));
        for (const k of [...keys, ...probes]) {
          const hit = keyHit(idx.run(seekKey(idx.tree, k)), k);
          expect(hit?.entry).toEqual(map.get(k));
          if (hit) expect(keys[hit.position]).toBe(k);
          // the synchronous descent (the local fast path) reaches the same leaf as the generator
          const leaf = seekLeafSync(idx.tree, k, idx.load);
          expect(leaf?.leaf.pageNo).toBe(idx.run(seekLeaf(idx.tree, k))?.leaf.pageNo);
          if (hit) expect(leaf?.leaf.entries[hit.position - leaf.base]).toEqual(hit.entry);
        }
        keys.forEach((k, i) => {
          expect(positionHit(idx.run(seekPosition(idx.tree, i))).key).toBe(k);
          expect(positionHit(seekPositionSync(idx.tree, i, idx.load)).key).toBe(k);
        });
        expect(() => seekPositionSync(idx.tree, keys.length, idx.load)).toThrow(expect.objectContaining({ code: ErrorCodes.OUT_OF_RANGE }));
        for (const p of probes) {
          const expected = keys.findIndex((k) => compareKeys(k, p) >= 0);
          expect(boundHit(idx.run(seekKey(idx.tree, p)))).toBe(expected < 0 ? keys.length : expected);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('handles 200,000 keys with shared prefixes (three levels at 1 KiB pages)', () => {
    const keys = Array.from({ length: 200_000 }, (_, i) => `train/n${String(i % 1000).padStart(8, '0')}/img_${String(i).padStart(7, '0')}`).sort(compareKeys);
    const idx = buildMemoryIndex(keys.map((k, i) => entryFor(k, i)), 1024);
    expect(idx.tree.header.height).toBeGreaterThanOrEqual(3);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: keys.length - 1 }), (i) => {
        expect(positionHit(idx.run(seekPosition(idx.tree, i)))).toEqual(entryFor(keys[i]!, i));
        expect(keyHit(idx.run(seekKey(idx.tree, keys[i]!)), keys[i]!)?.position).toBe(i);
      }),
      { numRuns: 2000 },
    );
    expect(keyHit(idx.run(seekKey(idx.tree, 'train/zzz')), 'train/zzz')).toBeUndefined();
  });

  it('isSimpleKey is true exactly for keys without a UTF-16 unit from U+D800 up (where native < is byte order)', () => {
    fc.assert(
      fc.property(fc.oneof(keyArb, fc.string({ unit: fc.integer({ min: 0xd000, max: 0xffff }).map((u) => String.fromCharCode(u)), maxLength: 5 })), (k) => {
        const simple = [...Array(k.length).keys()].every((i) => k.charCodeAt(i) < 0xd800);
        expect(isSimpleKey(k)).toBe(simple);
      }),
      { numRuns: 2000 },
    );
  });

  it("a leaf's columns (the sync read path's view of it) hold exactly its entries", () => {
    // members of any shape: several, compressed (stored size apart from size), gaps, CRCs above 2^31, shards, far offsets
    const memberArb = fc.record({
      ext: fc.oneof(fc.constantFrom('jpg', 'cls', '__proto__', ''), fc.string({ maxLength: 6 })),
      gap: fc.nat({ max: 600 }),
      size: fc.nat({ max: 70_000 }),
      lz4: fc.boolean(),
      stored: fc.nat({ max: 70_000 }),
      crc32c: fc.nat({ max: 0xffffffff }),
    });
    const recordArb = fc.record({ key: keyArb, shard: fc.nat({ max: 3 }), skip: fc.oneof(fc.constant(0), fc.nat(), fc.constant(2 ** 33)), members: fc.array(memberArb, { minLength: 1, maxLength: 4 }) });
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 400 }), fc.constantFrom(1024, 4096), (raw, pageSize) => {
        const seen = new Set<string>();
        const records = raw.filter((r) => !seen.has(r.key) && seen.add(r.key)).sort((a, b) => compareKeys(a.key, b.key));
        let offset = 0;
        const entries: IndexEntry[] = records.map((r) => {
          let end = 0;
          const members: MemberEntry[] = r.members.map((m, i) => {
            const start = i === 0 ? 0 : end + m.gap;
            const storedSize = m.lz4 ? m.stored : m.size;
            end = start + storedSize;
            return { ext: m.ext, offset: start, size: m.size, storedSize, codec: m.lz4 ? 1 : 0, crc32c: m.crc32c };
          });
          offset += r.skip;
          const e = { key: r.key, shard: r.shard, offset, length: end, members };
          offset += end;
          return e;
        });
        const idx = buildMemoryIndex(entries, pageSize, 2 ** 45);
        let position = 0;
        while (position < entries.length) {
          const { leaf, base } = seekPositionSync(idx.tree, position, idx.load);
          leaf.entries.forEach((e, slot) => {
            expect(fromColumns(leaf, slot)).toEqual(e);
            expect(e).toEqual(entries[base + slot]);
            // a record of one uncompressed member carries its CRC32C and extension in its row
            const lone = e.members.length === 1 && e.members[0]!.codec === 0;
            const row = leaf.rows.subarray(slot * RECORD_COLUMNS, (slot + 1) * RECORD_COLUMNS);
            expect([row[RecordColumn.loneCrc32c], lone ? leaf.exts[row[RecordColumn.loneExt]!] : row[RecordColumn.loneExt]]).toEqual(lone ? [e.members[0]!.crc32c, e.members[0]!.ext] : [-1, -1]);
          });
          position = base + leaf.entries.length;
        }
      }),
      { numRuns: 80 },
    );
  });

  it('keeps 64-bit offsets exact above 4 GiB', () => {
    const big = 2 ** 40 + 12345;
    const e = { key: 'k', shard: 0, offset: big, length: 10, members: [{ ext: 'bin', offset: 0, size: 10, storedSize: 10, codec: 0 as const, crc32c: 1 }] };
    const idx = buildMemoryIndex([e], 4096, 2 ** 41);
    expect(keyHit(idx.run(seekKey(idx.tree, 'k')), 'k')?.entry.offset).toBe(big);
  });

  it('a builder resumed from a JSON snapshot at any cut point writes the same pages as one that never stopped', () => {
    fc.assert(
      fc.property(fc.array(keyArb, { minLength: 1, maxLength: 1500, size: 'medium' }), fc.constantFrom(1024, 4096), fc.array(fc.nat(), { maxLength: 4 }), (raw, pageSize, cutsRaw) => {
        // keys a 1 KiB page can hold; enough of them for two or three levels
        const keys = sortedUnique(raw).filter((k) => Buffer.byteLength(k) <= 480);
        const build = (cuts: Set<number>): Uint8Array[] => {
          const pages: Uint8Array[] = [];
          const sink = (n: number, page: Uint8Array): void => {
            pages[n] = page.slice();
          };
          let b = new BTreeBuilder(pageSize, sink);
          keys.forEach((k, i) => {
            // a restart: only the snapshot (through JSON) and the pages written so far survive
            if (cuts.has(i)) b = BTreeBuilder.resume(pageSize, sink, JSON.parse(JSON.stringify(b.snapshot())));
            b.add(entryFor(k, i));
          });
          if (cuts.has(keys.length)) b = BTreeBuilder.resume(pageSize, sink, JSON.parse(JSON.stringify(b.snapshot())));
          const t = b.finish();
          expect(t.entryCount).toBe(keys.length);
          return pages;
        };
        const whole = build(new Set());
        const resumed = build(new Set(cutsRaw.map((c) => c % (keys.length + 1))));
        expect(resumed.length).toBe(whole.length);
        whole.forEach((p, n) => expect(Buffer.from(resumed[n] as Uint8Array).equals(Buffer.from(p)), `page ${n}`).toBe(true));
      }),
      { numRuns: 40 },
    );
  });

  it('builds exactly the member layouts its reader takes, and refuses any other with INVALID_ARG', () => {
    const member = fc.record({ ext: fc.constantFrom('a', 'b', 'c', 'd'), offset: fc.nat({ max: 40 }), size: fc.nat({ max: 20 }) });
    fc.assert(
      fc.property(fc.uniqueArray(member, { minLength: 1, maxLength: 4, selector: (m) => m.ext }), (raw) => {
        const members: MemberEntry[] = raw.map((m) => ({ ...m, storedSize: m.size, codec: 0, crc32c: 7 }));
        const entry: IndexEntry = { key: 'k', shard: 0, offset: 512, length: spanLength(members), members };
        const pages = new Map<number, Uint8Array>();
        const b = new BTreeBuilder(1024, (no, page) => pages.set(no, page.slice()));
        const readable = members.every((m, i) => (i === 0 ? m.offset === 0 : m.offset >= members[i - 1]!.offset + members[i - 1]!.storedSize));
        if (!readable) {
          expect(() => b.add(entry)).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG }));
          return;
        }
        b.add(entry);
        const tree = b.finish();
        const leaf = decodePage(pages.get(tree.rootPage)!, tree.rootPage, 'idx');
        expect(leaf.type === 'leaf' && leaf.entries).toEqual([entry]);
      }),
    );
  });

  it('refuses a snapshot that does not hold together, and one taken at another page size', () => {
    const b = new BTreeBuilder(1024, () => {});
    for (let i = 0; i < 100; i++) b.add(entryFor(`k${String(i).padStart(3, '0')}`, i));
    const good = b.snapshot();
    const sink = (): void => {};
    expect(() => BTreeBuilder.resume(4096, sink, good)).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG }));
    for (const bad of [{ ...good, nextPageNo: -1 }, { ...good, levels: [{ ...good.levels[0]!, pageNo: 10 ** 6 }] }, { ...good, levels: [{ ...good.levels[0]!, records: 'A'.repeat(5000) }] }, { ...good, firstLeaf: 0.5 }, { ...good, entryCount: 'x' }]) {
      expect(() => BTreeBuilder.resume(1024, sink, bad as never)).toThrow(/checkpoint to resume from is damaged/);
    }
  });
});

/** The entry of leaf record `slot` rebuilt from the leaf's columns alone. */
function fromColumns(leaf: LeafPage, slot: number): IndexEntry {
  const r = slot * RECORD_COLUMNS;
  const members: MemberEntry[] = [];
  if (leaf.rows[r + RecordColumn.loneCrc32c]! >= 0) {
    // a lone member (one, uncompressed, filling the span) has no member row: its row holds it
    expect(leaf.rows[r + RecordColumn.firstMember]).toBe(-1);
    const length = leaf.rows[r + RecordColumn.length]!;
    members.push({ ext: leaf.exts[leaf.rows[r + RecordColumn.loneExt]!]!, offset: 0, size: length, storedSize: length, codec: 0, crc32c: leaf.rows[r + RecordColumn.loneCrc32c]! });
    return { key: leaf.keys[slot]!, shard: leaf.rows[r + RecordColumn.shard]!, offset: leaf.rows[r + RecordColumn.offset]!, length, members };
  }
  const first = leaf.rows[r + RecordColumn.firstMember]!;
  for (let m = first; m < first + leaf.rows[r + RecordColumn.memberCount]!; m++) {
    const q = m * MEMBER_COLUMNS;
    const c = leaf.memberRows;
    members.push({ ext: leaf.exts[c[q + MemberColumn.ext]!]!, offset: c[q + MemberColumn.offset]!, size: c[q + MemberColumn.size]!, storedSize: c[q + MemberColumn.storedSize]!, codec: c[q + MemberColumn.codec] as 0 | 1, crc32c: c[q + MemberColumn.crc32c]! });
  }
  return { key: leaf.keys[slot]!, shard: leaf.rows[r + RecordColumn.shard]!, offset: leaf.rows[r + RecordColumn.offset]!, length: leaf.rows[r + RecordColumn.length]!, members };
}
