import { describe, expect, it } from 'vitest';
import { SlabPool } from '../../src/read/slab-pool.js';

const KiB = 1024;

describe('SlabPool', () => {
  it('lends a power-of-two slab of at least the bytes asked for, and lends a returned one again', () => {
    const pool = new SlabPool(1024 * KiB);
    const a = pool.take(100 * KiB);
    expect(a.byteLength).toBe(128 * KiB);
    expect(pool.take(1).byteLength).toBe(64 * KiB);
    pool.give(a);
    expect(pool.take(70 * KiB)).toBe(a);
    expect(pool.take(70 * KiB)).not.toBe(a); // lent out: a new one
  });

  it('lends a free slab up to 4x larger than needed, never a larger one', () => {
    const pool = new SlabPool(4096 * KiB);
    const b = pool.take(1024 * KiB);
    pool.give(b);
    expect(pool.take(256 * KiB)).toBe(b); // 4x: lent
    pool.give(b);
    const small = pool.take(100 * KiB); // 128 KiB asked: 8x, a new slab
    expect(small).not.toBe(b);
    expect(small.byteLength).toBe(128 * KiB);
  });

  it('keeps returned slabs within maxFreeBytes or 3x the largest returned, and drops all at clear()', () => {
    const pool = new SlabPool(256 * KiB);
    const slabs = [1, 2, 3, 4].map(() => pool.take(1024 * KiB));
    for (const s of slabs) pool.give(s); // bound: max(256 KiB, 3 x 1 MiB): three are kept
    const again = [1, 2, 3, 4].map(() => pool.take(1024 * KiB));
    expect(again.filter((s) => slabs.includes(s)).length).toBe(3);
    for (const s of again) pool.give(s);
    pool.clear();
    expect(slabs.concat(again)).not.toContain(pool.take(1024 * KiB));
  });
});
