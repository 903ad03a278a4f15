/**
 * verify's per-sample loop in C (src/native/verify-scan.c) against the JavaScript it replaces (leaf-scan.ts
 * LeafScan.scanJs, lone-run.ts takeLoneRunJs): on random leaves and random shard chunks, intact and damaged, the two
 * take the same pages and read the same records, and stop at the same record with the same counts. Hostile
 * arguments are refused or declined, never read past. Skipped when the addon is not built (verify then runs the
 * JavaScript loops, which every other verify test exercises).
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32cReference } from '../../formats/checksum.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import { PAGE_CRC, PAGE_HEADER_BYTES, pageChecksum } from '../../formats/index-page.js';
import { compareKeys } from '../../formats/key-order.js';
import { LeafScanOut, MemberRow, RecordArrays, TakeLonesIo, nativeAddon, nativeAvailable, type NativeAddon } from '../../src/native/native.js';
import { LeafScan } from '../../src/verify/leaf-scan.js';
import { takeLoneRunJs } from '../../src/verify/lone-run.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { tmpDir } from '../helpers/tmp.js';
import { layMembers, leafPages, roomFor, sealedLeaf } from '../helpers/leaf-pages.js';

/** Keys that mostly pass the writer's rules (class folders, like an image set), some that do not, some not ASCII. */
const keyArb = fc.oneof(
  { weight: 40, arbitrary: fc.tuple(fc.nat(30), fc.nat(99_999)).map(([c, i]) => `train/c${c}/${String(i).padStart(5, '0')}`) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom('a', 'b', '.', '/', '\\', '\0', 'z'), minLength: 1, maxLength: 8 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }) },
);
const extArb = fc.oneof({ weight: 60, arbitrary: fc.constantFrom('bin', 'jpg', 'seg.png', 'cls') }, { weight: 1, arbitrary: fc.constantFrom('', 'é', 'a/b', 'a\\b', 'x'.repeat(40)) });
/** Sizes: tiny mostly, sometimes large (the varints' longer forms), up to 2^40. */
const sizeArb = fc.oneof({ weight: 8, arbitrary: fc.nat(200) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 ** 40 }) });
const memberArb = fc.tuple(extArb, sizeArb, fc.boolean(), fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(9) }));
/** Offsets: one shard from 0, or far into a shard (2^44..2^51: doubles whose sums must round as in JavaScript). */
const startArb = fc.oneof(fc.constant(0), fc.integer({ min: 2 ** 44, max: 2 ** 51 }));

const entriesArb = fc
  .tuple(
    fc.uniqueArray(keyArb, { minLength: 1, maxLength: 400 }),
    fc.array(fc.tuple(fc.oneof({ weight: 5, arbitrary: fc.array(memberArb, { minLength: 1, maxLength: 18 }) }, { weight: 1, arbitrary: fc.array(memberArb, { minLength: 60, maxLength: 70 }) }, { weight: 1, arbitrary: fc.array(memberArb, { minLength: 250, maxLength: 260 }) }), fc.nat(12)), { minLength: 1, maxLength: 4 }),
    startArb,
  )
  .map(([raw, shapes, start]) => {
    let shard = 0;
    let end = start;
    return [...new Set(raw)].sort(compareKeys).map((key, i): IndexEntry => {
      const [shape, jump] = shapes[i % shapes.length]!;
      if (jump === 0) shard++;
      // contiguous mostly; a gap forward, or (within a shard) a step back
      const offset = jump === 0 ? start : jump <= 8 ? end : jump <= 10 ? end + jump * 11 : Math.max(0, end - 7 * jump);
      const { members, length } = layMembers(shape, i);
      end = offset + length;
      return { key, shard, offset, length, members };
    });
  });


