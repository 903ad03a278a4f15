/**
 * pageCacheBytes bounds the decoded index pages a dataset holds, by the page cache's accounting (page-cost.ts), and
 * changes nothing but speed: every lookup (by key, by position, sync and async, ranges) answers what a dataset whose
 * cache holds the whole index answers, whatever the budget.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { compareKeys } from '../../formats/key-order.js';
import { checkKeyAndExts } from '../../formats/sample-layout.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import { decodedPageBytes } from '../../src/read/page-cost.js';
import { tmpDir } from '../helpers/tmp.js';

const PAGE_SIZE = 1024;
const WHOLE = 1 << 30;

/** Keys the writer takes (checkKeyAndExts), ASCII and not: shared prefixes, and any characters. */
const keyArb = fc
  .oneof(fc.stringMatching(/^[a-z]{1,3}\/[0-9]{1,6}$/), fc.string({ minLength: 1, maxLength: 30 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }))
  .filter((key) => {
    try {
      checkKeyAndExts(key, ['bin']);
      return true;
    } catch {
      return false;
    }
  });

/** A dataset of `keys` (sorted, unique), tiny members of one or two extensions, 1 KiB index pages, the packed layout (any key). */
async function writeDataset(keys: string[]): Promise<string> {
  const dir = tmpDir();
  const w = new DatasetWriter({ dir, layout: 'packed', pageSize: PAGE_SIZE, shardBytes: 32 * 1024 });
  keys.forEach((key, i) => w.add({ key, members: i % 4 === 0 ? { jpg: Uint8Array.of(i & 255, 1), cls: Uint8Array.of(i % 7) } : { bin: new Uint8Array(1 + (i % 5)).fill(i & 255) } }));
  await w.finish();
  return dir;
}

const open: Dataset[] = [];
afterAll(async () => {
  for (const ds of open.splice(0)) await ds.close();
});

/** What the page cache of `ds` holds, checked against its budget. */
function expectWithinBudget(ds: Dataset, budget: number): void {
  const { bytes, pages } = ds.stats().pageCache;
  expect(bytes).toBeLessThanOrEqual(budget);
  if (budget === 0) expect(pages).toBe(0);
}

describe('pageCacheBytes (property)', () => {
  it('never lets the cache hold more than the budget by its accounting, and lookups answer the same whatever the budget', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(keyArb, { minLength: 1, maxLength: 1500 }),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400_000 }), fc.constant(PAGE_SIZE)),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom('getSync', 'atSync', 'get', 'at', 'hasSync', 'absent', 'range')), { minLength: 1, maxLength: 200 }),
        async (raw, budget, ops) => {
          const keys = [...raw].sort(compareKeys);
          const dir = await writeDataset(keys);
          const ds = await openDataset(dir, { pageCacheBytes: budget });
          const whole = await openDataset(dir, { pageCacheBytes: WHOLE });
          open.push(ds, whole);
          for (const [n, op] of ops) {
            const i = n % keys.length;
            const key = keys[i] as string;
            if (op === 'getSync') expect(ds.getSync(key)).toEqual(whole.getSync(key));
            else if (op === 'atSync') expect(ds.atSync(i)).toEqual(whole.atSync(i));
            else if (op === 'get') expect(await ds.get(key)).toEqual(await whole.get(key));
            else if (op === 'at') expect(await ds.at(i)).toEqual(await whole.at(i));
            else if (op === 'hasSync') expect(ds.hasSync(key)).toBe(true);
            else if (op === 'absent') expect(ds.hasSync(`${key}\u0000`)).toBe(false);
            else {
              const got = [];
              for await (const e of ds.entries({ start: key, limit: 40 })) got.push(e);
              const want = [];
              for await (const e of whole.entries({ start: key, limit: 40 })) want.push(e);
              expect(got).toEqual(want);
            }
            expectWithinBudget(ds, budget);
          }
          await ds.close();
          await whole.close();
          open.splice(0);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('is not vacuous: a budget of one page of bytes holds no decoded page, one of the costliest decoded page a few at most', async () => {
    const keys = Array.from({ length: 3000 }, (_, i) => `s/${String(i).padStart(5, '0')}`);
    const dir = await writeDataset(keys);
    const whole = await openDataset(dir, { pageCacheBytes: WHOLE });
    for (let i = 0; i < keys.length; i++) whole.atSync(i);
    const { pages: wholePages, bytes: wholeBytes } = whole.stats().pageCache;
    expect(wholePages).toBe(whole.index.header.pageCount - 1); // every page but the header, decoded and kept
    expect(wholeBytes).toBeGreaterThan(wholePages * PAGE_SIZE * 4); // a decoded page takes several times its bytes
    // each page's cost as the cache counts it
    const costs: number[] = [];
    for (let p = 1; p < whole.index.header.pageCount; p++) {
      const page = whole.index.cache.get(p);
      if (page !== undefined) costs.push(decodedPageBytes(page));
    }
    const cheapest = Math.min(...costs);
    const costliest = Math.max(...costs);
    expect(cheapest).toBeGreaterThan(PAGE_SIZE);
    const most = (budget: number) => Math.floor(budget / cheapest);
    expect(most(costliest)).toBeLessThan(wholePages / 10);

    for (const budget of [PAGE_SIZE, costliest, 2 * costliest]) {
      const ds = await openDataset(dir, { pageCacheBytes: budget });
      // random positions and keys (a stride prime to the count), then a scan
      for (let k = 0; k < keys.length; k++) {
        const i = (k * 1237) % keys.length;
        expect(ds.atSync(i).key).toBe(keys[i]);
        expect(ds.getSync(keys[(k * 2011) % keys.length] as string).key).toBe(keys[(k * 2011) % keys.length]);
        expect(ds.stats().pageCache.pages).toBeLessThanOrEqual(most(budget));
        expectWithinBudget(ds, budget);
      }
      let n = 0;
      for await (const e of ds.entries()) expect(e.key).toBe(keys[n++]);
      expect(n).toBe(keys.length);
      expect(ds.stats().pageCache.pages).toBeLessThanOrEqual(most(budget));
      expect(ds.stats().pageCache.pages).toBeGreaterThanOrEqual(budget === PAGE_SIZE ? 0 : 1); // a leaf's cost fits it
      await ds.close();
    }
    await whole.close();
  });
});
