import { identityOrder } from './fisher-yates.js';
import type { Seed, ShuffleOptions } from './shuffle-args.js';
import { expectOptionsObject, expectShuffleArgs } from './shuffle-args.js';

/**
 * No shuffle: samples in key order, 0..N-1, the same every epoch.
 *
 * Trade-off: perfect locality (each shard is read front to back, once, which is what sequential storage and
 * read coalescing like best) and zero randomness: a model sees the same sequence every epoch, with classes
 * in whatever order the keys sort. Use it for evaluation, extraction, benchmarks of raw throughput, or data
 * that was shuffled when it was packed.
 *
 * Memory: 4 bytes per sample (the returned Uint32Array). `seed`, `epoch` and `options` are validated and
 * otherwise ignored, so every algorithm has one signature.
 *
 * @example
 * noShuffle([3, 2], 0, 0); // Uint32Array [0, 1, 2, 3, 4]
 */
export function noShuffle(
  shardSizes: ArrayLike<number>,
  seed: Seed,
  epoch: number,
  options?: ShuffleOptions,
): Uint32Array {
  const total = expectShuffleArgs(shardSizes, seed, epoch);
  expectOptionsObject(options);
  return identityOrder(total);
}
