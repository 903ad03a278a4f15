/**
 * Mixture and rehearsal epochs are one order whatever the language (formats/SPEC.md "Mixture and rehearsal
 * epochs"): for random sources, weights, seeds and ranks, Python's shardkit.mixture_plan gives Node's per-epoch
 * counts (or the same error code), and every rank's batches of (source, position) — fresh and resumed from a Node
 * state. Python runs as /usr/bin/python3 (formats/python/tests/mixture_peer.py).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { isShardkitError } from '../../formats/errors.js';
import { mergeRankStates, planEpoch, type Partition } from '../../src/read/epoch-plan.js';
import type { EpochState, RankState } from '../../src/read/epoch-state.js';
import { mixtureCounts, type SourceShare } from '../../src/read/mixture-counts.js';
import { planMixtureEpoch, type MixtureEpoch } from '../../src/read/mixture-plan.js';
import { planRehearsalEpoch, rehearsalShape } from '../../src/read/rehearsal-plan.js';
import { PythonPeer } from '../helpers/python-peer.js';
import { hasTool } from '../helpers/tools.js';

const python = hasTool('/usr/bin/python3') ? new PythonPeer('mixture_peer.py') : undefined;
afterAll(() => python?.close());

interface Options {
  seed: number | string;
  epoch: number;
  worldSize: number;
  partition: Partition;
  batchSize: number;
  dropLast: boolean;
  resumeFrom?: EpochState | RankState;
}
type Reply<T> = T | { error: string; message: string };
type Pair = [number, number];

const weightArb = fc.oneof(
  fc.integer({ min: 1, max: 10 }),
  fc.double({ min: 1e-3, max: 100, noNaN: true }),
  fc.constantFrom(0.1, 0.2, 0.7, 1 / 3, 0, -1, Number.POSITIVE_INFINITY),
);
const shareArb: fc.Arbitrary<SourceShare> = fc.oneof(
  fc.record({ size: fc.nat({ max: 40 }), weight: weightArb }),
  fc.record({ size: fc.nat({ max: 40 }), samples: fc.oneof(fc.nat({ max: 90 }), fc.constant(-2), fc.constant(1.5)) }),
);
const optionsArb: fc.Arbitrary<Options> = fc.record({
  seed: fc.oneof(fc.nat({ max: 1000 }), fc.string({ maxLength: 8 })),
  epoch: fc.nat({ max: 50 }),
  worldSize: fc.integer({ min: 1, max: 4 }),
  partition: fc.constantFrom<Partition>('pad', 'drop'),
  batchSize: fc.integer({ min: 1, max: 6 }),
  dropLast: fc.boolean(),
});

function outcome<T>(fn: () => T): T | { error: string } {
  try {
    return fn();
  } catch (e) {
    if (isShardkitError(e)) return { error: e.code };
    throw e;
  }
}

/** Node's batches for one rank: the mixture loader's deal of the epoch table (see mixture-loader.ts). */
function nodeBatches(table: MixtureEpoch, o: Options, rank: number): Pair[][] {
  const { resumeFrom, ...rest } = o;
  const plan = planEpoch({ ...rest, shardSizes: [table.source.length], shuffle: 'none', rank, ...(resumeFrom === undefined ? {} : { resumeFrom }) });
  const out: Pair[][] = [];
  for (let first = 0; first < plan.length; first += o.batchSize) {
    out.push(Array.from({ length: Math.min(o.batchSize, plan.length - first) }, (_, i) => {
      const q = plan.at(first + i);
      return [table.source[q] as number, table.position[q] as number];
    }));
  }
  return out;
}

async function pythonBatches(request: Record<string, unknown>, o: Options): Promise<Pair[][][]> {
  const reply = await python!.ask<Reply<{ ranks: { batches: Pair[][] }[] }>>({ op: 'plans', ...request, options: o, ranks: Array.from({ length: o.worldSize }, (_, r) => r) });
  if ('error' in reply) throw new Error(`python: ${reply.error}: ${reply.message}`);
  return reply.ranks.map((r) => r.batches);
}

describe.skipIf(python === undefined)('mixture and rehearsal plans across languages', () => {
  it('per-epoch counts are the same (largest remainders, float weights), and the same inputs are refused', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(shareArb, { maxLength: 5 }), fc.option(fc.nat({ max: 200 }), { nil: undefined }), async (sources, epochSamples) => {
        const node = outcome(() => ({ counts: mixtureCounts(sources, epochSamples) }));
        const py = await python!.ask<Reply<{ counts: number[] }>>({ op: 'counts', sources, ...(epochSamples === undefined ? {} : { epochSamples }) });
        expect('error' in py ? { error: py.error } : py).toEqual(node);
      }),
      { numRuns: 300 },
    );
  });

  it('every rank reads the same batches of a mixture, fresh and resumed from a merged Node state', async () => {
    const sourcesArb = fc.array(fc.record({ size: fc.integer({ min: 1, max: 30 }), weight: fc.integer({ min: 1, max: 5 }) }), { minLength: 1, maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(sourcesArb, fc.nat({ max: 120 }), optionsArb, fc.array(fc.nat(), { minLength: 4, maxLength: 4 }), async (sources, epochSamples, o, picks) => {
        const sizes = sources.map((s) => s.size);
        const counts = mixtureCounts(sources, epochSamples);
        const table = planMixtureEpoch(sizes, counts, o.seed, o.epoch);
        const py = await pythonBatches({ sizes, counts }, o);
        for (let r = 0; r < o.worldSize; r++) expect(py[r]).toEqual(nodeBatches(table, o, r));

        // a checkpoint: every rank's progress, merged, resumed on one rank
        const plans = Array.from({ length: o.worldSize }, (_, rank) => planEpoch({ ...o, shardSizes: [table.source.length], shuffle: 'none', rank }));
        const merged = mergeRankStates(plans.map((p, r) => p.state((picks[r] as number) % (p.length + 1))));
        const resumed = { ...o, worldSize: 1, resumeFrom: merged };
        const [pyResumed] = await pythonBatches({ sizes, counts }, resumed);
        expect(pyResumed).toEqual(nodeBatches(table, resumed, 0));
      }),
      { numRuns: 120 },
    );
  });

  it('every rank reads the same rehearsal batches, exemplars in the same slots', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 12 }), fc.constantFrom(0, 0.1, 0.25, 0.5, 0.7), optionsArb, async (taskSize, exemplarSize, ratio, o) => {
        const sizes = [taskSize, exemplarSize];
        const shape = outcome(() => rehearsalShape(taskSize, exemplarSize, ratio, o.batchSize, o.worldSize));
        if ('error' in shape) {
          const reply = await python!.ask<Reply<unknown>>({ op: 'plans', sizes, ratio, options: o, ranks: [0] });
          expect(reply).toMatchObject({ error: shape.error });
          return;
        }
        const table = planRehearsalEpoch(sizes, shape, o.worldSize, o.seed, o.epoch);
        const py = await pythonBatches({ sizes, ratio }, o);
        for (let r = 0; r < o.worldSize; r++) expect(py[r]).toEqual(nodeBatches(table, o, r));
      }),
      { numRuns: 150 },
    );
  });
});
