/**
 * The shuffle registry: one algorithm per file, each a pure `ShuffleFn` whose TSDoc states its trade-off.
 * Add an algorithm by writing its file and listing it here; the shared property test then covers it.
 */
import { blockShuffle } from './block.js';
import { fullShuffle } from './full.js';
import { noShuffle } from './none.js';
import type { ShuffleFn, ShuffleName } from './shuffle-args.js';
import { invalidArg } from './shuffle-args.js';

export type { Seed, ShuffleFn, ShuffleName, ShuffleOptions } from './shuffle-args.js';
export { MAX_SAMPLES } from './shuffle-args.js';
export { blockShuffle, DEFAULT_WINDOW_SHARDS, resolveBlockOptions } from './block.js';
export { fullShuffle } from './full.js';
export { noShuffle } from './none.js';

/** Every registered algorithm by name. */
export const shuffles: Readonly<Record<ShuffleName, ShuffleFn>> = Object.freeze({
  none: noShuffle,
  full: fullShuffle,
  block: blockShuffle,
});

/** The registered names, in a stable order (for help texts and tests). */
export const SHUFFLE_NAMES: readonly ShuffleName[] = Object.freeze(['none', 'full', 'block']);

/** Validates a shuffle name (INVALID_ARG listing the choices) and returns it typed. */
export function expectShuffleName(name: unknown, argName = 'shuffle'): ShuffleName {
  if (typeof name === 'string' && Object.hasOwn(shuffles, name)) return name as ShuffleName;
  throw invalidArg(`one of ${SHUFFLE_NAMES.join(', ')}`, argName, name);
}
