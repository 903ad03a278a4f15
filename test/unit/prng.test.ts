import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fnv1a64String,
  seedFor,
  SplitMix64,
  Xoshiro128StarStar,
} from '../../src/read/shuffle/prng.js';

// Vectors from the reference C code (prng.di.unimi.it splitmix64.c / xoshiro128starstar.c) compiled with gcc;
// the SplitMix64 seed-1234567 and xoshiro128** vectors also appear in third-party test suites.
describe('SplitMix64', () => {
  it('matches the reference outputs for seed 1234567', () => {
    const sm = new SplitMix64(1234567n);
    expect([sm.next(), sm.next(), sm.next(), sm.next(), sm.next()]).toEqual([
      6457827717110365317n,
      3203168211198807973n,
      9817491932198370423n,
      4593380528125082431n,
      16408922859458223821n,
    ]);
  });

  it('matches the reference outputs for seed 0', () => {
    const sm = new SplitMix64(0n);
    expect([sm.next(), sm.next(), sm.next()]).toEqual([
      0xe220a8397b1dcdafn,
      0x6e789e6aa1b965f4n,
      0x06c45d188009454fn,
    ]);
  });
});

describe('Xoshiro128StarStar', () => {
  it('matches the reference outputs from state {1, 2, 3, 4}', () => {
    const rng = new Xoshiro128StarStar(1, 2, 3, 4);
    const out = Array.from({ length: 10 }, () => rng.nextUint32());
    expect(out).toEqual([
      11520, 0, 5927040, 70819200, 2031721883, 1637235492, 1287239034, 3734860849, 3729100597, 4258142804,
    ]);
  });

  it('matches the reference outputs from a state with high bits set', () => {
    const rng = new Xoshiro128StarStar(0x964d4a0c, 0xd40ab895, 0xad7fdecb, 0x3006f0f0);
    const out = Array.from({ length: 4 }, () => rng.nextUint32());
    expect(out).toEqual([0xf1391922, 0x6fe53806, 0xa5be2840, 0xf510ee70]);
  });

  it('seeds through SplitMix64 (low word then high word of two outputs)', () => {
    const rng = Xoshiro128StarStar.fromSeed(42n);
    const out = Array.from({ length: 6 }, () => rng.nextUint32());
    expect(out).toEqual([1776835114, 4165204688, 17111135, 2317295270, 2792088233, 2554630222]);
  });

  it('refuses the all-zero state', () => {
    expect(() => new Xoshiro128StarStar(0, 0, 0, 0)).toThrow(RangeError);
  });
});

describe('fnv1a64', () => {
  it('matches the published FNV-1a 64 vectors', () => {
    expect(fnv1a64String('')).toBe(0xcbf29ce484222325n);
    expect(fnv1a64String('a')).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64String('foobar')).toBe(0x85944171f73967e8n);
  });
});

/** Lemire's method in exact BigInt arithmetic, drawing from its own copy of the stream. */
function lemireReference(rng: Xoshiro128StarStar, n: number): number {
  const big = BigInt(n);
  let m = BigInt(rng.nextUint32()) * big;
  let low = m & 0xffffffffn;
  if (low < big) {
    const threshold = ((1n << 32n) - big) % big;
    while (low < threshold) {
      m = BigInt(rng.nextUint32()) * big;
      low = m & 0xffffffffn;
    }
  }
  return Number(m >> 32n);
}

describe('nextBelow', () => {
  it('equals an exact BigInt Lemire on the same stream for every n up to 2^32', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.integer({ min: 1, max: 2 ** 32 - 1 }), (seed, n) => {
        const fast = Xoshiro128StarStar.fromSeed(seed);
        const reference = Xoshiro128StarStar.fromSeed(seed);
        for (let i = 0; i < 50; i++) expect(fast.nextBelow(n)).toBe(lemireReference(reference, n));
      }),
      { numRuns: 300 },
    );
  });

  it('stays in [0, n) across the whole range, including above 2^32', () => {
    const rng = Xoshiro128StarStar.fromSeed(7n);
    for (const n of [1, 2, 3, 1000, 2 ** 31 + 1, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 5, 1e15 + 7, 2 ** 53]) {
      for (let i = 0; i < 500; i++) {
        const r = rng.nextBelow(n);
        expect(Number.isInteger(r) && r >= 0 && r < n).toBe(true);
      }
    }
    expect(rng.nextBelow(1)).toBe(0);
  });

  it('has no modulo bias where plain `x % n` would be badly biased', () => {
    // n = 3 * 2^30: `x % n` lands in the first third half the time; an unbiased draw one third of the time.
    const n = 3 * 2 ** 30;
    const rng = Xoshiro128StarStar.fromSeed(11n);
    const draws = 30000;
    let low = 0;
    for (let i = 0; i < draws; i++) if (rng.nextBelow(n) < n / 3) low++;
    expect(Math.abs(low / draws - 1 / 3)).toBeLessThan(0.015); // 5 standard deviations is 0.0136
  });

  it('is uniform on small n (chi-square smoke test)', () => {
    const rng = Xoshiro128StarStar.fromSeed(seedFor('uniform', 0));
    const n = 6;
    const draws = 60000;
    const counts = new Array<number>(n).fill(0);
    for (let i = 0; i < draws; i++) counts[rng.nextBelow(n)]! += 1;
    const expected = draws / n;
    const chi2 = counts.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(20.5); // df = 5, p = 0.001
  });
});

describe('seedFor', () => {
  it('is deterministic and separates seeds, types, epochs and salts', () => {
    expect(seedFor(42, 3, 'full')).toBe(seedFor(42, 3, 'full'));
    const all = [
      seedFor(42, 3, 'full'),
      seedFor(43, 3, 'full'),
      seedFor('42', 3, 'full'),
      seedFor(42, 4, 'full'),
      seedFor(42, 3, 'block'),
      seedFor(42, 3),
      seedFor(-42, 3, 'full'),
    ];
    expect(new Set(all).size).toBe(all.length);
    for (const s of all) expect(s >= 0n && s < 1n << 64n).toBe(true);
  });
});
