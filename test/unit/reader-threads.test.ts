import { describe, expect, it } from 'vitest';
import { addReader, type ReadingSeen } from '../../src/pack/source-threads.js';

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
