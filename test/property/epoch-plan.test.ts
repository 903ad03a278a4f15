import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isShardkitError } from '../../formats/errors.js';
import type { EpochPlan, EpochPlanOptions, Partition } from '../../src/read/epoch-plan.js';
import { mergeRankStates, planEpoch, rankCounts } from '../../src/read/epoch-plan.js';
import type { EpochState, RankState } from '../../src/read/epoch-state.js';
import { remainingInEpoch } from '../../src/read/epoch-state.js';
import { SHUFFLE_NAMES } from '../../src/read/shuffle/index.js';

const shardSizesArb = fc.array(fc.nat({ max: 25 }), { minLength: 0, maxLength: 12 });
const seedArb = fc.oneof(fc.integer({ min: 0, max: 2 ** 31 }), fc.string({ maxLength: 8 }));
const shuffleArb = fc.constantFrom(...SHUFFLE_NAMES);
const partitionArb = fc.constantFrom<Partition>('pad', 'drop');
const worldArb = fc.integer({ min: 1, max: 7 });

const baseArb = fc.record({
  shardSizes: shardSizesArb,
  seed: seedArb,
  epoch: fc.nat({ max: 50 }),
  shuffle: shuffleArb,
});
type Base = Pick<EpochPlanOptions, 'seed' | 'epoch' | 'shuffle'> & { shardSizes: readonly number[] };

function total(sizes: readonly number[]): number {
  return sizes.reduce((a, b) => a + b, 0);
}

function plansFor(base: Base, worldSize: number, extra: Partial<EpochPlanOptions> = {}): EpochPlan[] {
  return Array.from({ length: worldSize }, (_, rank) => planEpoch({ ...base, ...extra, rank, worldSize }));
}

/** The samples among a rank's first k that are real (not padding): deal index rank + i*W below `remaining`. */
function realPrefix(plan: EpochPlan, k: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < k; i++) if (plan.rank + i * plan.worldSize < plan.remaining) out.push(plan.at(i));
  return out;
}

