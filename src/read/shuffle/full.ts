import { fisherYatesInPlace, identityOrder } from './fisher-yates.js';
import { rngFor } from './prng.js';
import type { Seed, ShuffleOptions } from './shuffle-args.js';
import { expectOptionsObject, expectShuffleArgs } from './shuffle-args.js';

/**
 * Full shuffle: one Fisher–Yates pass over all N samples, seeded by (seed, epoch).
 *
 * Trade-off: the best randomness (every permutation equally likely; neighbours in the order are unrelated)
 * and no locality: consecutive samples almost always live in different shards, so every read is a random
 * read somewhere in the dataset and reads can rarely be coalesced. Fine on local SSD and in page cache; slow
 * on HDD, network file systems and object storage, where `blockShuffle` is the better default.
 *
 * Memory: 4 bytes per sample (the returned Uint32Array); time O(N), a few tens of ns per sample
 * (bench/shuffle-quality.mjs).
 *
 * @example
 * const order = fullShuffle([1000, 1000], 'my-seed', 0); // a permutation of 0..1999
 */
export function fullShuffle(
  shardSizes: ArrayLike<number>,
  seed: Seed,
  epoch: number,
  options?: ShuffleOptions,
): Uint32Array {
  const total = expectShuffleArgs(shardSizes, seed, epoch);
  expectOptionsObject(options);
  const order = identityOrder(total);
  fisherYatesInPlace(order, 0, total, rngFor(seed, epoch, 'full'));
  return order;
}
