/**
 * Seeded pseudo-random numbers for the shuffles: xoshiro128** (Blackman & Vigna, 2018) seeded through
 * SplitMix64, plus FNV-1a 64 to turn string seeds and salts into numbers.
 *
 * Why these: xoshiro128** is a small, fast, well-studied generator whose whole state fits in four 32-bit
 * words, so the hot loop is `Math.imul` and shifts on int32 values (no BigInt, no allocation). SplitMix64 is
 * what its authors recommend for expanding a 64-bit seed into that state. Both are reproduced here from their
 * reference C definitions (https://prng.di.unimi.it/xoshiro128starstar.c, .../splitmix64.c) and tested against
 * vectors produced by that C code. BigInt is used only while seeding, once per permutation.
 *
 * Not cryptographic: a user who knows the seed knows the order, which is the point.
 */

const U32 = 4294967296; // 2^32
const U64_MASK = (1n << 64n) - 1n;
const GOLDEN_GAMMA = 0x9e3779b97f4a7c15n; // SplitMix64's increment: 2^64 / golden ratio, odd

/** The SplitMix64 output function (Stafford's "Mix13"): a bijection on 64-bit values with good avalanche. */
export function mix64(value: bigint): bigint {
  let z = value & U64_MASK;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & U64_MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & U64_MASK;
  return z ^ (z >> 31n);
}

/** SplitMix64 (Steele, Lea & Flood): used only to expand one 64-bit seed into xoshiro's 128-bit state. */
export class SplitMix64 {
  private state: bigint;

  constructor(seed: bigint) {
    this.state = seed & U64_MASK;
  }

  /** The next 64-bit output as a bigint in [0, 2^64). */
  next(): bigint {
    this.state = (this.state + GOLDEN_GAMMA) & U64_MASK;
    return mix64(this.state);
  }
}

/**
 * FNV-1a 64 over bytes, in 32-bit halves so it stays cheap on long inputs (e.g. a table of shard sizes).
 * The 64-bit FNV prime is 2^40 + 0x1b3, so `h * prime = h * 0x1b3 + (h << 40)` mod 2^64.
 */
export function fnv1a64(bytes: Uint8Array): bigint {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ (bytes[i] as number)) >>> 0;
    const loTimes = lo * 0x1b3; // < 2^41: exact in a double
    const carry = Math.floor(loTimes / U32);
    hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) % U32;
    lo = loTimes % U32;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/** FNV-1a 64 of a string's UTF-8 bytes. */
export function fnv1a64String(text: string): bigint {
  return fnv1a64(new TextEncoder().encode(text));
}

/** Seeds accepted everywhere an order is derived: a safe integer, or any string (hashed). */
export type Seed = number | string;

// Distinct domains so the number 5 and the string "5" give unrelated streams.
const NUMBER_SEED_DOMAIN = 0x6e756d6265727365n; // "numberse"
const STRING_SEED_DOMAIN = 0x737472696e677365n; // "stringse"

/**
 * Mixes a user seed, an epoch and an optional salt (which algorithm, which stage) into one 64-bit seed.
 * Every input goes through `mix64`, so neighbouring seeds or epochs give unrelated streams.
 * Callers validate `seed` (safe integer or string) and `epoch` (non-negative safe integer) first.
 *
 * @example
 * const rng = Xoshiro128StarStar.fromSeed(seedFor('imagenet', 3, 'full'));
 */
export function seedFor(seed: Seed, epoch: number, salt = ''): bigint {
  let h =
    typeof seed === 'number'
      ? mix64(BigInt.asUintN(64, BigInt(seed)) ^ NUMBER_SEED_DOMAIN)
      : mix64(fnv1a64String(seed) ^ STRING_SEED_DOMAIN);
  h = mix64(h ^ mix64(BigInt(epoch) + GOLDEN_GAMMA));
  return mix64(h ^ fnv1a64String(salt));
}

