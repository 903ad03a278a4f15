import { describe, expect, it } from 'vitest';
import { addReader, GROW_WINDOWS, ReaderGrowth, type ReadingSeen } from '../../src/pack/source-threads.js';

const seen = (wallMs: number, cpuMs: number, blocks: number, samples: number): ReadingSeen => ({ wallMs, cpuMs, blocks, samples });

describe('auto reader threads (addReader)', () => {
  const start = seen(1000, 800, 5000, 10_000);

  it('keeps one reader for reads from the page cache, even when another thread slowed them', () => {
    // 20,000 samples in 100 ms of reads, 90 or 48 ms of it on the CPU, a few metadata blocks read
    expect(addReader(start, seen(1100, 890, 5040, 30_000))).toBe(false);
    expect(addReader(start, seen(1100, 848, 5000, 30_000))).toBe(false);
  });

  it('adds one when the reads came from storage: a block or more per sample, however busy the CPU', () => {
    // measured from an SSD: 768 samples, 7,488 blocks, CPU 55 % of the wall time
    expect(addReader(start, seen(1100, 855, 5000 + 7488, 10_768))).toBe(true);
    expect(addReader(start, seen(1100, 890, 5000 + 1000, 11_000))).toBe(true);
    expect(addReader(start, seen(1100, 890, 5000 + 999, 11_000))).toBe(false);
  });

  it('adds one when the reads waited (a network file system, whose reads no block count shows)', () => {
    expect(addReader(start, seen(1100, 829, 5000, 10_500))).toBe(true);
    expect(addReader(start, seen(1100, 830, 5000, 10_500))).toBe(false);
  });

  it('adds one when the reads were not measured (no telling: as many readers as allowed)', () => {
    expect(addReader(start, seen(1100, -1, 5000, 30_000))).toBe(true);
  });
});

describe('auto reader threads over successive windows (ReaderGrowth)', () => {
  /** Windows of 100 ms of reads, 20,000 samples each: from the page cache (90 ms CPU), waiting (20 ms), from storage. */
  const windows = (kinds: string) => {
    let at = seen(0, 0, 0, 0);
    return [...kinds].map((k) => {
      at = seen(at.wallMs + 100, at.cpuMs + (k === 'w' ? 20 : 90), at.blocks + (k === 's' ? 40_000 : 0), at.samples + 20_000);
      return at;
    });
  };
  const judged = (kinds: string, start = seen(0, 0, 0, 0)) => {
    const growth = new ReaderGrowth(start);
    return windows(kinds).map((w) => growth.judge(w));
  };

  it(`adds a reader after ${GROW_WINDOWS} windows in a row that call for one, not after a lone slow window`, () => {
    expect(GROW_WINDOWS).toBe(3);
    expect(judged('ccwcccwwcc')).toEqual(Array(10).fill(false));
    expect(judged('cwww')).toEqual([false, false, false, true]);
    expect(judged('sss')).toEqual([false, false, true]);
    expect(judged('wswcc')).toEqual([false, false, true, false, false]);
  });

  it('starts a new streak after adding one, and adds at once when the reads are not measured', () => {
    expect(judged('wwwwww')).toEqual([false, false, true, false, false, true]);
    const growth = new ReaderGrowth(seen(0, 0, 0, 0));
    expect(growth.judge(seen(100, -1, 0, 500))).toBe(true);
  });
});