function sorted(values: Iterable<number>): number[] {
  return [...values].sort((a, b) => a - b);
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

function roundTrip<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

describe('partition', () => {
  it('pad: every rank gets ceil(N/W), every sample at least once, repeats only from the padding', () => {
    fc.assert(
      fc.property(baseArb, worldArb, (base, w) => {
        const n = total(base.shardSizes);
        const plans = plansFor(base, w, { partition: 'pad' });
        const perRank = Math.ceil(n / w);
        const all: number[] = [];
        for (const plan of plans) {
          expect(plan.length).toBe(perRank);
          const seq = [...plan.samples()];
          expect(seq).toHaveLength(perRank);
          // Strided over the global order: rank r takes r, r+W, r+2W, ... (padding wraps to the start).
          seq.forEach((position, i) => expect(position).toBe(plan.order[(plan.rank + i * w) % n]));
          all.push(...seq);
        }
        const padding = perRank * w - n;
        expect(plans[0]!.padding).toBe(padding);
        expect(padding).toBeLessThan(w);
        const order = plans[0]!.order;
        // Padding repeats the order from its start, wrapping when N < W.
        const repeats = range(padding).map((j) => order[j % n] as number);
        expect(sorted(all)).toEqual(sorted([...range(n), ...repeats]));
      }),
    );
  });

  it('drop: every rank gets floor(N/W), every sample at most once', () => {
    fc.assert(
      fc.property(baseArb, worldArb, (base, w) => {
        const n = total(base.shardSizes);
        const plans = plansFor(base, w, { partition: 'drop' });
        const all = plans.flatMap((plan) => {
          expect(plan.length).toBe(Math.floor(n / w));
          return [...plan.samples()];
        });
        expect(new Set(all).size).toBe(all.length);
        expect(sorted(all)).toEqual(sorted(plans[0]!.order.subarray(0, Math.floor(n / w) * w)));
      }),
    );
  });

  it('batches: dropLast drops only the short last batch, and the counts agree with rankCounts', () => {
    fc.assert(
      fc.property(baseArb, worldArb, partitionArb, fc.integer({ min: 1, max: 9 }), (base, w, partition, batchSize) => {
        const n = total(base.shardSizes);
        const keep = planEpoch({ ...base, worldSize: w, partition, batchSize });
        const drop = planEpoch({ ...base, worldSize: w, partition, batchSize, dropLast: true });
        expect(drop.length % batchSize).toBe(0);
        expect(keep.length - drop.length).toBe(keep.length % batchSize);
        expect([...drop.samples()]).toEqual([...keep.samples()].slice(0, drop.length));
        expect(drop.batches).toBe(drop.length / batchSize);
        expect(keep.batches).toBe(Math.ceil(keep.length / batchSize));
        expect(rankCounts(n, w, partition, batchSize, true)).toMatchObject({ length: drop.length, batches: drop.batches });
      }),
    );
  });
});

describe('resume', () => {
  it('single rank: state after any k samples resumes with exactly samples k..end', () => {
    fc.assert(
      fc.property(baseArb, partitionArb, fc.double({ min: 0, max: 1, noNaN: true }), (base, partition, cut) => {
        const plan = planEpoch({ ...base, partition });
        const k = Math.floor(cut * plan.length);
        const state = roundTrip(plan.state(k));
        const resumed = planEpoch({ ...base, partition, resumeFrom: state });
        expect([...resumed.samples()]).toEqual([...plan.samples()].slice(k));
        expect([...plan.samples(k)]).toEqual([...plan.samples()].slice(k));
      }),
    );
  });

  it('same world size at a step boundary: every rank continues its own sequence exactly', () => {
    fc.assert(
      fc.property(baseArb, worldArb, partitionArb, fc.double({ min: 0, max: 1, noNaN: true }), (base, w, partition, cut) => {
        const plans = plansFor(base, w, { partition });
        const k = Math.floor(cut * plans[0]!.length);
        const state = roundTrip(mergeRankStates(plans.map((p) => p.state(k))));
        expect(state.skip).toEqual([]);
        const resumed = plansFor(base, w, { partition, resumeFrom: state });
        resumed.forEach((plan, r) => expect([...plan.samples()]).toEqual([...plans[r]!.samples(k)]));
      }),
    );
  });

  it('any cut on any ranks, resumed on any world sizes: every sample exactly once over the epoch', () => {
    const phaseArb = fc.record({
      worldSize: worldArb,
      partition: partitionArb,
      cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 7, maxLength: 7 }),
    });
    fc.assert(
      fc.property(baseArb, fc.array(phaseArb, { minLength: 1, maxLength: 3 }), (base, phases) => {
        const n = total(base.shardSizes);
        const seen: number[] = [];
        let state: EpochState | undefined;
        for (const { worldSize, partition, cuts } of phases) {
          const plans = plansFor(base, worldSize, { partition, ...(state ? { resumeFrom: state } : {}) });
          expect(plans[0]!.remaining).toBe(state ? remainingInEpoch(state) : n);
          const states: RankState[] = plans.map((plan, r) => {
            const k = Math.floor((cuts[r] as number) * (plan.length + 1)) % (plan.length + 1);
            seen.push(...realPrefix(plan, k));
            return roundTrip(plan.state(k));
          });
          // Merge in a scrambled order: the result must not depend on it.
          state = roundTrip(mergeRankStates(states.reverse()));
          expect(JSON.stringify(state).length).toBeLessThan(600 + 12 * state.skip.length);
        }
        // A last single-rank phase reads whatever is left.
        const last = planEpoch({ ...base, partition: 'drop', resumeFrom: state! });
        seen.push(...last.samples());
        expect(sorted(seen)).toEqual(range(n));
        expect(remainingInEpoch(mergeRankStates([last.state(last.length)]))).toBe(0);
      }),
      { numRuns: 150 },
    );
  });

  it('same world size, any cuts: each rank resumed from its own state yields exactly its remaining samples', () => {
    fc.assert(
      fc.property(
        baseArb,
        worldArb,
        partitionArb,
        fc.integer({ min: 1, max: 9 }),
        fc.boolean(),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 7, maxLength: 7 }),
        (base, w, partition, batchSize, dropLast, cuts) => {
          const extra = { partition, batchSize, dropLast };
          const plans = plansFor(base, w, extra);
          const states = plans.map((plan, r) => {
            const k = Math.floor((cuts[r] as number) * (plan.length + 1)) % (plan.length + 1);
            return { k, state: roundTrip(plan.state(k)) };
          });
          const resumed = states.map(({ state }, rank) => planEpoch({ ...base, ...extra, rank, worldSize: w, resumeFrom: state }));
          resumed.forEach((plan, r) => {
            const { k } = states[r]!;
            expect([...plan.samples()]).toEqual([...plans[r]!.samples(k)]);
            expect(plan.length).toBe(plans[r]!.length - k);
            expect(plan.batches).toBe(Math.ceil(plan.length / batchSize));
            expect(plan.offset).toBe(k);
          });
          // States saved after a per-rank resume still merge with the others' (and with those never resumed):
          // the merge equals the one of the uninterrupted plans at the same counts.
          const later = resumed.map((plan, r) => {
            const j = Math.floor(((cuts[(r + 3) % 7] as number) * (plan.length + 1))) % (plan.length + 1);
            return { total: states[r]!.k + j, state: plan.state(j) };
          });
          expect(mergeRankStates(later.map((l) => l.state))).toEqual(
            mergeRankStates(plans.map((plan, r) => plan.state(later[r]!.total))),
          );
        },
      ),
    );
  });

  it('a rank state given to another rank or another world size is refused, naming the merge', () => {
    fc.assert(
      fc.property(baseArb, fc.integer({ min: 2, max: 7 }), fc.nat(), fc.nat(), (base, w, r1, r2) => {
        const rank = r1 % w;
        const state = planEpoch({ ...base, rank, worldSize: w }).state(0);
        const other = (rank + 1 + (r2 % (w - 1))) % w;
        for (const target of [{ rank: other, worldSize: w }, { rank: rank % (w - 1), worldSize: w - 1 }, { rank, worldSize: w + 1 }]) {
          expect(() => planEpoch({ ...base, ...target, resumeFrom: state })).toThrow(
            expect.objectContaining({ code: 'SHARDKIT_ERR_BAD_STATE', message: expect.stringContaining('merge the states of all') }),
          );
        }
      }),
    );
  });

  it('keeps the state small: its size does not grow with N at step boundaries', () => {
    const sizes = (n: number) => [n, n, n, n];
    const stateBytes = (n: number) => {
      const plans = plansFor({ shardSizes: sizes(n), seed: 'small', epoch: 1, shuffle: 'none' }, 4);
      return JSON.stringify(mergeRankStates(plans.map((p) => p.state(Math.floor(p.length / 2))))).length;
    };
    const small = stateBytes(10);
    const large = stateBytes(1_000_000);
    expect(large).toBeLessThan(400);
    expect(large - small).toBeLessThanOrEqual(12); // only the digits of N and consumed
  });
});

