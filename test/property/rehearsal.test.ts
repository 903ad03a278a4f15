/**
 * Rehearsal (fast-check): every batch of every rank holds round(ratio x batchSize) exemplars in its last slots and
 * the rest from the task; the ranks together read every task sample in each epoch; a loader resumed at a step
 * boundary (merged states) yields exactly the batches that were left, still at the ratio.
 */
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import type { MixtureLoaderOptions, MixtureSample } from '../../src/read/mixture-loader.js';
import { mergeMixtureStates } from '../../src/read/mixture-state.js';
import { Rehearsal } from '../../src/read/rehearsal.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

let task: Dataset;
let buffer: Dataset;
beforeAll(async () => {
  const root = tmpDir();
  task = await openDataset(await writeLoaderDataset(path.join(root, 'task'), 83, { shardBytes: 8192 }));
  buffer = await openDataset(await writeLoaderDataset(path.join(root, 'buffer'), 9, { shardBytes: 8192 }));
});
afterAll(async () => {
  await task.close();
  await buffer.close();
});

const label = (s: MixtureSample): string => `${s.source}:${s.key}`;

async function run(r: Rehearsal, options: MixtureLoaderOptions & { decode?: 'none' }, stopAfter = Infinity): Promise<{ batches: MixtureSample[][]; state: ReturnType<ReturnType<Rehearsal['loader']>['state']> }> {
  const loader = r.loader(options);
  const batches: MixtureSample[][] = [];
  for await (const b of loader) {
    batches.push(b);
    if (batches.length >= stopAfter) break;
  }
  return { batches, state: loader.state() };
}

describe('rehearsal (property)', () => {
  it('puts round(ratio x B) exemplars in every batch of every rank and reads every task sample', async () => {
    await fc.assert(
      fc.asyncProperty(fc.double({ min: 0, max: 0.95, noNaN: true }), fc.integer({ min: 2, max: 12 }), fc.integer({ min: 1, max: 4 }), fc.nat(), fc.nat(3), async (ratio, batchSize, worldSize, seed, epoch) => {
        const exemplars = Math.round(ratio * batchSize);
        fc.pre(exemplars < batchSize);
        const r = new Rehearsal(task, buffer, undefined, ratio, []);
        const ranks = await Promise.all(Array.from({ length: worldSize }, (_, rank) => run(r, { batchSize, worldSize, rank, seed, epoch })));
        const steps = ranks[0]?.batches.length;
        for (const { batches } of ranks) {
          expect(batches.length).toBe(steps);
          for (const b of batches) {
            expect(b.length).toBe(batchSize);
            expect(b.map((s) => s.source)).toEqual([...Array(batchSize - exemplars).fill(0), ...Array(exemplars).fill(1)]);
          }
        }
        const taskKeys = new Set(ranks.flatMap((x) => x.batches.flat()).filter((s) => s.source === 0).map((s) => s.key));
        expect(taskKeys.size).toBe(83);
      }),
      { numRuns: 30 },
    );
  });

  it('resumes at a step boundary with exactly the batches that were left', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(0.25, 0.5, 0.1), fc.integer({ min: 2, max: 8 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 5 }), fc.nat(), async (ratio, batchSize, worldSize, stopAfter, seed) => {
        fc.pre(Math.round(ratio * batchSize) < batchSize);
        const r = new Rehearsal(task, buffer, undefined, ratio, []);
        const options = (rank: number) => ({ batchSize, worldSize, rank, seed, epoch: 1 });
        const full = await Promise.all(Array.from({ length: worldSize }, (_, rank) => run(r, options(rank))));
        const stopped = await Promise.all(Array.from({ length: worldSize }, (_, rank) => run(r, options(rank), stopAfter)));
        const state = JSON.parse(JSON.stringify(worldSize === 1 ? stopped[0]!.state : mergeMixtureStates(stopped.map((s) => s.state))));
        for (let rank = 0; rank < worldSize; rank++) {
          const rest = await run(r, { ...options(rank), resumeFrom: state });
          expect(rest.batches.map((b) => b.map(label))).toEqual(full[rank]!.batches.slice(stopped[rank]!.batches.length).map((b) => b.map(label)));
        }
        // another batch size lays batches out otherwise: refused
        expect(() => r.loader({ ...options(0), batchSize: batchSize + 1, resumeFrom: state })).toThrow(expect.objectContaining({ code: 'SHARDKIT_ERR_BAD_STATE' }));
      }),
      { numRuns: 25 },
    );
  });
});
