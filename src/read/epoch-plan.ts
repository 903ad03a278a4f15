/**
 * One rank's share of one epoch: which samples it reads, in which order, from where it resumes.
 *
 * The epoch's order is `shuffles[shuffle](shardSizes, seed, epoch, shuffleOptions)` and never depends on the
 * number of ranks. What is left of it (everything, or the suffix after a resume cursor) is dealt to the ranks
 * like cards: rank r takes remaining indices r, r+W, r+2W, ... so the ranks advance through the order together
 * and a checkpoint taken when every rank yielded k samples is exactly "the first k*W remaining indices".
 * Because the deal is recomputed from the cursor, a job can resume on a different number of ranks. A rank can
 * also resume from its own state alone (same world size): it continues its deal where it stopped.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { EpochCursor, EpochState, OrderIdentity, RankState } from './epoch-state.js';
import {
  badState,
  EPOCH_STATE_VERSION,
  expectCursor,
  expectIdentityShape,
  expectRankStateShape,
  expectSameIdentity,
  hashShardSizes,
} from './epoch-state.js';
import { expectShuffleName, resolveBlockOptions, shuffles } from './shuffle/index.js';
import type { Seed, ShuffleName, ShuffleOptions } from './shuffle/index.js';
import {
  expectEpoch,
  expectInteger,
  expectSeed,
  expectShardSizes,
  invalidArg,
} from './shuffle/shuffle-args.js';

/**
 * How the remaining samples are split when they do not divide evenly by the number of ranks.
 * - `pad` (default, like PyTorch's DistributedSampler): every rank gets ceil(R/W) samples; the shortfall is
 *   filled by repeating the epoch's order from its start (wrapping when N < W), so every sample is seen at
 *   least once and fewer than W repeats are added in total.
 * - `drop`: every rank gets floor(R/W); the last R mod W samples of the order are not read this epoch.
 */
export type Partition = 'pad' | 'drop';

export interface EpochPlanOptions {
  /** Samples per shard; shard s holds the positions right after shard s-1's. */
  shardSizes: ArrayLike<number>;
  /** Safe integer or string; the same seed gives the same orders on every machine. */
  seed: Seed;
  /** Non-negative integer; each epoch has its own order. */
  epoch: number;
  /** Algorithm name from the shuffle registry. */
  shuffle: ShuffleName;
  shuffleOptions?: ShuffleOptions;
  /** This process's rank, 0 <= rank < worldSize. Default 0. */
  rank?: number;
  /** Number of ranks sharing the epoch. Default 1. */
  worldSize?: number;
  /** Default 'pad'. */
  partition?: Partition;
  /** Samples per batch, for `batches` and `dropLast`. Default 1. */
  batchSize?: number;
  /** Drop this rank's last batch when it is shorter than batchSize. Default false. */
  dropLast?: boolean;
  /**
   * Continue an epoch: an EpochState (from `mergeRankStates`, on any world size), or this rank's own RankState
   * as returned by `plan.state()` (same rank, world size, partition, batchSize and dropLast), or the RankState of a
   * job that had one rank (on any world size). The plan then yields only what the state says was not yielded.
   */
  resumeFrom?: EpochState | RankState;
}

/** How many samples each rank reads, given R remaining samples; what `planEpoch` uses, exposed for loaders. */
export interface RankCounts {
  /** Samples dealt to each rank (every rank gets the same number). */
  perRank: number;
  /** Samples a rank yields: perRank, minus the short last batch when dropLast. */
  length: number;
  /** Batches a rank yields (the last one may be short unless dropLast). */
  batches: number;
  /** Repeated samples added over all ranks to even out the deal ('pad' only; < worldSize). */
  padding: number;
}