/** The record arrays in one Float64Array, as verifyTakeLones reads them (native.ts RecordArrays). */
function recordBlock(r: Run['records']): Float64Array {
  const n = r.count;
  const block = new Float64Array(RecordArrays.COUNT * n);
  block.set(r.shard, RecordArrays.SHARD * n);
  block.set(r.offset, RecordArrays.OFFSET * n);
  block.set(r.length, RecordArrays.LENGTH * n);
  block.set(r.loneCrc, RecordArrays.LONE_CRC * n);
  return block;
}

/** Everything a scan read: equal for the two scans when both took the page. */
function readOf(s: LeafScan): unknown {
  const n = s.count;
  const slice = (a: Float64Array | Uint32Array): number[] => Array.from(a.subarray(0, n));
  return {
    count: n,
    next: s.next,
    totals: [s.totalMembers, s.totalLength, s.totalSize, s.totalStored],
    oneShard: s.oneShard,
    maxEnd: s.maxEnd,
    keys: [s.firstKey, s.lastKey],
    records: [slice(s.shard), slice(s.offset), slice(s.length), slice(s.members), slice(s.size), slice(s.stored), slice(s.loneCrc)],
    // names and member rows: written only when the scan lists names
    ...(s.names.length === 0 ? {} : namesOf(s)),
  };
}

function namesOf(s: LeafScan): { names: unknown[]; memberRows: unknown[] } {
  const n = s.count;
  return {
    names: Array.from({ length: n }, (_, i) => (s.nameStart[i]! < 0 ? s.nameStart[i] : Buffer.from(s.names.subarray(s.nameStart[i], s.nameStart[i]! + s.nameLength[i]!)).toString('latin1'))),
    memberRows: Array.from({ length: n }, (_, i) => {
      const row = s.memberRow[i]!;
      if (row < 0) return row;
      return Array.from({ length: s.members[i]! }, (_, k) => {
        const t = Array.from(s.table.subarray((row + k) * MemberRow.COLUMNS, (row + k + 1) * MemberRow.COLUMNS));
        return [t[MemberRow.START], t[MemberRow.SIZE], t[MemberRow.CRC], Buffer.from(s.names.subarray(t[MemberRow.NAME_START], t[MemberRow.NAME_START]! + t[MemberRow.NAME_LENGTH]!)).toString('latin1')];
      });
    }),
  };
}

/**
 * Both scans over one page, with names listed and without: the same answer, and when taken, the same records (and
 * names, when listed). Returns whether they took it.
 */
function expectSameScan(addon: NativeAddon, page: Uint8Array, pageNo: number): boolean {
  let took = false;
  for (const names of [false, true]) {
    const js = new LeafScan(undefined, names);
    const native = new LeafScan(addon, names);
    took = js.scanJs(page, pageNo);
    expect(native.scanNative(page, pageNo)).toBe(took);
    if (took) expect(readOf(native)).toEqual(readOf(js));
  }
  return took;
}

/** Flips bytes inside the records, then makes the page checksum match again (else both refuse at the checksum). */
function damaged(clean: Uint8Array, flips: [number, number][], reseal: boolean): Uint8Array {
  const page = clean.slice();
  let used = page.length;
  while (used > PAGE_HEADER_BYTES + 1 && page[used - 1] === 0) used--;
  for (const [at, mask] of flips) page[PAGE_HEADER_BYTES + (at % (used - PAGE_HEADER_BYTES))]! ^= mask;
  if (reseal) new DataView(page.buffer).setUint32(PAGE_CRC, pageChecksum(page), true);
  return page;
}

interface Run {
  chunk: Uint8Array;
  records: { shard: Float64Array; offset: Float64Array; length: Float64Array; loneCrc: Float64Array; count: number };
  io: Float64Array;
}

/**
 * A shard chunk at `pos` and records over it: spans in offset order with their true CRC32C, then damaged: bytes
 * flipped, spans moved, shortened, sent to another shard, given no lone CRC or a wrong one, or made to cross the
 * chunk's end; the run starts at a random record with random earlier state.
 */
