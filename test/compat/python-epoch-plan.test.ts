/**
 * The epoch plan is one order whatever the language (formats/SPEC.md "Epoch plan"): for random datasets and
 * options, Python's shardkit.EpochPlan yields the Node plan's batches, its states are Node's JSON (key order
 * included), each side merges and resumes the other's states, and both refuse the same bad states. Python runs
 * as /usr/bin/python3 (formats/python/tests/plan_peer.py).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { isShardkitError } from '../../formats/errors.js';
import { mergeRankStates, planEpoch, type EpochPlanOptions, type Partition } from '../../src/read/epoch-plan.js';
import type { EpochState, RankState } from '../../src/read/epoch-state.js';
import { mergeLoaderStates, type LoaderState } from '../../src/read/loader-state.js';
import { openDataset } from '../../src/read/dataset.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { PythonPeer } from '../helpers/python-peer.js';
import { tmpDir } from '../helpers/tmp.js';
import { hasTool } from '../helpers/tools.js';

const python = hasTool('/usr/bin/python3') ? new PythonPeer('plan_peer.py') : undefined;
afterAll(() => python?.close());

interface PlanOptions {
  seed: number | string;
  epoch: number;
  shuffle: 'none' | 'full' | 'block';
  windowShards?: number;
  worldSize: number;
  partition: Partition;
  batchSize: number;
  dropLast: boolean;
  resumeFrom?: unknown;
}
interface PythonRank {
  rank: number;
  length: number;
  batches: number[][];
  padding: number;
  remaining: number;
  states: unknown[];
}
type Reply<T> = T | { error: string; message: string };

const seedArb = fc.oneof(
  fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }),
  fc.nat({ max: 100 }),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }), // astral characters
  fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u)), maxLength: 3 }), // lone surrogates
);
const optionsArb: fc.Arbitrary<PlanOptions> = fc
  .record({
    seed: seedArb,
    epoch: fc.oneof(fc.nat({ max: 20 }), fc.constant(2 ** 53 - 1)),
    shuffle: fc.constantFrom('none', 'full', 'block') as fc.Arbitrary<PlanOptions['shuffle']>,
    windowShards: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
    worldSize: fc.integer({ min: 1, max: 6 }),
    partition: fc.constantFrom<Partition>('pad', 'drop'),
    batchSize: fc.integer({ min: 1, max: 5 }),
    dropLast: fc.boolean(),
  })
  .map((o) => {
    if (o.shuffle === 'block') return o;
    const { windowShards: _unused, ...rest } = o;
    return rest;
  });
const sizesArb = fc.array(fc.nat({ max: 30 }), { maxLength: 12 });

function nodeOptions(sizes: number[], o: PlanOptions, rank: number): EpochPlanOptions {
  const { windowShards, resumeFrom, ...rest } = o;
  return {
    ...rest,
    shardSizes: sizes,
    rank,
    ...(windowShards === undefined ? {} : { shuffleOptions: { windowShards } }),
    ...(resumeFrom === undefined ? {} : { resumeFrom: resumeFrom as EpochState }),
  };
}

function nodeBatches(plan: ReturnType<typeof planEpoch>, batchSize: number): number[][] {
  const out: number[][] = [];
  for (let first = 0; first < plan.length; first += batchSize) {
    out.push(Array.from({ length: Math.min(batchSize, plan.length - first) }, (_, i) => plan.at(first + i)));
  }
  return out;
}

/** JSON text, key order included: what a saved state file holds. */
function text(value: unknown): string {
  return JSON.stringify(value);
}

async function pythonPlans(sizes: number[], options: PlanOptions, stateAt: Record<string, number[]> = {}, datasetIdentity?: unknown) {
  const reply = await python!.ask<Reply<{ ranks: PythonRank[] }>>({
    op: 'plans',
    sizes,
    options,
    ranks: Array.from({ length: options.worldSize }, (_, r) => r),
    stateAt,
    ...(datasetIdentity === undefined ? {} : { datasetIdentity }),
  });
  if ('error' in reply) throw new Error(`python: ${reply.error}: ${reply.message}`);
  return reply.ranks;
}

function errorCode(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (isShardkitError(e)) return e.code;
    throw e;
  }
}