/** The per-rank counts for R remaining samples over `worldSize` ranks. Arguments must be valid integers. */
export function rankCounts(
  remaining: number,
  worldSize: number,
  partition: Partition,
  batchSize = 1,
  dropLast = false,
): RankCounts {
  const perRank = partition === 'pad' ? Math.ceil(remaining / worldSize) : Math.floor(remaining / worldSize);
  const batches = dropLast ? Math.floor(perRank / batchSize) : Math.ceil(perRank / batchSize);
  const length = dropLast ? batches * batchSize : perRank;
  return { perRank, length, batches, padding: partition === 'pad' ? perRank * worldSize - remaining : 0 };
}

export interface EpochPlan {
  readonly epoch: number;
  readonly rank: number;
  readonly worldSize: number;
  /** The epoch's order (same on every rank and world size). Shared: do not modify it. */
  readonly order: Uint32Array;
  /**
   * Order indices not yet yielded by any rank at the cursor this plan's deal starts from (R): the start of the
   * epoch, the merged state resumed from, or, when a rank resumes its own state, the cursor its first plan had.
   */
  readonly remaining: number;
  /** This rank's dealt samples already yielded before this plan: a rank state's `yielded` when resuming it, else 0. */
  readonly offset: number;
  /** Samples this rank yields (its share from the resume point, after partition and dropLast). */
  readonly length: number;
  /** Batches of batchSize this rank yields; the last is short unless dropLast. */
  readonly batches: number;
  /** Repeats added over all ranks by 'pad'. */
  readonly padding: number;
  /** The sample position (key order, what `Dataset.at` takes) of this rank's i-th sample, 0 <= i < length. */
  at(i: number): number;
  /** This rank's sample positions from its `from`-th sample to the end, computed lazily. */
  samples(from?: number): IterableIterator<number>;
  /** The JSON state after this rank yielded its first `yielded` samples (0 <= yielded <= length). */
  state(yielded: number): RankState;
}

function resolveShuffleOptions(name: ShuffleName, options: ShuffleOptions | undefined): { windowShards?: number } {
  if (name === 'block') return resolveBlockOptions(options);
  if (options !== undefined && (typeof options !== 'object' || options === null || Array.isArray(options))) {
    throw invalidArg('object', 'shuffleOptions', options);
  }
  return {};
}

/** Validates options and builds the identity of the epoch's order. */
function resolveIdentity(options: EpochPlanOptions): OrderIdentity {
  const samples = expectShardSizes(options.shardSizes);
  const shuffle = expectShuffleName(options.shuffle);
  return {
    version: EPOCH_STATE_VERSION,
    seed: expectSeed(options.seed),
    epoch: expectEpoch(options.epoch),
    shuffle,
    shuffleOptions: resolveShuffleOptions(shuffle, options.shuffleOptions),
    samples,
    shards: options.shardSizes.length,
    shardSizesHash: hashShardSizes(options.shardSizes),
  };
}

/**
 * Where a plan starts: the cursor its deal is computed from, and how many of this rank's dealt samples were
 * already yielded (`offset`, nonzero only when a rank resumes from its own state).
 */
interface PlanStart {
  cursor: EpochCursor;
  offset: number;
}

/** Names the merge function in messages: `mergeRankStates()` for plan states, `mergeLoaderStates()` for loaders. */
export interface PlanNames {
  merge: string;
}

const PLAN_NAMES: PlanNames = { merge: 'mergeRankStates()' };

/**
 * The start: the beginning, or what `resumeFrom` says (checked against the identity). A rank state resumes
 * the same rank of the same world size where it stopped, keeping its plan's cursor so the states it saves
 * still merge with the other ranks'. A single rank's state also resumes on any world size (merged first).
 */
