/**
 * Through the real writer and reader: arbitrary names and contents survive the tar, packed and LZ4 layouts, and
 * range scans (start, end, prefix, limit, reverse) agree with sort + filter over the same keys.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { compareKeys } from '../../formats/key-order.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset, type KeyRange } from '../../src/read/dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const segment = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).filter((s) => !/[/\\.\0]/.test(s));
const keyArb = fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
const extArb = fc.oneof(fc.constantFrom('jpg', 'cls', 'seg.png', 'json', '0', 'txt', '__proto__'), fc.string({ minLength: 1, maxLength: 8 }).filter((s) => !/[/\\\0]/.test(s)));
const contentArb = fc.oneof(fc.uint8Array({ maxLength: 700 }), fc.constantFrom(new Uint8Array(3000).fill(7), new TextEncoder().encode('ab'.repeat(900))));
const sampleArb = fc.record({ key: keyArb, members: fc.dictionary(extArb, contentArb, { minKeys: 1, maxKeys: 3 }) });

function unique<T extends { key: string }>(xs: T[]): T[] {
  const seen = new Map<string, T>();
  for (const x of xs) if (!seen.has(x.key)) seen.set(x.key, x);
  return [...seen.values()];
}

describe('dataset round trip (property)', () => {
  it('returns every member byte for byte in every layout', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(sampleArb, { minLength: 1, maxLength: 25 }), fc.constantFrom('tar', 'packed'), fc.constantFrom('none', 'lz4'), async (raw, layout, compress) => {
        const samples = unique(raw);
        const dir = tmpDir();
        const w = new DatasetWriter({ dir, layout, compress, shardBytes: 8 * 1024 });
        for (const s of samples) w.add(s); // arbitrary order: the writer sorts the index
        await w.finish();
        const same = (got: { members: Record<string, Uint8Array> }, s: (typeof samples)[number]): void => {
          expect(Object.keys(got.members).sort()).toEqual(Object.keys(s.members).sort());
          for (const [ext, bytes] of Object.entries(s.members)) {
            expect(Object.hasOwn(got.members, ext)).toBe(true);
            expect(Buffer.from(got.members[ext]!).equals(Buffer.from(bytes))).toBe(true);
          }
        };
        const byKey = [...samples].sort((a, b) => compareKeys(a.key, b.key));
        // the synchronous reads decode from the index leaves' columns: with the addon and without, verifying or not
        for (const options of [{}, { native: false }, { verify: false }]) {
          const ds = await openDataset(dir, options);
          try {
            expect(ds.size).toBe(samples.length);
            for (const s of samples) {
              same(await ds.get(s.key), s);
              same(ds.getSync(s.key), s);
              same(ds.getViewSync(s.key), s);
            }
            byKey.forEach((s, i) => {
              expect(ds.atSync(i).key).toBe(s.key);
              same(ds.atSync(i), s);
              same(ds.atViewSync(i), s);
            });
            // the loader's reads: coalesced runs, lone samples, whole-sample reads (maxReadBytes 0 reads each alone)
            for (const coalesce of [{}, { maxReadBytes: 0 }]) {
              const seen = new Set<string>();
              for await (const batch of ds.loader({ batchSize: 4, shuffle: 'full', seed: 3, ...coalesce })) {
                for (const got of batch) {
                  seen.add(got.key);
                  same(got, samples.find((s) => s.key === got.key)!);
                }
              }
              expect(seen.size).toBe(samples.length);
            }
          } finally {
            await ds.close();
          }
        }
      }),
      { numRuns: 40 },
    );
  });

  it('range scans agree with sort + filter', async () => {
    const keys = [...new Set(fc.sample(keyArb, { numRuns: 400, seed: 42 }))].sort(compareKeys);
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, layout: 'packed', pageSize: 1024 });
    for (const k of keys) w.add({ key: k, members: { b: new Uint8Array([1]) } });
    await w.finish();
    const ds = await openDataset(dir);
    const rangeArb = fc.record(
      {
        start: fc.oneof(fc.constantFrom(...keys), keyArb),
        end: fc.oneof(fc.constantFrom(...keys), keyArb),
        prefix: fc.oneof(fc.constantFrom(...keys).map((k) => k.slice(0, 1 + (k.length >> 1))), segment),
        limit: fc.integer({ min: 0, max: 50 }),
        reverse: fc.boolean(),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(rangeArb, async (range: KeyRange) => {
        let want = keys.filter(
          (k) =>
            (range.start === undefined || compareKeys(k, range.start) >= 0) &&
            (range.end === undefined || compareKeys(k, range.end) < 0) &&
            (range.prefix === undefined || k.startsWith(range.prefix)),
        );
        if (range.reverse) want = want.reverse();
        if (range.limit !== undefined) want = want.slice(0, range.limit);
        const got: string[] = [];
        for await (const k of ds.keys(range)) got.push(k);
        expect(got).toEqual(want);
      }),
      { numRuns: 300 },
    );
    // what the range and the lookups take is checked at the boundary, not read loosely (a limit of 1.5 gave 2 keys)
    const refused = [{ limit: 1.5 }, { limit: -1 }, { limit: 'abc' }, { limit: Number.NaN }, { start: 5 }, { prefix: 5 }, { end: null }, { reverse: 'yes' }];
    for (const range of refused) {
      await expect((async () => { for await (const _ of ds.keys(range as never)); })(), JSON.stringify(range)).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
    }
    for (const position of ['0', 1.5, Number.NaN]) {
      await expect(ds.at(position as never)).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
      expect(() => ds.atSync(position as never)).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG }));
    }
    await ds.at(0); // the last leaf read stays at hand: a string position must not slip through it
    expect(() => ds.atSync('0' as never)).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG }));
    for (const key of [5, undefined, null]) {
      await expect(ds.get(key as never)).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
      await expect(ds.has(key as never)).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
      expect(() => ds.getSync(key as never)).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG }));
    }
    await ds.close();
  });
});
