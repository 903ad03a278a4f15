import { fisherYatesInPlace } from './fisher-yates.js';
import { rngFor } from './prng.js';
import type { Seed, ShuffleOptions } from './shuffle-args.js';
import { expectInteger, expectOptionsObject, expectShuffleArgs, MAX_SAMPLES } from './shuffle-args.js';

/**
 * Default window: 4 shards. The working set of a window is about 4 x the shard size; raise it for more
 * randomness while the window still fits the page cache (or the storage's sweet spot), lower it for less I/O.
 */
export const DEFAULT_WINDOW_SHARDS = 4;

/** Fills in block's defaults and validates them; used by the loader to record the options in its state. */
export function resolveBlockOptions(options?: ShuffleOptions): { windowShards: number } {
  const opts = expectOptionsObject(options);
  const windowShards = opts.windowShards ?? DEFAULT_WINDOW_SHARDS;
  expectInteger(windowShards, 1, MAX_SAMPLES, 'windowShards');
  return { windowShards };
}

/**
 * Block shuffle: permute the (non-empty) shards, cut the permuted list into windows of `windowShards`
 * consecutive shards, and permute the samples inside each window. Both stages are seeded by (seed, epoch),
 * so which shards share a window changes every epoch.
 *
 * Trade-off: reads stay within `windowShards` shards at a time, so a loader keeps few shards open, reads
 * nearby bytes together (good for HDD, network file systems, object storage and read coalescing) and can
 * drop a shard from cache once its window is done. The price is correlation: neighbours in the order come
 * from the same few shards, and a window's samples are all seen before the next window starts. If shards were
 * packed in key order and keys group by class, a window is class-skewed; pack with a shuffle, or use a larger
 * window, when that matters. `windowShards >= S` is a full shuffle.
 *
 * Memory: 4 bytes per sample (the returned Uint32Array) plus 4 bytes per shard; time O(N + S).
 *
 * @example
 * const order = blockShuffle(shardSizes, 42, epoch, { windowShards: 8 });
 */
export function blockShuffle(
  shardSizes: ArrayLike<number>,
  seed: Seed,
  epoch: number,
  options?: ShuffleOptions,
): Uint32Array {
  const total = expectShuffleArgs(shardSizes, seed, epoch);
  const { windowShards } = resolveBlockOptions(options);

  // First position of each shard; empty shards are left out so every window holds real samples.
  const shardCount = shardSizes.length;
  const shardStart = new Float64Array(shardCount);
  const nonEmpty: number[] = [];
  let position = 0;
  for (let s = 0; s < shardCount; s++) {
    shardStart[s] = position;
    const size = shardSizes[s] as number;
    if (size > 0) nonEmpty.push(s);
    position += size;
  }
  const shardOrder = Uint32Array.from(nonEmpty);
  fisherYatesInPlace(shardOrder, 0, shardOrder.length, rngFor(seed, epoch, 'block/shards'));

  const order = new Uint32Array(total);
  const sampleRng = rngFor(seed, epoch, 'block/samples');
  let out = 0;
  for (let w = 0; w < shardOrder.length; w += windowShards) {
    const windowStart = out;
    const windowEnd = Math.min(w + windowShards, shardOrder.length);
    for (let k = w; k < windowEnd; k++) {
      const s = shardOrder[k] as number;
      const first = shardStart[s] as number;
      const size = shardSizes[s] as number;
      for (let i = 0; i < size; i++) order[out++] = first + i;
    }
    fisherYatesInPlace(order, windowStart, out, sampleRng);
  }
  return order;
}