const runArb = fc
  .tuple(
    fc.integer({ min: -20, max: 60 }),
    fc.nat(),
    fc.oneof(fc.constant(0), fc.nat(1_000_000), fc.integer({ min: 2 ** 50, max: 2 ** 52 })),
    fc.array(fc.tuple(fc.nat(40), fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: -20, max: 20 }) })), { minLength: 1, maxLength: 80 }),
    fc.array(fc.tuple(fc.nat(), fc.constantFrom('flip', 'shard', 'crc', 'noCrc', 'length', 'offset', 'zero', 'past')), { maxLength: 4 }),
    fc.nat(),
    fc.constantFrom('fresh', 'after', 'after', 'ahead'),
  )
  .map(([extra, seed, pos, spans, harms, fromSeed, state]): Run => {
    // the chunk: about as long as the spans (a few bytes short of them, or some past them)
    const total = spans.reduce((t, [len, gap]) => t + Math.max(1, len) + Math.max(0, gap), 0);
    let x = seed;
    const chunk = Uint8Array.from({ length: Math.max(0, total + extra) }, () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24);
    const count = spans.length;
    const records = { shard: new Float64Array(count).fill(3), offset: new Float64Array(count), length: new Float64Array(count), loneCrc: new Float64Array(count), count };
    let at = pos;
    spans.forEach(([len, gap], i) => {
      const off = Math.max(pos, at + gap);
      const from = off - pos;
      records.offset[i] = off;
      records.length[i] = Math.max(1, len);
      const to = from + Math.max(1, len);
      records.loneCrc[i] = to <= chunk.length ? crc32cReference(chunk.subarray(from, to)) : 12345;
      at = off + Math.max(1, len);
    });
    for (const [k, harm] of harms) {
      const i = k % count;
      if (harm === 'flip' && chunk.length > 0) chunk[k % chunk.length]! ^= 1 + (k % 255);
      else if (harm === 'shard') records.shard[i] = 4;
      else if (harm === 'crc') records.loneCrc[i] = (records.loneCrc[i]! + 1) % 2 ** 32;
      else if (harm === 'noCrc') records.loneCrc[i] = -1;
      else if (harm === 'length') records.length[i] = Math.max(0, records.length[i]! - 1 - (k % 3));
      else if (harm === 'offset') records.offset[i] = records.offset[i]! - 1 - (k % 5);
      else if (harm === 'zero') records.length[i] = 0;
      else records.length[i] = chunk.length + 1;
    }
    const from = fromSeed % count;
    const io = new Float64Array(TakeLonesIo.LENGTH);
    io[TakeLonesIo.FROM] = from;
    io[TakeLonesIo.COUNT] = count;
    io[TakeLonesIo.SHARD] = 3;
    io[TakeLonesIo.POS] = pos;
    // the state before record `from`: a fresh check, the span before it ends where it starts, or past it
    const first = records.offset[from]!;
    io[TakeLonesIo.PREV_END] = state === 'fresh' ? 0 : state === 'after' ? first : first + 1;
    io[TakeLonesIo.LAST] = state === 'fresh' ? -1 : pos;
    return { chunk, records, io };
  });

