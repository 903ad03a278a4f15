/**
 * One epoch of a mixture: which samples of each source it holds and in which order, from (seed, epoch) alone.
 *
 * Source i gives `counts[i]` samples of its `sizes[i]`: `floor(c / n)` whole passes over all its samples, plus
 * `c mod n` samples chosen without replacement (the first ones of a seeded partial Fisher–Yates over its
 * positions). So down-sampling never repeats a sample, and up-sampling repeats every sample the same number of
 * times, give or take one. The epoch's samples are then put in one seeded order (Fisher–Yates over all of them).
 * Memory: 8 bytes per epoch sample, plus 4 per sample of the largest down-sampled source while choosing.
 */
import { fisherYatesInPlace, identityOrder } from './shuffle/fisher-yates.js';
import { rngFor, type Seed } from './shuffle/prng.js';

export interface MixtureEpoch {
  /** Source index of the epoch's i-th sample. */
  source: Uint32Array;
  /** Its position (key order) in that source. */
  position: Uint32Array;
}

/** The samples source `i` gives this epoch, by position: whole passes, then a seeded choice without replacement. */
export function chooseFromSource(size: number, count: number, seed: Seed, epoch: number, i: number): Uint32Array {
  const out = new Uint32Array(count);
  if (count === 0) return out;
  const passes = Math.floor(count / size);
  let at = 0;
  for (let p = 0; p < passes; p++) for (let q = 0; q < size; q++) out[at++] = q;
  const rest = count - at;
  if (rest === 0) return out;
  const rng = rngFor(seed, epoch, `mixture-source-${i}`);
  const order = identityOrder(size);
  // a partial Fisher–Yates: the first `rest` slots hold a uniform choice of `rest` distinct positions
  for (let k = 0; k < rest; k++) {
    const j = k + rng.nextBelow(size - k);
    const held = order[k] as number;
    order[k] = order[j] as number;
    order[j] = held;
    out[at++] = order[k] as number;
  }
  return out;
}

export function planMixtureEpoch(sizes: readonly number[], counts: readonly number[], seed: Seed, epoch: number): MixtureEpoch {
  const total = counts.reduce((n, c) => n + c, 0);
  const source = new Uint32Array(total);
  const position = new Uint32Array(total);
  let at = 0;
  counts.forEach((count, i) => {
    const chosen = chooseFromSource(sizes[i] as number, count, seed, epoch, i);
    source.fill(i, at, at + count);
    position.set(chosen, at);
    at += count;
  });
  const order = identityOrder(total);
  fisherYatesInPlace(order, 0, total, rngFor(seed, epoch, 'mixture'));
  const mixedSource = new Uint32Array(total);
  const mixedPosition = new Uint32Array(total);
  for (let k = 0; k < total; k++) {
    const from = order[k] as number;
    mixedSource[k] = source[from] as number;
    mixedPosition[k] = position[from] as number;
  }
  return { source: mixedSource, position: mixedPosition };
}
