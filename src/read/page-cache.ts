/**
 * A bounded cache of decoded index pages with two generations: hits in the young generation cost one Map lookup
 * (no reordering on the hot path); hits in the old one are promoted; when the young generation fills, it becomes
 * the old one and the old one is dropped. Recently used pages (root, upper branches) always survive a turnover.
 */
import type { Page } from '../../formats/index-page.js';

export class PageCache {
  private young = new Map<number, Page>();
  private old = new Map<number, Page>();
  private readonly generation: number;
  hits = 0;
  misses = 0;

  constructor(readonly capacity: number) {
    this.generation = Math.max(1, Math.floor(capacity / 2));
  }

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
    this.old.delete(pageNo);
    this.set(pageNo, page);
    return page;
  }

  /** Whether the page is cached (no counter moves, no promotion). */
  has(pageNo: number): boolean {
    return this.young.has(pageNo) || this.old.has(pageNo);
  }

  set(pageNo: number, page: Page): void {
    if (this.young.size >= this.generation) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(pageNo, page);
  }

  get size(): number {
    return this.young.size + this.old.size;
  }
}
