/**
 * A small seeded pseudo-random generator for synthetic data: xorshift32 behind a murmur3-style seed mixer.
 * Not for anything secret. What matters here is that the same (seed, stream) gives the same numbers on every run
 * and every platform, so `synth` writes the same bytes whatever order its tasks finish in.
 */

/** murmur3's 32-bit finaliser: spreads every input bit over the output, so seeds 0, 1, 2 give unrelated streams. */
export function mix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Derives an independent 32-bit seed from a base seed and any number of integer stream ids (sample index, ...). */
export function deriveSeed(seed: number, ...streams: number[]): number {
  let h = mix32(seed ^ 0x9e3779b9);
  for (const s of streams) h = mix32(h ^ mix32((s >>> 0) + 0x632be5ab));
  return h;
}

export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    // xorshift32 is stuck at zero: map a zero seed to a fixed non-zero one.
    this.state = mix32(seed) || 0x6d2b79f5;
  }

  /** The next unsigned 32-bit integer. */
  nextUint32(): number {
    let s = this.state;
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    this.state = s >>> 0;
    return this.state;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.nextUint32() / 0x1_0000_0000;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** A standard normal deviate (Box-Muller; one of the pair is dropped, simplicity over speed). */
  normal(): number {
    const u = 1 - this.float(); // (0, 1]: log(0) would be -Infinity
    const v = this.float();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Picks an item with probability proportional to its weight. */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, w] of items) total += w;
    let x = this.float() * total;
    for (const [item, w] of items) {
      x -= w;
      if (x < 0) return item;
    }
    const last = items[items.length - 1];
    if (last === undefined) throw new RangeError('weighted() needs at least one item');
    return last[0];
  }
}
