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
import { EPOCH_STATE_VERSION, hashShardSizes } from './epoch-state.js';
import { RemainingIndex, resolveStart, type PlanNames } from './epoch-resume.js';
import { expectShuffleName, resolveBlockOptions, shuffles } from './shuffle/index.js';
import type { Seed, ShuffleName, ShuffleOptions } from './shuffle/index.js';
import {
  expectEpoch,
  expectInteger,
  expectSeed,
  expectShardSizes,
  invalidArg,
} from './shuffle/shuffle-args.js';

export { mergeRankStates, type PlanNames } from './epoch-resume.js';

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

/** planEpoch's own callers merge plan states with mergeRankStates(). */
const PLAN_NAMES: PlanNames = { merge: 'mergeRankStates()' };

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

