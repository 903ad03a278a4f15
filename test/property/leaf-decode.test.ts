import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf8Bytes } from '../../formats/bytes.js';
import { Codec, type IndexEntry, type MemberEntry } from '../../formats/index-entry.js';
import {
  LeafRecordEncoder,
  PAGE_HEADER_BYTES,
  PageType,
  RECORD_COLUMNS,
  RecordColumn,
  decodePage,
  decodePageTo,
  sealPage,
  type LeafPage,
  type LeafStop,
} from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { referenceLeaf } from '../helpers/leaf-reference.js';

const PAGE_SIZE = 4096;

/** Keys: ASCII paths with shared prefixes, any Unicode (astral too), lone surrogates (not UTF-8: dropped). */
const keyArb = fc.oneof(
  fc.tuple(fc.constantFrom('train/', 'train/n01/', 'val/', 'é/', ''), fc.string({ minLength: 1, maxLength: 12 })).map(([a, b]) => a + b),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 6 }),
);
const memberArb = fc.record({
  ext: fc.constantFrom('jpg', 'cls', 'seg.png', '__proto__', 'é', 'json'),
  gap: fc.oneof(fc.constant(0), fc.nat(1024)),
  size: fc.nat(100_000),
  lz4: fc.boolean(),
  crc32c: fc.nat(0xffffffff),
});
const recordArb = fc.record({ shard: fc.nat(3), gap: fc.oneof(fc.constant(0), fc.constant(-1), fc.nat(5000)), members: fc.array(memberArb, { minLength: 1, maxLength: 3 }) });

/** What `recordArb` draws. */
type RecordDraw = typeof recordArb extends fc.Arbitrary<infer T> ? T : never;

/** Entries for sorted unique `keys`, each record's span after the previous one's (or anywhere with gap -1). */
function entriesFor(keys: string[], records: RecordDraw[]): IndexEntry[] {
  let end = 0;
  return keys.map((key, i) => {
    const rec = records[i % records.length]!;
    let at = 0;
    const members: MemberEntry[] = rec.members.map((m, j) => {
      const offset = j === 0 ? 0 : at + m.gap;
      const storedSize = m.lz4 ? Math.max(1, m.size >> 1) : m.size;
      at = offset + storedSize;
      return { ext: m.ext, offset, size: m.size, storedSize, codec: m.lz4 ? Codec.lz4 : Codec.none, crc32c: m.crc32c };
    });
    const offset = rec.gap < 0 ? (i * 7919) % 100_000 : end + rec.gap;
    end = offset + at;
    return { key, shard: rec.shard, offset, length: at, members };
  });
}

/** The records of `entries` that fit one page, sealed into it; returns the page and how many went in. */
function leafPage(entries: IndexEntry[]): { page: Uint8Array; count: number } {
  const page = new Uint8Array(PAGE_SIZE);
  const enc = new LeafRecordEncoder();
  let at = PAGE_HEADER_BYTES;
  let count = 0;
  for (const e of entries) {
    const rec = enc.encode(e, utf8Bytes(e.key));
    if (at + rec.length > PAGE_SIZE || count === 0xffff) break;
    page.set(rec, at);
    at += rec.length;
    count++;
  }
  sealPage(page, PageType.leaf, count, 1, 0);
  return { page, count };
}

/**
 * A leaf of well-formed sorted keys whose bytes are then damaged (up to 4 bytes set) and sealed again with a good
 * checksum, sometimes claiming another record count; `claimed` is the count its header gives.
 */
const damagedLeafArb = fc
  .tuple(
    fc.uniqueArray(keyArb, { minLength: 1, maxLength: 60 }).map((raw) => raw.filter((k) => k.isWellFormed()).sort(compareKeys)),
    fc.array(recordArb, { minLength: 1, maxLength: 6 }),
    fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 4 }),
    fc.nat(0xffff),
  )
  .filter(([keys]) => keys.length > 0)
  .map(([keys, records, flips, countDelta]) => {
    const { page, count } = leafPage(entriesFor(keys, records));
    const end = page.findLastIndex((b) => b !== 0) + 1;
    for (const [at, value] of flips) page[PAGE_HEADER_BYTES + (at % Math.max(1, end - PAGE_HEADER_BYTES + 4))] = value;
    const claimed = countDelta % 4 === 0 ? (count + (countDelta >> 2)) % 0x10000 || 1 : count;
    sealPage(page, PageType.leaf, claimed, 1, 0);
    return { page, claimed };
  });

