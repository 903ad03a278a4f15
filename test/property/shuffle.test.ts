import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isShardkitError } from '../../formats/errors.js';
import { planEpoch } from '../../src/read/epoch-plan.js';
import { blockShuffle, SHUFFLE_NAMES, shuffles } from '../../src/read/shuffle/index.js';

/** Shard sizes including empty shards; N stays small so each run is fast. */
const shardSizesArb = fc.array(fc.nat({ max: 40 }), { minLength: 0, maxLength: 30 });
const seedArb = fc.oneof(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.string({ maxLength: 12 }));
const epochArb = fc.nat({ max: 1000 });

function total(sizes: readonly number[]): number {
  return sizes.reduce((a, b) => a + b, 0);
}

function isPermutation(order: Uint32Array, n: number): boolean {
  if (order.length !== n) return false;
  const seen = new Uint8Array(n);
  for (const v of order) {
    if (v >= n || seen[v] === 1) return false;
    seen[v] = 1;
  }
  return true;
}

function shardOf(sizes: readonly number[]): Uint32Array {
  const owner = new Uint32Array(total(sizes));
  let p = 0;
  sizes.forEach((size, s) => owner.fill(s, p, (p += size)));
  return owner;
}

// The shared test every registered algorithm must pass (after MosaicML Streaming's shuffle tests).
describe.each(SHUFFLE_NAMES.map((name) => [name]))('shuffle %s', (name) => {
  const shuffle = shuffles[name];

  it('returns a permutation of 0..N-1', () => {
    fc.assert(
      fc.property(shardSizesArb, seedArb, epochArb, (sizes, seed, epoch) => {
        expect(isPermutation(shuffle(sizes, seed, epoch), total(sizes))).toBe(true);
      }),
    );
  });

  it('is deterministic per (seed, epoch, options) and accepts typed arrays', () => {
    fc.assert(
      fc.property(shardSizesArb, seedArb, epochArb, fc.integer({ min: 1, max: 8 }), (sizes, seed, epoch, w) => {
        const a = shuffle(sizes, seed, epoch, { windowShards: w });
        const b = shuffle(Uint32Array.from(sizes), seed, epoch, { windowShards: w });
        expect(b).toEqual(a);
      }),
    );
  });

  it('is the order a plan uses on every rank, whatever the world size', () => {
    fc.assert(
      fc.property(shardSizesArb, seedArb, epochArb, fc.integer({ min: 1, max: 9 }), (sizes, seed, epoch, w) => {
        const expected = shuffle(sizes, seed, epoch);
        for (let rank = 0; rank < w; rank++) {
          const plan = planEpoch({ shardSizes: sizes, seed, epoch, shuffle: name, rank, worldSize: w });
          expect(plan.order).toEqual(expected);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('validates its arguments with INVALID_ARG', () => {
    for (const [sizes, seed, epoch] of [
      [[1, -1], 0, 0],
      [[1, 0.5], 0, 0],
      ['12', 0, 0],
      [[1], 0.5, 0],
      [[1], 2 ** 60, 0],
      [[1], 0, -1],
      [[1], 0, 1.5],
    ] as const) {
      let error: unknown;
      try {
        shuffle(sizes as unknown as number[], seed as number, epoch as number);
      } catch (err) {
        error = err;
      }
      expect(isShardkitError(error, 'SHARDKIT_ERR_INVALID_ARG')).toBe(true);
    }
    expect(() => shuffle([1], 0, 0, [] as never)).toThrow(/Expected object for options/);
  });
});

describe.each([['full'], ['block']] as const)('shuffle %s randomness', (name) => {
  it('gives different orders for different epochs and seeds (N >= 64)', () => {
    const sizes = [40, 40, 40, 40, 40, 40, 40, 40];
    fc.assert(
      fc.property(seedArb, epochArb, (seed, epoch) => {
        const base = shuffles[name](sizes, seed, epoch);
        expect(shuffles[name](sizes, seed, epoch + 1)).not.toEqual(base);
        expect(shuffles[name](sizes, `${seed}x`, epoch)).not.toEqual(base);
      }),
      { numRuns: 50 },
    );
  });
});

describe('block shuffle', () => {
  it('splits into consecutive windows of whole shards, each touching at most windowShards shards', () => {
    fc.assert(
      fc.property(shardSizesArb, seedArb, epochArb, fc.integer({ min: 1, max: 6 }), (sizes, seed, epoch, w) => {
        const order = blockShuffle(sizes, seed, epoch, { windowShards: w });
        const owner = shardOf(sizes);
        // Greedy: a segment closes as soon as every shard it touched is complete. This is the finest split
        // into runs of whole shards, so if any valid split into windows exists, its segments are no larger.
        const left = Uint32Array.from(sizes);
        const inSegment = new Set<number>();
        let open = 0;
        for (const position of order) {
          const s = owner[position] as number;
          if (!inSegment.has(s)) {
            inSegment.add(s);
            open++;
          }
          left[s] = (left[s] as number) - 1;
          if (left[s] === 0) open--;
          if (open === 0) {
            expect(inSegment.size).toBeLessThanOrEqual(w);
            inSegment.clear();
          }
        }
        expect(open).toBe(0);
      }),
    );
  });

  it('is a full mix when the window covers every shard', () => {
    // One window of all shards: the first sample comes from every shard for some seed (not a shard walk).
    const sizes = [5, 5, 5, 5];
    const firstShards = new Set<number>();
    for (let seed = 0; seed < 200; seed++) firstShards.add(Math.floor((blockShuffle(sizes, seed, 0, { windowShards: 4 })[0] as number) / 5));
    expect(firstShards.size).toBe(4);
  });

  it('validates windowShards', () => {
    expect(() => blockShuffle([1, 2], 0, 0, { windowShards: 0 })).toThrow(
      'Expected integer between 1 and 4294967295 for windowShards but received 0 of type number',
    );
    expect(() => blockShuffle([1, 2], 0, 0, { windowShards: 1.5 })).toThrow(/windowShards/);
  });
});
