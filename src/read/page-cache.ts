/** A bounded LRU of decoded index pages (Map insertion order is the recency order). */
import type { Page } from '../../formats/index-page.js';

export class PageCache {
  private readonly pages = new Map<number, Page>();
  hits = 0;
  misses = 0;

  constructor(readonly capacity: number) {}

  get(pageNo: number): Page | undefined {
    const page = this.pages.get(pageNo);
    if (page === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    // move to most recent; the root and upper branches are touched by every lookup and stay
    this.pages.delete(pageNo);
    this.pages.set(pageNo, page);
    return page;
  }

  set(pageNo: number, page: Page): void {
    this.pages.set(pageNo, page);
    if (this.pages.size > this.capacity) {
      const oldest = this.pages.keys().next().value as number;
      this.pages.delete(oldest);
    }
  }

  get size(): number {
    return this.pages.size;
  }
}