function resolveStart(
  resumeFrom: unknown,
  identity: OrderIdentity,
  rank: number,
  worldSize: number,
  lengthFrom: (cursor: EpochCursor) => number,
  names: PlanNames,
): PlanStart {
  if (resumeFrom === undefined) return { cursor: { consumed: 0, skip: [] }, offset: 0 };
  if (typeof resumeFrom !== 'object' || resumeFrom === null || Array.isArray(resumeFrom)) {
    throw badState(`Expected a loader state object for resumeFrom but received ${String(resumeFrom)}`);
  }
  const state = resumeFrom as Record<string, unknown>;
  if (state['kind'] === 'rank') {
    const own = expectRankStateShape(state, 'resumeFrom');
    if (own.rank === rank && own.worldSize === worldSize) {
      expectSameIdentity(state, identity, 'resumeFrom');
      const cursor = expectCursor(own.start, identity.samples, 'resumeFrom.start');
      const length = lengthFrom(cursor);
      if (length === own.length) return { cursor, offset: own.yielded };
      // One rank alone may change its batching: merged below, its remaining samples are dealt afresh.
      if (worldSize !== 1) {
        throw badState(
          `resumeFrom gave rank ${rank} of ${worldSize} ${own.length} samples but this loader gives it ${length}: ` +
            `resume with the same partition, batchSize and dropLast, or merge the states of all ranks with ${names.merge}`,
        );
      }
    } else if (own.worldSize !== 1) {
      const mine = `this loader is rank ${rank} of ${worldSize}`;
      throw badState(
        `resumeFrom is the state of rank ${own.rank} of ${own.worldSize}, but ${mine}: ` +
          (own.worldSize === worldSize
            ? `give each rank its own state, or merge the states of all ranks with ${names.merge} and resume every rank from the result`
            : `to change the world size, merge the states of all ${own.worldSize} ranks with ${names.merge} and resume every rank from the result`),
      );
    }
    const merged = mergeRankStates([state as unknown as RankState]);
    expectSameIdentity(merged as unknown as Record<string, unknown>, identity, 'resumeFrom');
    return { cursor: { consumed: merged.consumed, skip: merged.skip }, offset: 0 };
  }
  if (state['kind'] !== 'epoch') {
    throw badState(`resumeFrom.kind must be "epoch" or "rank" but is ${JSON.stringify(state['kind'])}`);
  }
  expectSameIdentity(state, identity, 'resumeFrom');
  return { cursor: expectCursor(state, identity.samples, 'resumeFrom'), offset: 0 };
}

/**
 * Maps "the q-th order index not yet yielded" to the order index, for a cursor. Without a skip list that is
 * consumed + q; with one, a binary search over `skip[t] - consumed - t` (how many unyielded indices precede
 * skip[t]), which never decreases.
 */
class RemainingIndex {
  private readonly consumed: number;
  private readonly before: number[] | undefined;

  constructor(cursor: EpochCursor) {
    const consumed = cursor.consumed;
    this.consumed = consumed;
    this.before = cursor.skip.length === 0 ? undefined : cursor.skip.map((index, t) => index - consumed - t);
  }

  toOrderIndex(q: number): number {
    const before = this.before;
    if (before === undefined) return this.consumed + q;
    let lo = 0;
    let hi = before.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((before[mid] as number) <= q) lo = mid + 1;
      else hi = mid;
    }
    return this.consumed + q + lo;
  }
}

/**
 * One rank's share of an epoch's order: what planEpoch returns. A class, not an object of closures: every plan's `at`
 * is then one function, so the loader's code that V8 optimized for one epoch's plan stays valid for the next
 * (a closure per plan was a new call target each epoch: a deoptimization and a recompile of the loader's path).
 */
class RankPlan implements EpochPlan {
  readonly epoch: number;
  /** Samples this rank yields: those dealt to it from `offset` on. */
  readonly length: number;
  readonly batches: number;
  private readonly unyielded: RemainingIndex;

  constructor(
    private readonly identity: OrderIdentity,
    readonly rank: number,
    readonly worldSize: number,
    readonly order: Uint32Array,
    private readonly start: EpochCursor,
    readonly remaining: number,
    readonly offset: number,
    /** Samples dealt to this rank from the start of its deal (offset included). */
    private readonly dealt: number,
    batchSize: number,
    readonly padding: number,
  ) {
    this.epoch = identity.epoch;
    this.length = dealt - offset;
    this.batches = Math.ceil(this.length / batchSize);
    this.unyielded = new RemainingIndex(start);
  }

