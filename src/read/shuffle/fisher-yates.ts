import type { Xoshiro128StarStar } from './prng.js';

/**
 * Fisher–Yates (Durstenfeld) shuffle of `array[start..end)` in place: every one of the (end-start)!
 * arrangements is equally likely given an unbiased `nextBelow`. O(end - start) time, no allocation.
 */
export function fisherYatesInPlace(
  array: Uint32Array,
  start: number,
  end: number,
  rng: Xoshiro128StarStar,
): void {
  for (let i = end - 1; i > start; i--) {
    const j = start + rng.nextBelow(i - start + 1);
    const held = array[i] as number;
    array[i] = array[j] as number;
    array[j] = held;
  }
}

/** A Uint32Array holding 0..n-1. */
export function identityOrder(n: number): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  return order;
}
