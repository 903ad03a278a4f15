/**
 * Resuming an epoch: the cursor a plan's deal starts from, read and checked from a saved state (`resumeFrom`), and
 * the merge of all ranks' states into one epoch state that any world size resumes. How the order is dealt from a
 * cursor is epoch-plan.ts's part.
 */
import type { EpochCursor, EpochState, OrderIdentity, RankState } from './epoch-state.js';
import {
  badState,
  EPOCH_STATE_VERSION,
  expectCursor,
  expectIdentityShape,
  expectRankStateShape,
  expectSameIdentity,
} from './epoch-state.js';

/**
 * Where a plan starts: the cursor its deal is computed from, and how many of this rank's dealt samples were
 * already yielded (`offset`, nonzero only when a rank resumes from its own state).
 */
export interface PlanStart {
  cursor: EpochCursor;
  offset: number;
}

/** Names the merge function in messages: `mergeRankStates()` for plan states, `mergeLoaderStates()` for loaders. */
export interface PlanNames {
  merge: string;
}

/**
 * The start: the beginning, or what `resumeFrom` says (checked against the identity). A rank state resumes
 * the same rank of the same world size where it stopped, keeping its plan's cursor so the states it saves
 * still merge with the other ranks'. A single rank's state also resumes on any world size (merged first).
 */
export function resolveStart(
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
export class RemainingIndex {
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