  at(i: number): number {
    const length = this.length;
    if (!Number.isInteger(i) || i < 0 || i >= length) {
      throw new ShardkitError(ErrorCodes.OUT_OF_RANGE, `Expected integer between 0 and ${length - 1} for sample index but received ${i}`);
    }
    const q = this.rank + (this.offset + i) * this.worldSize;
    // Past the remaining indices: padding, which repeats the order from its start.
    const index = q < this.remaining ? this.unyielded.toOrderIndex(q) : (q - this.remaining) % this.identity.samples;
    return this.order[index] as number;
  }

  samples(from = 0): IterableIterator<number> {
    const length = this.length;
    expectInteger(from, 0, length, 'from'); // eagerly, not on the first next()
    return (function* (plan: RankPlan) {
      for (let i = from; i < length; i++) yield plan.at(i);
    })(this);
  }

  state(yielded: number): RankState {
    expectInteger(yielded, 0, this.length, 'yielded');
    // Counted from the start of the rank's deal, so this state merges with the other ranks' states.
    return {
      ...this.identity,
      shuffleOptions: { ...this.identity.shuffleOptions },
      kind: 'rank',
      rank: this.rank,
      worldSize: this.worldSize,
      start: { consumed: this.start.consumed, skip: this.start.skip.slice() },
      length: this.dealt,
      yielded: this.offset + yielded,
    };
  }
}

/**
 * Plans one rank's share of one epoch. Computes the epoch's order (O(N) time, 4 bytes per sample) and
 * returns an object that yields this rank's sample positions lazily from any point.
 *
 * @example
 * const plan = planEpoch({ shardSizes, seed: 42, epoch: 0, shuffle: 'block', rank, worldSize });
 * for (const position of plan.samples()) await ds.at(position);
 * // checkpoint at a step boundary: collect plan.state(k) from every rank, then
 * const state = mergeRankStates(allRankStates);           // JSON, small
 * const next = planEpoch({ ...sameOptions, worldSize: 8, resumeFrom: state }); // any world size
 */
export function planEpoch(options: EpochPlanOptions, names: PlanNames = PLAN_NAMES): EpochPlan {
  if (typeof options !== 'object' || options === null) throw invalidArg('object', 'options', options);
  const identity = resolveIdentity(options);
  const worldSize = expectInteger(options.worldSize ?? 1, 1, 2 ** 31 - 1, 'worldSize');
  const rank = expectInteger(options.rank ?? 0, 0, worldSize - 1, 'rank');
  const partition = options.partition ?? 'pad';
  if (partition !== 'pad' && partition !== 'drop') throw invalidArg('one of pad, drop', 'partition', partition);
  const batchSize = expectInteger(options.batchSize ?? 1, 1, 2 ** 31 - 1, 'batchSize');
  const dropLast = options.dropLast ?? false;
  if (typeof dropLast !== 'boolean') throw invalidArg('boolean', 'dropLast', dropLast);
  const lengthFrom = (cursor: EpochCursor): number =>
    rankCounts(identity.samples - cursor.consumed - cursor.skip.length, worldSize, partition, batchSize, dropLast).length;
  const { cursor: start, offset } = resolveStart(options.resumeFrom, identity, rank, worldSize, lengthFrom, names);

  const order = shuffles[identity.shuffle](
    options.shardSizes,
    identity.seed,
    identity.epoch,
    identity.shuffleOptions,
  );
  const remaining = identity.samples - start.consumed - start.skip.length;
  const counts = rankCounts(remaining, worldSize, partition, batchSize, dropLast);
  // This plan yields the rank's dealt samples from `offset` on (0 unless it resumes the rank's own state).
  return new RankPlan(identity, rank, worldSize, order, start, remaining, offset, counts.length, batchSize, counts.padding);
}