describe('validation', () => {
  const base = { shardSizes: [3, 4, 5], seed: 7, epoch: 2, shuffle: 'block' } as const;
  const code = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (err) {
      return isShardkitError(err) ? err.code : 'not a ShardkitError';
    }
    return undefined;
  };

  it('rejects bad options with INVALID_ARG and sharp-style messages', () => {
    expect(() => planEpoch({ ...base, rank: 3, worldSize: 3 })).toThrow(
      'Expected integer between 0 and 2 for rank but received 3 of type number',
    );
    for (const bad of [
      { worldSize: 0 },
      { epoch: -1 },
      { epoch: 0.5 },
      { seed: 1.5 },
      { seed: null },
      { shuffle: 'random' },
      { partition: 'even' },
      { batchSize: 0 },
      { dropLast: 'yes' },
      { shardSizes: [1, -2] },
      { shuffleOptions: { windowShards: 0 } },
    ]) {
      expect(code(() => planEpoch({ ...base, ...(bad as object) } as EpochPlanOptions))).toBe('SHARDKIT_ERR_INVALID_ARG');
    }
    const plan = planEpoch(base);
    expect(code(() => plan.at(plan.length))).toBe('SHARDKIT_ERR_OUT_OF_RANGE');
    expect(code(() => plan.state(plan.length + 1))).toBe('SHARDKIT_ERR_INVALID_ARG');
  });

  const LONG_SEED = 'experiment-2026-11-22/imagenet/resnet50/run-0001/seed-'.padEnd(80, 'x');

  it('rejects states that do not match, are incomplete or were tampered with, with BAD_STATE', () => {
    const plans = plansFor(base, 3);
    const states = plans.map((p) => p.state(2));
    const merged = mergeRankStates(states);
    const bad: [string, () => unknown][] = [
      ['other seed', () => planEpoch({ ...base, seed: 8, resumeFrom: merged })],
      ['other epoch', () => planEpoch({ ...base, epoch: 3, resumeFrom: merged })],
      ['other shuffle', () => planEpoch({ ...base, shuffle: 'full', resumeFrom: merged })],
      ['other window', () => planEpoch({ ...base, shuffleOptions: { windowShards: 2 }, resumeFrom: merged })],
      ['other layout', () => planEpoch({ ...base, shardSizes: [4, 3, 5], resumeFrom: merged })],
      ['newer version', () => planEpoch({ ...base, resumeFrom: { ...merged, version: 2 } as never })],
      ['consumed > N', () => planEpoch({ ...base, resumeFrom: { ...merged, consumed: 13 } })],
      ['unsorted skip', () => planEpoch({ ...base, resumeFrom: { ...merged, skip: [9, 8] } })],
      ['skip below cursor', () => planEpoch({ ...base, resumeFrom: { ...merged, skip: [merged.consumed - 1] } })],
      ['rank state of W=3', () => planEpoch({ ...base, resumeFrom: states[0]! })],
      ['rank 0 state on rank 1', () => planEpoch({ ...base, rank: 1, worldSize: 3, resumeFrom: states[0]! })],
      ['own state, other batching', () => planEpoch({ ...base, rank: 0, worldSize: 3, batchSize: 3, dropLast: true, resumeFrom: states[0]! })],
      ['own state, length over the deal', () => planEpoch({ ...base, rank: 0, worldSize: 3, resumeFrom: { ...states[0]!, length: 99, yielded: 9 } })],
      ['missing rank', () => mergeRankStates(states.slice(0, 2))],
      ['duplicate rank', () => mergeRankStates([states[0]!, states[0]!, states[2]!])],
      ['mixed plans', () => mergeRankStates([states[0]!, states[1]!, plansFor({ ...base, seed: 9 }, 3)[2]!.state(2)])],
      ['yielded > length', () => mergeRankStates([states[0]!, states[1]!, { ...states[2]!, yielded: 99 }])],
      // consistent with itself, but longer than any rank of this epoch: it would skip samples nobody read
      ['length over the deal', () => mergeRankStates([states[0]!, states[1]!, { ...states[2]!, length: 99, yielded: 99 }])],
      ['one rank, length over the deal', () => planEpoch({ ...base, resumeFrom: { ...planEpoch(base).state(2), length: 1000, yielded: 999 } })],
      ['empty', () => mergeRankStates([])],
      ['not an object', () => planEpoch({ ...base, resumeFrom: 'state' as never })],
      // long seeds that differ only past what an error message shows of them
      ['other long seed', () => planEpoch({ ...base, seed: `${LONG_SEED}b`, resumeFrom: planEpoch({ ...base, seed: `${LONG_SEED}a` }).state(2) })],
      ['mixed long seeds', () => mergeRankStates([...plansFor({ ...base, seed: `${LONG_SEED}a` }, 2).map((p) => p.state(2)).slice(0, 1), plansFor({ ...base, seed: `${LONG_SEED}b` }, 2)[1]!.state(2)])],
    ];
    for (const [why, fn] of bad) expect([why, code(fn)]).toEqual([why, 'SHARDKIT_ERR_BAD_STATE']);
    expect(() => planEpoch({ ...base, seed: 8, resumeFrom: merged })).toThrow(
      'resumeFrom was saved with seed 7 but this loader has 8: resume with the same dataset, seed, epoch and shuffle options',
    );
  });
});