describe.skipIf(python === undefined)('epoch plan across languages', () => {
  it('the order, batches and counts of every rank are the same in Python', async () => {
    await fc.assert(
      fc.asyncProperty(sizesArb, optionsArb, async (sizes, options) => {
        const ranks = await pythonPlans(sizes, options);
        for (let rank = 0; rank < options.worldSize; rank++) {
          const plan = planEpoch(nodeOptions(sizes, options, rank));
          const py = ranks[rank]!;
          expect(py.length).toBe(plan.length);
          expect(py.padding).toBe(plan.padding);
          expect(py.batches).toEqual(nodeBatches(plan, options.batchSize));
          expect(py.batches.length).toBe(plan.batches);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('a large full and block order are the same permutation', async () => {
    const sizes = Array.from({ length: 40 }, (_, s) => 900 + ((s * 37) % 250));
    const cases: PlanOptions[] = [
      { seed: 'imagenet-1k', epoch: 7, shuffle: 'full', worldSize: 1, partition: 'pad', batchSize: 1, dropLast: false },
      { seed: 123456789, epoch: 0, shuffle: 'block', windowShards: 3, worldSize: 1, partition: 'pad', batchSize: 1, dropLast: false },
    ];
    for (const options of cases) {
      const reply = await python!.ask<{ order: number[] }>({ op: 'order', sizes, options });
      expect(reply.order).toEqual([...planEpoch(nodeOptions(sizes, options, 0)).order]);
    }
  });

  it('rank states are Node\'s JSON; each side merges the other\'s and resumes it on another world size', async () => {
    await fc.assert(
      fc.asyncProperty(
        sizesArb.filter((s) => s.some((n) => n > 0)),
        optionsArb,
        fc.array(fc.nat(), { minLength: 6, maxLength: 6 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        async (sizes, options, picks, newWorld, newBatch) => {
          const W = options.worldSize;
          const plans = Array.from({ length: W }, (_, r) => planEpoch(nodeOptions(sizes, options, r)));
          // Each rank stops at its own count: at a step boundary or not.
          const yielded = plans.map((p, r) => (picks[r] as number) % (p.length + 1));
          const stateAt = Object.fromEntries(yielded.map((k, r) => [String(r), [k]]));
          const py = await pythonPlans(sizes, options, stateAt);
          const nodeStates = plans.map((p, r) => p.state(yielded[r] as number));
          const pyStates = py.map((r) => r.states[0] as RankState);
          expect(pyStates.map(text)).toEqual(nodeStates.map(text));

          // Python merges Node's states; Node merges Python's: one epoch state.
          const nodeMerged = mergeRankStates(nodeStates);
          const pyMerged = await python!.ask<EpochState>({ op: 'merge', states: [...nodeStates].reverse() });
          expect(text(pyMerged)).toBe(text(nodeMerged));
          expect(text(mergeRankStates(pyStates))).toBe(text(nodeMerged));

          // Both resume the merged state on a new world size with the same samples.
          const resumed: PlanOptions = { ...options, worldSize: newWorld, batchSize: newBatch, resumeFrom: pyMerged };
          const pyResumed = await pythonPlans(sizes, resumed);
          for (let r = 0; r < newWorld; r++) {
            const node = planEpoch(nodeOptions(sizes, { ...resumed, resumeFrom: nodeMerged }, r));
            expect(pyResumed[r]!.batches).toEqual(nodeBatches(node, newBatch));
            expect(pyResumed[r]!.remaining).toBe(node.remaining);
          }
        },
      ),
      { numRuns: 120 },
    );
  });

  it('a one-rank state resumes directly, either way', async () => {
    await fc.assert(
      fc.asyncProperty(sizesArb, optionsArb, fc.nat(), async (sizes, o, pick) => {
        const options = { ...o, worldSize: 1 };
        const plan = planEpoch(nodeOptions(sizes, options, 0));
        const k = pick % (plan.length + 1);
        const [py] = await pythonPlans(sizes, { ...options, resumeFrom: plan.state(k) });
        const node = planEpoch(nodeOptions(sizes, { ...options, resumeFrom: plan.state(k) }, 0));
        expect(py!.batches).toEqual(nodeBatches(node, options.batchSize));
      }),
      { numRuns: 60 },
    );
  });

  it('both refuse the same bad states with BAD_STATE', async () => {
    const sizes = [5, 0, 7, 3];
    const options: PlanOptions = { seed: 'x', epoch: 2, shuffle: 'block', worldSize: 3, partition: 'pad', batchSize: 2, dropLast: false };
    const states = [0, 1, 2].map((r) => planEpoch(nodeOptions(sizes, options, r)).state(r + 1));
    const merged = mergeRankStates(states);
    const cases: Array<{ name: string; merge?: unknown[]; resume?: unknown }> = [
      { name: 'a rank missing', merge: states.slice(0, 2) },
      { name: 'a rank twice', merge: [states[0], states[0], states[1]] },
      { name: 'no states', merge: [] },
      { name: 'another seed', merge: [states[0], { ...states[1], seed: 'y' }, states[2]] },
      { name: 'a newer version', merge: [{ ...states[0], version: 2 }, states[1], states[2]] },
      { name: 'yielded past length', merge: [states[0], { ...states[1], yielded: 99 }, states[2]] },
      { name: 'length past the deal', merge: [{ ...states[0], length: 9, yielded: 9 }, states[1], states[2]] },
      { name: 'another start', merge: [states[0], { ...states[1], start: { consumed: 1, skip: [] } }, states[2]] },
      { name: 'merged twice', merge: [merged] },
      { name: 'one rank of three', resume: states[0] },
      { name: 'another epoch', resume: { ...merged, epoch: 3 } },
      { name: 'another window', resume: { ...merged, shuffleOptions: { windowShards: 5 } } },
      { name: 'another layout', resume: { ...merged, shardSizesHash: '0000000000000000' } },
      { name: 'skip not increasing', resume: { ...merged, skip: [9, 8] } },
      { name: 'consumed past N', resume: { ...merged, consumed: 16 } },
      { name: 'an unknown kind', resume: { ...merged, kind: 'job' } },
      { name: 'not a state', resume: 'state' },
    ];
    // a state file rewritten with its keys in another order (jq -S) is the same state, on both sides
    const reordered = [{ ...states[0], start: { skip: [], consumed: 0 } }, states[1], states[2]] as RankState[];
    expect(text(mergeRankStates(reordered))).toBe(text(merged));
    expect(text(await python!.ask({ op: 'merge', states: reordered }))).toBe(text(merged));
    for (const c of cases) {
      let nodeCode: string | undefined;
      let reply: unknown;
      if (c.merge !== undefined) {
        nodeCode = errorCode(() => mergeRankStates(c.merge as RankState[]));
        reply = await python!.ask({ op: 'merge', states: c.merge });
      } else {
        nodeCode = errorCode(() => planEpoch(nodeOptions(sizes, { ...options, worldSize: 1, resumeFrom: c.resume }, 0)));
        reply = await python!.ask({ op: 'plans', sizes, options: { ...options, worldSize: 1, resumeFrom: c.resume }, ranks: [0] });
      }
      expect({ name: c.name, code: nodeCode }).toEqual({ name: c.name, code: 'SHARDKIT_ERR_BAD_STATE' });
      expect({ name: c.name, code: (reply as { error?: string }).error }).toEqual({ name: c.name, code: nodeCode });
    }
  });

  it('the Node loader yields Python\'s batches; its loader.state() is Python\'s, and each resumes the other\'s', async () => {
    const dir = await writeLoaderDataset(tmpDir(), 157);
    const ds = await openDataset(dir);
    try {
      const sizes = ds.shards.map((s) => s.samples);
      expect(sizes.length).toBeGreaterThan(3);
      const identity = { index: ds.manifest.index.crc32c, samples: ds.size };
      const options: PlanOptions & { resumeFrom?: never } = { seed: 'loader', epoch: 3, shuffle: 'block', windowShards: 2, worldSize: 2, partition: 'drop', batchSize: 8, dropLast: false };
      const py = await pythonPlans(sizes, options, { 0: [16], 1: [24] }, identity);
      const loaderStates: LoaderState[] = [];
      for (let rank = 0; rank < 2; rank++) {
        const loader = ds.loader({ ...options, rank });
        const keys: string[][] = [];
        for await (const batch of loader) {
          keys.push(batch.map((s) => s.key));
          if (keys.length === rank + 2) loaderStates.push(loader.state()); // rank 0 after 16 samples, rank 1 after 24
        }
        expect(keys).toEqual(py[rank]!.batches.map((b) => b.map((p) => ds.atSync(p).key)));
      }
      expect(py.map((r) => text(r.states[0]))).toEqual(loaderStates.map(text));

      // Python merges the Node loaders' states; the Node loader resumes Python's merge on one rank.
      const pyMerged = await python!.ask<LoaderState>({ op: 'merge', states: loaderStates });
      expect(text(pyMerged)).toBe(text(mergeLoaderStates(loaderStates)));
      const rest: string[] = [];
      for await (const batch of ds.loader({ ...options, worldSize: 1, rank: 0, resumeFrom: pyMerged })) rest.push(...batch.map((s) => s.key));
      const [pyRest] = await pythonPlans(sizes, { ...options, worldSize: 1, resumeFrom: pyMerged }, {}, identity);
      expect(rest).toEqual(pyRest!.batches.flat().map((p) => ds.atSync(p).key));
      // 16 + 24 read before; drop leaves 157 mod 2 = 1 sample out of the first deal, none of the resumed one.
      expect(rest.length).toBe(157 - 16 - 24);

      // A state of another dataset is refused on both sides.
      const foreign = { ...pyMerged, dataset: { index: '00000000', samples: 157 } };
      const reply = await python!.ask<{ error?: string }>({ op: 'plans', sizes, options: { ...options, worldSize: 1, resumeFrom: foreign }, ranks: [0], datasetIdentity: identity });
      expect(reply.error).toBe('SHARDKIT_ERR_BAD_STATE');
      expect(errorCode(() => ds.loader({ ...options, worldSize: 1, rank: 0, resumeFrom: foreign as LoaderState }))).toBe('SHARDKIT_ERR_BAD_STATE');
    } finally {
      await ds.close();
    }
  });
});
