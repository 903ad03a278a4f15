/**
 * The shared signature of the shuffle algorithms and the validation of their common arguments, with
 * sharp-style messages ("Expected integer between 1 and 4294967295 for windowShards but received 0.5 of
 * type number"). Every algorithm validates at its boundary, so each is safe to call on its own.
 */
import { ErrorCodes, ShardkitError } from '../../../formats/errors.js';
import type { Seed } from './prng.js';

export type { Seed } from './prng.js';

/** Registered shuffle algorithm names. */
export type ShuffleName = 'none' | 'full' | 'block';

/**
 * Options shared by all algorithms, so a loader can pass one object whatever the algorithm; each algorithm
 * reads the options it knows and ignores the rest.
 */
export interface ShuffleOptions {
  /** block: how many consecutive (permuted) shards form one window whose samples are mixed. */
  windowShards?: number;
}

/**
 * A shuffle: a pure function from (shard sizes, seed, epoch, options) to a permutation of the sample
 * positions 0..N-1 (N = sum of shardSizes), where shard s holds the contiguous positions after shard s-1.
 * Same arguments, same permutation, on every machine. The result costs 4 bytes per sample.
 */
export type ShuffleFn = (
  shardSizes: ArrayLike<number>,
  seed: Seed,
  epoch: number,
  options?: ShuffleOptions,
) => Uint32Array;

/** The most samples an order can hold: positions must fit a Uint32Array (4 bytes per sample). */
export const MAX_SAMPLES = 2 ** 32 - 1;

function received(value: unknown): string {
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return `${shown.length > 80 ? `${shown.slice(0, 77)}...` : shown} of type ${typeof value}`;
}

/** An INVALID_ARG error worded like sharp's: "Expected <what> for <name> but received <value> of type <t>". */
export function invalidArg(expected: string, name: string, value: unknown): ShardkitError {
  return new ShardkitError(
    ErrorCodes.INVALID_ARG,
    `Expected ${expected} for ${name} but received ${received(value)}`,
  );
}

/** Throws INVALID_ARG unless `value` is an integer in [min, max]. */
export function expectInteger(value: unknown, min: number, max: number, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalidArg(`integer between ${min} and ${max}`, name, value);
  }
  return value;
}

/** Throws INVALID_ARG unless `seed` is a safe integer or a string. */
export function expectSeed(seed: unknown, name = 'seed'): Seed {
  if (typeof seed === 'string') return seed;
  if (typeof seed === 'number' && Number.isSafeInteger(seed)) return seed;
  throw invalidArg('safe integer or string', name, seed);
}

/** Throws INVALID_ARG unless `epoch` is a non-negative safe integer. */
export function expectEpoch(epoch: unknown, name = 'epoch'): number {
  return expectInteger(epoch, 0, Number.MAX_SAFE_INTEGER, name);
}

/**
 * Validates a table of shard sizes (non-negative integers) and returns the total number of samples.
 * Throws TOO_LARGE when the total exceeds MAX_SAMPLES.
 */
export function expectShardSizes(shardSizes: unknown, name = 'shardSizes'): number {
  const isArrayLike =
    Array.isArray(shardSizes) ||
    (ArrayBuffer.isView(shardSizes) && !(shardSizes instanceof DataView));
  if (!isArrayLike) throw invalidArg('array of non-negative integers', name, shardSizes);
  const sizes = shardSizes as ArrayLike<unknown>;
  let total = 0;
  for (let s = 0; s < sizes.length; s++) {
    const size = sizes[s];
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
      throw invalidArg('non-negative integer', `${name}[${s}]`, size);
    }
    total += size;
  }
  if (total > MAX_SAMPLES) {
    throw new ShardkitError(
      ErrorCodes.TOO_LARGE,
      `Expected at most ${MAX_SAMPLES} samples in total for ${name} but received ${total}: ` +
        'an order holds one 32-bit position per sample; split the dataset',
    );
  }
  return total;
}

/** Validates the three arguments every shuffle takes and returns N. */
export function expectShuffleArgs(shardSizes: unknown, seed: unknown, epoch: unknown): number {
  expectSeed(seed);
  expectEpoch(epoch);
  return expectShardSizes(shardSizes);
}

/** Throws INVALID_ARG unless `options` is undefined or a plain object. */
export function expectOptionsObject(options: unknown, name = 'options'): ShuffleOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalidArg('object', name, options);
  }
  return options as ShuffleOptions;
}