describe.skipIf(!nativeAvailable())('native verify loop against the JavaScript one (property)', () => {
  const addon = nativeAddon() as NativeAddon;

  it('reads every intact leaf as the JavaScript scan does, and takes exactly the leaves it takes', () => {
    let taken = 0;
    let declined = 0;
    fc.assert(
      fc.property(entriesArb, fc.constantFrom(1024, 4096), (entries, pageSize) => {
        for (const [n, page] of leafPages(entries, roomFor(entries, pageSize))) {
          if (expectSameScan(addon, page, n)) taken++;
          else declined++;
          expect(expectSameScan(addon, page, n + 1)).toBe(false); // a page read from the wrong place
        }
      }),
      { numRuns: 150 },
    );
    // not vacuous: both kinds of leaf came up
    expect(taken).toBeGreaterThan(50);
    expect(declined).toBeGreaterThan(10);
  });

  it('on damaged leaves (checksum made to match, or not; truncated) gives the same answer and the same records', () => {
    let taken = 0;
    fc.assert(
      fc.property(
        entriesArb,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.nat(),
        (entries, flips, reseal, cut) => {
          for (const [n, clean] of leafPages(entries, roomFor(entries, 1024))) {
            if (expectSameScan(addon, damaged(clean, flips, reseal), n)) taken++;
            // a short read: the records run off the end of the bytes given
            const short = clean.slice(0, cut % (clean.length + 1));
            if (short.length >= PAGE_HEADER_BYTES) new DataView(short.buffer).setUint32(PAGE_CRC, pageChecksum(short), true);
            expectSameScan(addon, short, n);
          }
        },
      ),
      { numRuns: 600 },
    );
    // some damage leaves a leaf the scans take (a flipped size or CRC byte): those records must agree too
    expect(taken).toBeGreaterThan(20);
  });

  it('takes the same run of lone members from a shard chunk: the same first record left, end, last offset and bytes', () => {
    let tookSome = 0;
    let stoppedEarly = 0;
    fc.assert(
      fc.property(runArb, ({ chunk, records, io }) => {
        const js = io.slice();
        const native = io.slice();
        takeLoneRunJs(chunk, records, js);
        addon.verifyTakeLones(chunk, recordBlock(records), native);
        expect(Array.from(native)).toEqual(Array.from(js));
        if (js[TakeLonesIo.NEXT]! > io[TakeLonesIo.FROM]!) tookSome++;
        if (js[TakeLonesIo.NEXT]! < records.count) stoppedEarly++;
      }),
      { numRuns: 2000 },
    );
    expect(tookSome).toBeGreaterThan(200);
    expect(stoppedEarly).toBeGreaterThan(200);
  });

  it('declines, as the JavaScript scan does, leaves out of key order, with a key repeated, or a span not starting at its first member', () => {
    const page = (entries: IndexEntry[]): Uint8Array => sealedLeaf(entries);
    const entry = (key: string, gap: number): IndexEntry => ({ key, shard: 0, offset: 8 * gap, length: 4 + gap, members: [{ ext: 'bin', offset: gap, size: 4, storedSize: 4, codec: 0, crc32c: 1 }] });
    expect(expectSameScan(addon, page([entry('a/1', 0), entry('a/2', 0)]), 3)).toBe(true);
    for (const bad of [[entry('a/2', 0), entry('a/1', 0)], [entry('a/1', 0), entry('a/1', 0)], [entry('a/1', 0), entry('a/', 0)], [entry('a/1', 0), entry('a/2', 3)], [entry('a/1', 0), entry('a/1/..', 0)]]) {
      expect(expectSameScan(addon, page(bad), 3)).toBe(false);
    }
  });

  it('declines leaves it has no room for, and refuses arguments that are not what it reads, without reading past them', () => {
    const entries = Array.from({ length: 40 }, (_, i): IndexEntry => ({ key: `a/${String(i).padStart(3, '0')}`, shard: 0, offset: 8 * i, length: 8, members: [{ ext: 'bin', offset: 0, size: 8, storedSize: 8, codec: 0, crc32c: i }] }));
    const [[n, page]] = leafPages(entries, 1024) as [[number, Uint8Array]];
    const f = (k: number) => new Float64Array(k);
    const out = f(LeafScanOut.LENGTH);
    const none = new Uint8Array(0);
    const noRows = new Float64Array(0);
    const scanWith = (records: number, keyRoom: number, o = out): number => {
      o.fill(7);
      addon.verifyLeafScan(page, n, f(RecordArrays.COUNT * records), new Uint8Array(keyRoom), new Uint8Array(keyRoom), o, none, noRows);
      return o[LeafScanOut.COUNT]!;
    };
    expect(scanWith(40, 1024)).toBe(40);
    expect(scanWith(39, 1024)).toBe(0); // arrays one record short
    out.fill(7);
    addon.verifyLeafScan(page, n, f(RecordArrays.COUNT * 40 - 1), new Uint8Array(1024), new Uint8Array(1024), out, none, noRows);
    expect(out[LeafScanOut.COUNT]).toBe(0); // one number short: room for 39 records
    expect(scanWith(40, 4)).toBe(0); // no room for a key
    // names: as many as fit in the view given, the rest -1, nothing written past it; NAMES_WANTED says what all need
    const records = f(RecordArrays.COUNT * 40);
    const backing = new Uint8Array(64).fill(0xee);
    addon.verifyLeafScan(page, n, records, new Uint8Array(1024), new Uint8Array(1024), out, backing.subarray(0, 20), noRows);
    expect(out[LeafScanOut.COUNT]).toBe(40);
    expect(out[LeafScanOut.NAMES_WANTED]).toBe(40 * 'a/000.bin'.length);
    const starts = records.subarray(RecordArrays.NAME_START * 40, RecordArrays.NAME_START * 40 + 40);
    expect(Array.from(starts.subarray(0, 3))).toEqual([0, 9, -1]); // two names of 9 bytes fit in 20
    expect(Array.from(starts.subarray(2)).every((x) => x === -1)).toBe(true);
    expect(Buffer.from(backing.subarray(0, 18)).toString('latin1')).toBe('a/000.bina/001.bin');
    expect(Array.from(backing.subarray(18)).every((b) => b === 0xee)).toBe(true);
    const refused = expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' });
    expect(() => scanWith(40, 1024, f(LeafScanOut.LENGTH - 1))).toThrow(refused);
    expect(() => addon.verifyLeafScan(page, n, new Uint32Array(RecordArrays.COUNT * 40) as never, new Uint8Array(9), new Uint8Array(9), out)).toThrow(refused);
    expect(() => addon.verifyLeafScan(page, n, records, new Uint8Array(9), new Uint8Array(9), out, new Uint16Array(9) as never, noRows)).toThrow(refused);
    expect(() => addon.verifyLeafScan(page, n, records, new Uint8Array(9), new Uint8Array(9), out, none, new Uint8Array(8) as never)).toThrow(refused);
    // member rows: a record of two stored members gets rows while they fit in the table given, -1 after; none past it
    const pairs = Array.from({ length: 6 }, (_, i): IndexEntry => ({ key: `b/${i}`, shard: 0, offset: 100 * i, length: 20, members: [{ ext: 'jpg', offset: 0, size: 8, storedSize: 8, codec: 0, crc32c: i }, { ext: 'cls', offset: 12, size: 8, storedSize: 8, codec: 0, crc32c: 7 }] }));
    const [[pn, pairPage]] = leafPages(pairs, 1024) as [[number, Uint8Array]];
    const pairRecords = f(RecordArrays.COUNT * 6);
    const tableBacking = new Float64Array(8 * MemberRow.COLUMNS).fill(-7);
    addon.verifyLeafScan(pairPage, pn, pairRecords, new Uint8Array(1024), new Uint8Array(1024), out, new Uint8Array(1024), tableBacking.subarray(0, 5 * MemberRow.COLUMNS));
    expect(out[LeafScanOut.COUNT]).toBe(6);
    expect(Array.from(pairRecords.subarray(RecordArrays.MEMBER_ROW * 6, RecordArrays.MEMBER_ROW * 6 + 6))).toEqual([0, 2, -1, -1, -1, -1]); // 5 rows: two records
    expect(Array.from(tableBacking.subarray(0, 2 * MemberRow.COLUMNS))).toEqual([0, 8, 0, 0, 7, 12, 8, 7, 7, 7]);
    expect(Array.from(tableBacking.subarray(5 * MemberRow.COLUMNS)).every((x) => x === -7)).toBe(true);
    expect(() => (addon.verifyLeafScan as (...a: unknown[]) => void)(page, n)).toThrow(refused);

    const io = f(TakeLonesIo.LENGTH);
    const take = (from: number, count: number, records = 4): void => {
      io[TakeLonesIo.FROM] = from;
      io[TakeLonesIo.COUNT] = count;
      addon.verifyTakeLones(new Uint8Array(64), f(RecordArrays.COUNT * records), io);
    };
    take(0, 4);
    expect(io[TakeLonesIo.NEXT]).toBe(0); // zero-length spans: none taken
    // a NaN anywhere stops the run (the scan never gives one; JavaScript's comparisons would let it through)
    for (const [off, len] of [[Number.NaN, 1], [0, Number.NaN], [0.5, 1], [0, 1.5], [-1, 1], [2 ** 60, 1]] as const) {
      io.set([0, 1, 3, 0, 0, -1]);
      addon.verifyTakeLones(new Uint8Array(64), recordBlock({ shard: Float64Array.of(3), offset: Float64Array.of(off), length: Float64Array.of(len), loneCrc: Float64Array.of(0), count: 1 }), io);
      expect(io[TakeLonesIo.NEXT]).toBe(0);
    }
    expect(() => take(0, 5)).toThrow(refused); // records past the arrays
    expect(() => take(0, 4, 3)).toThrow(refused);
    // one number short of 4 records: 3 records' room
    expect(() => addon.verifyTakeLones(new Uint8Array(64), f(RecordArrays.COUNT * 4 - 1), io.fill(0).fill(4, TakeLonesIo.COUNT, TakeLonesIo.COUNT + 1))).toThrow(refused);
    expect(() => take(2, 1)).toThrow(refused);
    expect(() => take(0.5, 4)).toThrow(refused);
    expect(() => take(Number.NaN, 4)).toThrow(refused);
    expect(() => addon.verifyTakeLones(new Uint8Array(64), f(RecordArrays.COUNT * 4), f(TakeLonesIo.LENGTH - 1))).toThrow(refused);
    expect(() => (addon.verifyTakeLones as (...a: unknown[]) => void)(new Uint8Array(64), f(RecordArrays.COUNT * 4))).toThrow(refused);
  });

  it('verify reports the same with and without the addon: tiny samples over small chunks, bytes flipped anywhere', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, layout: 'packed', compress: 'none', shardBytes: 16 * 1024, pageSize: 1024 });
    for (let i = 0; i < 3000; i++) w.add({ key: `c${i % 7}/${String(i).padStart(5, '0')}`, members: { bin: Uint8Array.of(i & 0xff, i >> 8, 1, 2, 3, 4, 5, i % 3) } });
    await w.finish();
    const ds = await openDataset(dir);
    const shards = ds.index.shards.map((_, i) => path.join(dir, ds.shardName(i)));
    await ds.close();
    const clean = shards.map((f) => fs.readFileSync(f));
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 })), { maxLength: 5 }), fc.constantFrom(0, 100, 4096), async (flips, chunk) => {
          shards.forEach((f, s) => {
            const b = Buffer.from(clean[s]!);
            for (const [which, at, mask] of flips) if (which % shards.length === s) b[at % b.length]! ^= mask;
            fs.writeFileSync(f, b);
          });
          if (chunk > 0) process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES = String(chunk);
          const withAddon = await verifyDataset(dir);
          const without = await verifyDataset(dir, { native: false });
          delete process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES;
          expect(without).toEqual(withAddon);
          expect(withAddon.checked.samples).toBe(3000);
          expect(withAddon.ok).toBe(flips.length === 0);
        }),
        { numRuns: 25 },
      );
      await expect(verifyDataset(dir, { native: 'no' as never })).rejects.toThrow('Expected a boolean for native but received "no"');
    } finally {
      delete process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES;
    }
  });
});
