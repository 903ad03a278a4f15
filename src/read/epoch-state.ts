/**
 * Loader resume state: what identifies an epoch's order, and which of its positions were already yielded.
 *
 * Vocabulary: the epoch's *order* is the shuffle's permutation of sample positions (0..N-1 in key order).
 * An *order index* is an index into that permutation. A state says which order indices were consumed:
 * every index below `consumed`, plus the few listed in `skip` (indices >= consumed that ranks running ahead
 * already yielded). At a step boundary, where every rank yielded the same count, `skip` is empty, so a state
 * is a few hundred bytes whatever N is.
 *
 * The state is plain JSON: `JSON.parse(JSON.stringify(state))` is an equal, valid state.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { fnv1a64 } from './shuffle/prng.js';
import { SHUFFLE_NAMES } from './shuffle/index.js';
import type { Seed, ShuffleName } from './shuffle/shuffle-args.js';
import { MAX_SAMPLES } from './shuffle/shuffle-args.js';

/** Bumped when the meaning of a field changes; states from a newer version are refused with BAD_STATE. */
export const EPOCH_STATE_VERSION = 1;

/** Everything that determines an epoch's order. A state only resumes a plan with the same identity. */
export interface OrderIdentity {
  version: typeof EPOCH_STATE_VERSION;
  seed: Seed;
  epoch: number;
  shuffle: ShuffleName;
  /** The algorithm's options with defaults filled in (e.g. `{ windowShards: 4 }` for block, `{}` otherwise). */
  shuffleOptions: { windowShards?: number };
  /** N: samples in the dataset. */
  samples: number;
  shards: number;
  /** FNV-1a 64 (hex) of the shard sizes: a resumed order must come from the same shard layout. */
  shardSizesHash: string;
}

/** Where a plan starts: order indices below `consumed`, and those listed in `skip`, are already yielded. */
export interface EpochCursor {
  consumed: number;
  /** Sorted, distinct order indices in [consumed, N). Empty at step boundaries. */
  skip: number[];
}

/** The whole job's progress through one epoch; what `planEpoch({ resumeFrom })` takes. */
export interface EpochState extends OrderIdentity, EpochCursor {
  kind: 'epoch';
}

/** One rank's progress through its plan; merge all ranks' with `mergeRankStates` to get an EpochState. */
export interface RankState extends OrderIdentity {
  kind: 'rank';
  rank: number;
  worldSize: number;
  /** The cursor the rank's plan started from (the same on every rank of one job). */
  start: EpochCursor;
  /** How many samples the plan gives this rank. */
  length: number;
  /** How many of them the rank has yielded, in [0, length]. */
  yielded: number;
}

/** Hex FNV-1a 64 over each shard size as a little-endian 64-bit integer. */
export function hashShardSizes(shardSizes: ArrayLike<number>): string {
  const bytes = new Uint8Array(shardSizes.length * 8);
  const view = new DataView(bytes.buffer);
  for (let s = 0; s < shardSizes.length; s++) {
    const size = shardSizes[s] as number;
    view.setUint32(s * 8, size % 2 ** 32, true);
    view.setUint32(s * 8 + 4, Math.floor(size / 2 ** 32), true);
  }
  return fnv1a64(bytes).toString(16).padStart(16, '0');
}

