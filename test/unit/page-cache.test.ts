/**
 * PageCache: a budget in bytes of memory that its accounting never passes, whatever the pages' costs and the order
 * of gets, sets and growths; pages that fit are kept; promoted pages outlive those nobody asked for again.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Page } from '../../formats/index-page.js';
import { PageCache } from '../../src/read/page-cache.js';

/** A stand-in page (the cache keeps pages by identity and never looks inside). */
const pageOf = (pageNo: number): Page => ({ type: 'branch', pageNo, level: 1, simple: true, keys: [], children: new Uint32Array(0), starts: new Float64Array(1) });

type Op = { kind: 'set'; pageNo: number; cost: number } | { kind: 'get'; pageNo: number } | { kind: 'grow'; pageNo: number; bytes: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), pageNo: fc.integer({ min: 0, max: 40 }), cost: fc.integer({ min: 1, max: 5000 }) }),
  fc.record({ kind: fc.constant('get' as const), pageNo: fc.integer({ min: 0, max: 40 }) }),
  fc.record({ kind: fc.constant('grow' as const), pageNo: fc.integer({ min: 0, max: 40 }), bytes: fc.integer({ min: 0, max: 3000 }) }),
);

describe('PageCache', () => {
  it('never holds more than its budget by its accounting, and accounts exactly the pages it holds (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20_000 }), fc.array(opArb, { maxLength: 300 }), (budget, ops) => {
        const cache = new PageCache(budget);
        const pages = new Map<number, Page>(); // the page object each number was last set with
        const costs = new Map<number, number>(); // the model: what each cached page costs
        for (const op of ops) {
          if (op.kind === 'set') {
            const page = pageOf(op.pageNo);
            pages.set(op.pageNo, page);
            const kept = cache.set(op.pageNo, page, op.cost);
            expect(kept).toBe(op.cost <= budget);
            expect(cache.has(op.pageNo)).toBe(kept); // a page that fits is cached at once
            costs.set(op.pageNo, op.cost);
          } else if (op.kind === 'get') {
            const got = cache.get(op.pageNo);
            if (got !== undefined) expect(got).toBe(pages.get(op.pageNo));
          } else {
            const page = pages.get(op.pageNo);
            const cached = cache.has(op.pageNo);
            if (page !== undefined) cache.grow(op.pageNo, page, op.bytes);
            if (cached) costs.set(op.pageNo, (costs.get(op.pageNo) as number) + op.bytes);
            cache.grow(op.pageNo, pageOf(op.pageNo), 1_000_000); // another object of that number: not the one cached, no-op
          }
          expect(cache.bytes).toBeLessThanOrEqual(budget);
          let held = 0;
          let count = 0;
          for (const [pageNo, cost] of costs) {
            if (cache.has(pageNo)) {
              held += cost;
              count++;
            }
          }
          expect(cache.bytes).toBe(held);
          expect(cache.size).toBe(count);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps every page while their costs fit the budget, counting hits and misses', () => {
    const cache = new PageCache(10_000);
    for (let p = 0; p < 10; p++) expect(cache.set(p, pageOf(p), 1000)).toBe(true);
    expect(cache.bytes).toBe(10_000);
    for (let p = 0; p < 10; p++) expect(cache.get(p)?.pageNo).toBe(p);
    expect(cache.get(10)).toBeUndefined();
    expect([cache.hits, cache.misses, cache.full]).toEqual([10, 1, false]);
    cache.set(10, pageOf(10), 1); // one byte more: one page dropped, the earliest
    expect(cache.full).toBe(true);
    expect(cache.size).toBe(10);
    expect(cache.has(0)).toBe(false);
  });

  it('a budget of one page holds one page at most; a page costing more than the budget is not cached', () => {
    const cache = new PageCache(1000);
    for (let p = 0; p < 20; p++) {
      cache.set(p, pageOf(p), 600 + p);
      expect(cache.size).toBe(1);
      expect(cache.has(p)).toBe(true);
    }
    expect(cache.set(99, pageOf(99), 1001)).toBe(false);
    expect(cache.has(99)).toBe(false);
    expect(cache.bytes).toBe(619); // page 19 stays
    expect(cache.set(19, pageOf(19), 5000)).toBe(false); // a page set again is replaced, even when refused
    expect(cache.has(19)).toBe(false);
    expect(cache.bytes).toBe(0);
    const none = new PageCache(0);
    expect(none.set(1, pageOf(1), 1)).toBe(false);
    expect([none.size, none.bytes, none.full]).toEqual([0, 0, true]);
  });

  it('a page used again after the young generation turned over is promoted and outlives the pages nobody asked for', () => {
    const cache = new PageCache(4000);
    const root = pageOf(0);
    cache.set(0, root, 1000);
    for (let p = 1; p < 4; p++) cache.set(p, pageOf(p), 1000);
    // full: the next page turns the young generation over and drops page 0, the earliest; so use it first
    cache.set(4, pageOf(4), 1000); // drops 0 (the earliest of the old generation)
    expect(cache.has(0)).toBe(false);
    cache.set(0, root, 1000); // drops 1
    for (let p = 5; p < 40; p++) {
      expect(cache.get(0)).toBe(root); // the root, used by every descent
      cache.set(p, pageOf(p), 1000);
      expect(cache.has(0)).toBe(true);
      expect(cache.bytes).toBe(4000);
    }
    expect(cache.has(5)).toBe(false);
  });

  it('grow() counts a key table built on a cached page, and makes room for it as set() does', () => {
    const cache = new PageCache(3000);
    const a = pageOf(1);
    cache.set(1, a, 1000);
    cache.set(2, pageOf(2), 1000);
    cache.set(3, pageOf(3), 1000);
    cache.grow(3, pageOf(3), 500); // not the page object cached: ignored
    expect(cache.bytes).toBe(3000);
    cache.grow(1, a, 500); // page 1 moves to the young end; page 2, the earliest now, is dropped
    expect(cache.bytes).toBe(2500);
    expect([cache.has(1), cache.has(2), cache.has(3)]).toEqual([true, false, true]);
    cache.grow(1, a, 2000); // 3,500 alone: more than the budget, dropped
    expect(cache.has(1)).toBe(false);
    expect(cache.bytes).toBe(1000);
  });
});