/**
 * xoshiro128**: 128-bit state, period 2^128 - 1, 32-bit outputs. State words are kept as int32 so V8 keeps
 * them unboxed; outputs are returned as unsigned numbers in [0, 2^32).
 */
export class Xoshiro128StarStar {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  /** Starts from an explicit state (four 32-bit words, not all zero), as the reference code does. */
  constructor(s0: number, s1: number, s2: number, s3: number) {
    this.s0 = s0 | 0;
    this.s1 = s1 | 0;
    this.s2 = s2 | 0;
    this.s3 = s3 | 0;
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) {
      // The all-zero state is the one fixed point of the generator: it would output zeros forever.
      throw new RangeError('xoshiro128** state must not be all zero');
    }
  }

  /** Seeds the state with two SplitMix64 outputs (low then high word of each), as its authors recommend. */
  static fromSeed(seed: bigint): Xoshiro128StarStar {
    const sm = new SplitMix64(seed);
    const a = sm.next();
    const b = sm.next();
    // Two consecutive SplitMix64 outputs are never both zero (mix64 is a bijection of distinct inputs).
    return new Xoshiro128StarStar(
      Number(a & 0xffffffffn),
      Number(a >> 32n),
      Number(b & 0xffffffffn),
      Number(b >> 32n),
    );
  }

  /** The next output, uniform in [0, 2^32). */
  nextUint32(): number {
    const s1 = this.s1;
    const x = Math.imul(s1, 5);
    const result = Math.imul((x << 7) | (x >>> 25), 9) >>> 0;
    const t = s1 << 9;
    const s2 = this.s2 ^ this.s0;
    const s3 = this.s3 ^ s1;
    this.s1 = s1 ^ s2;
    this.s0 = this.s0 ^ s3;
    this.s2 = s2 ^ t;
    this.s3 = (s3 << 11) | (s3 >>> 21);
    return result;
  }

  /**
   * A uniform integer in [0, n), without modulo bias.
   *
   * For n <= 2^32 this is Lemire's multiply-and-reject method ("Fast random integer generation in an
   * interval", 2019): one 32-bit draw and no division on almost every call. The 32x32 -> 64-bit product is
   * computed exactly in 16-bit limbs. For 2^32 < n <= 2^53 (more than any Uint32Array permutation can hold,
   * kept so the function has no cliff) it draws 53 bits from two outputs and rejects the biased tail.
   *
   * @param n integer between 1 and 2^53; not validated here because this is the shuffles' hot loop.
   */
  nextBelow(n: number): number {
    if (n > U32) return this.nextBelowWide(n);
    if (n === U32) return this.nextUint32();
    // x * n split as x * nHigh * 2^16 + x * nLow: both partial products are below 2^48, so exact in
    // doubles, and the high word is floor((x*nHigh + floor(x*nLow / 2^16)) / 2^16). Only powers of two
    // divide here: V8's `%` on non-int32 doubles is a slow fmod call.
    const nHigh = n >>> 16;
    const nLow = n & 0xffff;
    let x = this.nextUint32();
    let low = Math.imul(x, n) >>> 0; // the low word of x * n
    if (low < n) {
      const threshold = (U32 - n) % n; // 2^32 mod n: how many low words would bias the result
      while (low < threshold) {
        x = this.nextUint32();
        low = Math.imul(x, n) >>> 0;
      }
    }
    return Math.floor((x * nHigh + Math.floor((x * nLow) / 65536)) / 65536);
  }

  private nextBelowWide(n: number): number {
    const span = 2 ** 53;
    const limit = span - (span % n);
    for (;;) {
      const r = (this.nextUint32() >>> 11) * U32 + this.nextUint32(); // 21 + 32 = 53 uniform bits
      if (r < limit) return r % n;
    }
  }
}

/** A generator for one (seed, epoch, salt): the only way the shuffles get randomness. */
export function rngFor(seed: Seed, epoch: number, salt: string): Xoshiro128StarStar {
  return Xoshiro128StarStar.fromSeed(seedFor(seed, epoch, salt));
}