/**
 * Merges the states of all W ranks of one job (any order, each rank exactly once) into the job's EpochState.
 *
 * Semantics when ranks yielded different counts (a checkpoint not at a step boundary): nothing is repeated
 * and nothing is lost. The new `consumed` is the first remaining index no rank yielded (min over ranks r of
 * r + k_r*W in the deal), and the indices beyond it that faster ranks already yielded are listed in `skip`
 * (at most W * (max k - min k) of them; none when every rank yielded the same count). Padding repeats never
 * count as consumed. Throws BAD_STATE when states are missing, duplicated, or from different plans.
 */
export function mergeRankStates(states: readonly RankState[]): EpochState {
  if (!Array.isArray(states) || states.length === 0) {
    throw badState('mergeRankStates needs the states of all ranks but received none');
  }
  const first = expectRankStateShape(states[0], 'states[0]');
  // Version first, so a state from a newer shardkit says so rather than failing on a renamed field.
  expectSameIdentity(first as unknown as Record<string, unknown>, first, 'states[0]');
  const identity = expectIdentityShape(first as unknown as Record<string, unknown>, 'states[0]');
  const worldSize = first.worldSize;
  const start = expectCursor(first.start, identity.samples, 'states[0].start');
  if (states.length !== worldSize) {
    throw badState(`mergeRankStates needs all ${worldSize} rank states but received ${states.length}`);
  }
  const remaining = identity.samples - start.consumed - start.skip.length;
  // A rank is dealt at most ceil(remaining / W) samples (padding included): a longer rank is no rank of this epoch
  const mostPerRank = Math.ceil(remaining / worldSize);
  const yieldedByRank: number[] = new Array<number>(worldSize).fill(-1);
  states.forEach((raw, i) => {
    const state = expectRankStateShape(raw, `states[${i}]`);
    expectSameIdentity(state as unknown as Record<string, unknown>, identity, `states[${i}]`);
    if (state.worldSize !== worldSize) {
      throw badState(`states[${i}] has worldSize ${state.worldSize} but states[0] has ${worldSize}`);
    }
    // compared by value: a state file rewritten with its keys in another order (jq -S) is the same state
    const other = expectCursor(state.start, identity.samples, `states[${i}].start`);
    if (other.consumed !== start.consumed || other.skip.length !== start.skip.length || other.skip.some((v, k) => v !== start.skip[k])) {
      throw badState(`states[${i}] started from another cursor than states[0]: they are not from one plan`);
    }
    if (state.length > mostPerRank) {
      throw badState(`states[${i}].length is ${state.length}, but a rank of ${worldSize} is dealt at most ${mostPerRank} of the ${remaining} samples its plan started with`);
    }
    if (yieldedByRank[state.rank] !== -1) throw badState(`mergeRankStates received rank ${state.rank} twice`);
    yieldedByRank[state.rank] = state.yielded;
  });

  const unyielded = new RemainingIndex(start);
  // First remaining index (in deal order) that no rank yielded.
  let firstUnyielded = Infinity;
  yieldedByRank.forEach((k, r) => {
    firstUnyielded = Math.min(firstUnyielded, r + k * worldSize);
  });
  const consumed = firstUnyielded < remaining ? unyielded.toOrderIndex(firstUnyielded) : identity.samples;
  const skip = start.skip.filter((index) => index >= consumed);
  yieldedByRank.forEach((k, r) => {
    // Rank r yielded remaining indices r + i*W for i < k; those past firstUnyielded are ahead of the cursor.
    const firstAhead = Math.max(0, Math.ceil((firstUnyielded + 1 - r) / worldSize));
    for (let i = firstAhead; i < k; i++) {
      const q = r + i * worldSize;
      if (q >= remaining) break; // padding
      skip.push(unyielded.toOrderIndex(q));
    }
  });
  skip.sort((a, b) => a - b);
  return {
    version: EPOCH_STATE_VERSION,
    seed: identity.seed,
    epoch: identity.epoch,
    shuffle: identity.shuffle,
    shuffleOptions: { ...identity.shuffleOptions },
    samples: identity.samples,
    shards: identity.shards,
    shardSizesHash: identity.shardSizesHash,
    kind: 'epoch',
    consumed,
    skip,
  };
}
