/**
 * Index checks for tests that write into arrays: a plain `bytes[i] ^= m` past the end does nothing (and `counts[i]++`
 * past the end makes NaN), so a test that miscounted an offset would quietly damage nothing. These throw instead.
 */

function checkIndex(length: number, at: number, what: string): void {
  if (!Number.isInteger(at) || at < 0 || at >= length) throw new RangeError(`${what}: index ${at} is outside 0..${length - 1}`);
}

/** XORs the byte at `at` with `mask` (damages it); throws when `at` is not a byte of `bytes`. */
export function flipBits(bytes: Uint8Array, at: number, mask: number): void {
  checkIndex(bytes.length, at, 'flipBits');
  bytes[at] = (bytes[at] as number) ^ mask;
}

/** Adds 1 to `counts[at]`; throws when `at` is not an index of `counts`. */
export function countAt(counts: number[], at: number): void {
  checkIndex(counts.length, at, 'countAt');
  counts[at] = (counts[at] as number) + 1;
}

/** `value`, which the test expects to be there; throws naming `what` when it is undefined. */
export function defined<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`expected ${what} to be defined`);
  return value;
}
