/**
 * A cache of decoded index pages bounded in bytes of memory (each page's cost is given by the caller: see
 * page-cost.ts), with two generations: pages are added to the young one, and hits there cost one Map lookup (no
 * reordering on the hot path); hits in the old one are promoted to the young one. When a page would take the cache
 * past its budget, the old generation's pages are dropped, earliest first, as many as needed; when the old one is
 * empty, the young one becomes the old one. Recently used pages (root, upper branches) are promoted on their next
 * use and survive; an index whose decoded pages fit the budget stays cached whole.
 *
 * Invariant: `bytes` (the sum of the cached pages' costs) never exceeds `budget`. A page that costs more than the
 * whole budget is not cached (it is decoded again when needed).
 */
import type { Page } from '../../formats/index-page.js';

export class PageCache {
  private young = new Map<number, Page>();
  private old = new Map<number, Page>();
  /** Each cached page's cost, as given to set() and grow(). */
  private readonly costs = new Map<number, number>();
  private youngBytes = 0;
  private oldBytes = 0;
  hits = 0;
  misses = 0;
  /** Whether the cache was ever full: a page dropped to make room, or one refused for its size. */
  full = false;

  constructor(readonly budget: number) {}

  get(pageNo: number): Page | undefined {
    let page = this.young.get(pageNo);
    if (page !== undefined) {
      this.hits++;
      return page;
    }
    page = this.old.get(pageNo);
    if (page === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    const cost = this.costs.get(pageNo) as number;
    this.old.delete(pageNo); // promoted: its bytes move from one generation to the other
    this.oldBytes -= cost;
    this.young.set(pageNo, page);
    this.youngBytes += cost;
    return page;
  }

  /** Whether the page is cached (no counter moves, no promotion). */
  has(pageNo: number): boolean {
    return this.young.has(pageNo) || this.old.has(pageNo);
  }

  /** Caches `page`, which takes `cost` bytes of memory; false (not cached) when it alone takes more than the budget. */
  set(pageNo: number, page: Page, cost: number): boolean {
    if (this.has(pageNo)) this.remove(pageNo);
    if (cost > this.budget) {
      this.full = true;
      return false;
    }
    while (this.youngBytes + this.oldBytes + cost > this.budget) this.dropOne();
    this.young.set(pageNo, page);
    this.costs.set(pageNo, cost);
    this.youngBytes += cost;
    return true;
  }

  /**
   * The cached `page` now takes `bytes` more (a key table built on it): counted, and room made for it as set() makes
   * room (the page is dropped when it alone takes more than the budget). No-op unless `page` is the one cached.
   */
  grow(pageNo: number, page: Page, bytes: number): void {
    const cost = this.costs.get(pageNo);
    if (cost === undefined || (this.young.get(pageNo) ?? this.old.get(pageNo)) !== page) return;
    this.remove(pageNo);
    this.set(pageNo, page, cost + bytes);
  }

  /** Drops the old generation's earliest page; the young generation becomes the old one first when that is empty. */
  private dropOne(): void {
    if (this.old.size === 0) {
      this.old = this.young;
      this.oldBytes = this.youngBytes;
      this.young = new Map();
      this.youngBytes = 0;
    }
    const pageNo = this.old.keys().next().value as number;
    this.remove(pageNo);
    this.full = true;
  }

  private remove(pageNo: number): void {
    const cost = this.costs.get(pageNo) as number;
    this.costs.delete(pageNo);
    if (this.young.delete(pageNo)) this.youngBytes -= cost;
    else if (this.old.delete(pageNo)) this.oldBytes -= cost;
  }

  /** Pages cached. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** Bytes of memory the cached pages take, by their costs: at most `budget`. */
  get bytes(): number {
    return this.youngBytes + this.oldBytes;
  }
}