export function badState(message: string): ShardkitError {
  return new ShardkitError(ErrorCodes.BAD_STATE, message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

const IDENTITY_FIELDS = [
  'seed',
  'epoch',
  'shuffle',
  'shuffleOptions',
  'samples',
  'shards',
  'shardSizesHash',
] as const satisfies readonly (keyof OrderIdentity)[];

function isCount(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}

/** Throws BAD_STATE unless the identity fields of `state` have the right types (a state read from JSON). */
export function expectIdentityShape(state: Record<string, unknown>, name: string): OrderIdentity {
  const { seed, epoch, shuffle, shuffleOptions, samples, shards, shardSizesHash } = state;
  const problem =
    !(typeof seed === 'string' || (typeof seed === 'number' && Number.isSafeInteger(seed)))
      ? `seed must be a safe integer or a string but is ${show(seed)}`
      : !isCount(epoch, Number.MAX_SAFE_INTEGER)
        ? `epoch must be a non-negative integer but is ${show(epoch)}`
        : !(SHUFFLE_NAMES as readonly unknown[]).includes(shuffle)
          ? `shuffle must be one of ${SHUFFLE_NAMES.join(', ')} but is ${show(shuffle)}`
          : !isObject(shuffleOptions)
            ? `shuffleOptions must be an object but is ${show(shuffleOptions)}`
            : !isCount(samples, MAX_SAMPLES)
              ? `samples must be an integer between 0 and ${MAX_SAMPLES} but is ${show(samples)}`
              : !isCount(shards, Number.MAX_SAFE_INTEGER)
                ? `shards must be a non-negative integer but is ${show(shards)}`
                : !(typeof shardSizesHash === 'string' && /^[0-9a-f]{16}$/.test(shardSizesHash))
                  ? `shardSizesHash must be 16 hex digits but is ${show(shardSizesHash)}`
                  : undefined;
  if (problem !== undefined) throw badState(`${name}.${problem}`);
  return state as unknown as OrderIdentity;
}

/**
 * Throws BAD_STATE unless `state` has this identity (same seed, epoch, shuffle and options, same shard
 * layout): a state saved for another dataset or other options would resume the wrong order.
 */
export function expectSameIdentity(
  state: Record<string, unknown>,
  identity: OrderIdentity,
  name: string,
): void {
  if (state['version'] !== EPOCH_STATE_VERSION) {
    const newer = typeof state['version'] === 'number' && state['version'] > EPOCH_STATE_VERSION;
    throw badState(
      `${name} has state version ${show(state['version'])}, this shardkit reads version ${EPOCH_STATE_VERSION}` +
        (newer ? ': it was saved by a newer shardkit; upgrade to resume it' : ''),
    );
  }
  for (const field of IDENTITY_FIELDS) {
    // compared whole: show() shortens long values (a seed string) for the message only
    if (JSON.stringify(state[field]) !== JSON.stringify(identity[field])) {
      throw badState(
        `${name} was saved with ${field} ${show(state[field])} but this loader has ${show(identity[field])}: ` +
          'resume with the same dataset, seed, epoch and shuffle options',
      );
    }
  }
}

/** Throws BAD_STATE unless `value` is a valid cursor for an order of `samples` positions. */
export function expectCursor(value: unknown, samples: number, name: string): EpochCursor {
  if (!isObject(value)) throw badState(`${name} must be an object with consumed and skip`);
  const { consumed, skip } = value;
  if (typeof consumed !== 'number' || !Number.isInteger(consumed) || consumed < 0 || consumed > samples) {
    throw badState(`${name}.consumed must be an integer between 0 and ${samples} but is ${show(consumed)}`);
  }
  if (!Array.isArray(skip)) throw badState(`${name}.skip must be an array but is ${show(skip)}`);
  let previous = consumed - 1;
  for (const index of skip as unknown[]) {
    if (typeof index !== 'number' || !Number.isInteger(index) || index <= previous || index >= samples) {
      throw badState(
        `${name}.skip must hold increasing integers between ${consumed} and ${samples - 1} ` +
          `but holds ${show(index)} after ${previous}`,
      );
    }
    previous = index;
  }
  return { consumed, skip: (skip as number[]).slice() };
}

/** Throws BAD_STATE unless `value` looks like a RankState (identity fields are compared by the caller). */
export function expectRankStateShape(value: unknown, name: string): RankState {
  if (!isObject(value) || value['kind'] !== 'rank') {
    throw badState(`${name} must be a rank state from plan.state() but is ${show(value)}`);
  }
  const { worldSize, rank, length, yielded } = value;
  if (typeof worldSize !== 'number' || !Number.isInteger(worldSize) || worldSize < 1) {
    throw badState(`${name}.worldSize must be a positive integer but is ${show(worldSize)}`);
  }
  if (typeof rank !== 'number' || !Number.isInteger(rank) || rank < 0 || rank >= worldSize) {
    throw badState(`${name}.rank must be an integer between 0 and ${worldSize - 1} but is ${show(rank)}`);
  }
  if (typeof length !== 'number' || !Number.isInteger(length) || length < 0) {
    throw badState(`${name}.length must be a non-negative integer but is ${show(length)}`);
  }
  if (typeof yielded !== 'number' || !Number.isInteger(yielded) || yielded < 0 || yielded > length) {
    throw badState(`${name}.yielded must be an integer between 0 and ${length} but is ${show(yielded)}`);
  }
  return value as unknown as RankState;
}

/** Order indices not yet yielded in the epoch described by `state`. 0 means the epoch is complete. */
export function remainingInEpoch(state: EpochState): number {
  return state.samples - state.consumed - state.skip.length;
}