/** decodePage's result on a leaf, or its error, in the terms the reference decoder gives. */
function outcome(page: Uint8Array): unknown {
  try {
    const leaf = decodePage(page, 1, 'idx') as LeafPage;
    const lone = Array.from({ length: leaf.keys.length }, (_, i) => leaf.rows[i * RECORD_COLUMNS + RecordColumn.loneCrc32c]);
    const loneExt = Array.from({ length: leaf.keys.length }, (_, i) => leaf.rows[i * RECORD_COLUMNS + RecordColumn.loneExt]);
    // a lone member's extension is in its row too, and names the same extension as its member row
    loneExt.forEach((ext, i) => {
      if (ext !== -1) expect(leaf.exts[ext!]).toBe(leaf.entries[i]!.members[0]!.ext);
    });
    return { keys: leaf.keys, simple: leaf.simple, entries: leaf.entries, loneCrc32c: lone };
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return { code: e.code, message: e.message };
  }
}

function referenceOutcome(page: Uint8Array): unknown {
  try {
    return referenceLeaf(page, 'idx');
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return { code: e.code, message: e.message };
  }
}

describe('leaf decoding into columns (formats/leaf-decode.ts)', () => {
  it('gives what the record-by-record decoder gives on any valid leaf: keys, entries, lone columns', () => {
    fc.assert(
      fc.property(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 300 }), fc.array(recordArb, { minLength: 1, maxLength: 20 }), (raw, records) => {
        const keys = raw.filter((k) => k.isWellFormed()).sort(compareKeys);
        fc.pre(keys.length > 0);
        const { page, count } = leafPage(entriesFor(keys, records));
        const got = outcome(page) as { keys: string[] };
        expect(got).toEqual(referenceLeaf(page, 'idx'));
        expect(got.keys).toEqual(keys.slice(0, count));
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same error, word for word, or the same result on a damaged leaf with a good checksum', () => {
    fc.assert(
      fc.property(damagedLeafArb, ({ page }) => {
        expect(outcome(page)).toEqual(referenceOutcome(page));
      }),
      { numRuns: 1500 },
    );
  });

  it('checks a key whose shared prefix ends inside a UTF-8 sequence, and keys after a non-ASCII one', () => {
    const m = { ext: 'txt', offset: 0, size: 1, storedSize: 1, codec: Codec.none, crc32c: 5 } as const;
    const entry = (key: string, i: number): IndexEntry => ({ key, shard: 0, offset: i, length: 1, members: [{ ...m }] });
    // 'aé' then 'aéb', 'b', 'bc': ASCII keys after a non-ASCII one, all decoded
    const { page } = leafPage(['aé', 'aéb', 'b', 'bc'].map(entry));
    expect(outcome(page)).toEqual(referenceLeaf(page, 'idx'));
    expect((outcome(page) as { keys: string[] }).keys).toEqual(['aé', 'aéb', 'b', 'bc']);
    // record 1 shares 2 bytes of 'aé' (61 c3 a9): 'a' + the first byte of 'é', then an ASCII suffix 'z'
    const bytes = page.slice();
    const records = Buffer.from(bytes.subarray(PAGE_HEADER_BYTES));
    const second = records.indexOf(Buffer.from([0x03, 0x01, 0x62])); // shared 3, suffix 1 'b'
    expect(second).toBeGreaterThan(0);
    bytes[PAGE_HEADER_BYTES + second] = 0x02;
    bytes[PAGE_HEADER_BYTES + second + 2] = 0x7a;
    sealPage(bytes, PageType.leaf, 4, 1, 0);
    expect(outcome(bytes)).toEqual({ code: 'SHARDKIT_ERR_CORRUPT_INDEX', message: 'idx: page 1: record 1 has a key that is not UTF-8' });
    expect(referenceOutcome(bytes)).toEqual(outcome(bytes));
  });
});

/** decodePageTo's answer in the reference's terms: the record it stopped at (its index, key and entry), or its error. */
function toOutcome(page: Uint8Array, stop: LeafStop): unknown {
  try {
    const got = decodePageTo(page, 1, 'idx', stop);
    if ('index' in got) {
      const { leaf } = got;
      expect(leaf.keys).toHaveLength(1);
      expect(leaf.entries).toHaveLength(1);
      const lone = leaf.rows[RecordColumn.loneCrc32c];
      if (leaf.rows[RecordColumn.loneExt] !== -1) expect(leaf.exts[leaf.rows[RecordColumn.loneExt]!]).toBe(leaf.entries[0]!.members[0]!.ext);
      return { whole: false, index: got.index, count: got.count, entry: leaf.entries[0], loneCrc32c: lone };
    }
    const leaf = got as LeafPage;
    return { whole: true, index: leaf.keys.length - 1, count: leaf.keys.length, entry: leaf.entries[leaf.keys.length - 1], loneCrc32c: leaf.rows[(leaf.keys.length - 1) * RECORD_COLUMNS + RecordColumn.loneCrc32c] };
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return { code: e.code, message: e.message };
  }
}

/** The reference decoder's records up to the one `stop` names, in toOutcome's terms (or its error). */
function referenceToOutcome(page: Uint8Array, stop: LeafStop, count: number): unknown {
  const last = Math.min(stop.slot < 0 ? count - 1 : stop.slot, count - 1);
  try {
    const ref = referenceLeaf(page, 'idx', (entry, i) => i === last || (stop.key !== undefined && compareKeys(entry.key, stop.key) >= 0));
    const index = ref.entries.length - 1;
    return { whole: ref.entries.length === count, index, count, entry: ref.entries[index], loneCrc32c: ref.loneCrc32c[index] };
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return { code: e.code, message: e.message };
  }
}

describe('decoding a leaf up to one record (decodePageTo, decode-to-slot)', () => {
  it('gives the record a whole decode gives at a slot, or at the first key >= a sought key, and every record of a page it decodes to its end', () => {
    fc.assert(
      fc.property(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 300 }), fc.array(recordArb, { minLength: 1, maxLength: 20 }), fc.nat(), keyArb, fc.boolean(), (raw, records, at, sought, byKey) => {
        const keys = raw.filter((k) => k.isWellFormed()).sort(compareKeys);
        fc.pre(keys.length > 0 && sought.isWellFormed());
        const { page, count } = leafPage(entriesFor(keys, records));
        const whole = decodePage(page, 1, 'idx') as LeafPage;
        // by key: a key of the page half the time, else any key (between two, before the first, after the last)
        const key = at % 2 === 0 ? (keys[at % count] as string) : sought;
        const stop: LeafStop = byKey ? { slot: -1, key } : { slot: at % count, key: undefined };
        let want = stop.slot;
        if (byKey) {
          want = keys.slice(0, count).findIndex((k) => compareKeys(k, key) >= 0);
          if (want < 0) want = count - 1;
        }
        const got = decodePageTo(page, 1, 'idx', stop);
        if (want === count - 1) {
          expect('index' in got).toBe(false);
          expect((got as LeafPage).entries).toEqual(whole.entries);
          expect((got as LeafPage).keys).toEqual(whole.keys);
        } else {
          expect(toOutcome(page, stop)).toEqual({ whole: false, index: want, count, entry: whole.entries[want], loneCrc32c: whole.rows[want * RECORD_COLUMNS + RecordColumn.loneCrc32c] });
        }
      }),
      { numRuns: 400 },
    );
  });

  it('on a damaged leaf with a good checksum, gives the error the reference decoder meets first up to that record, word for word, or its record', () => {
    fc.assert(
      fc.property(
        damagedLeafArb,
        fc.nat(),
        fc.option(keyArb, { nil: undefined }),
        ({ page, claimed }, at, key) => {
          fc.pre(key === undefined || key.isWellFormed());
          const stop: LeafStop = key === undefined ? { slot: at % claimed, key: undefined } : { slot: -1, key };
          const got = toOutcome(page, stop);
          expect(got).toEqual(referenceToOutcome(page, stop, claimed));
          // an error met up to the record is the one a whole decode meets first
          if ((got as { code?: string }).code !== undefined) expect(outcome(page)).toEqual(got);
        },
      ),
      { numRuns: 1500 },
    );
  });
});
