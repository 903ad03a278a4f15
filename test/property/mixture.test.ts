/**
 * Mixtures (fast-check): per-epoch counts follow the weights exactly (whole numbers that add up, each within one of
 * its exact share); sources are down-sampled without replacement and up-sampled by whole passes; every rank reads
 * the same number of samples and together they read the epoch; a loader resumed from its state (or from the merged
 * states of all ranks) yields exactly the batches the uninterrupted loader had left.
 */
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import { mixtureCounts } from '../../src/read/mixture-counts.js';
import { Mixture } from '../../src/read/mixture.js';
import type { MixtureLoaderOptions, MixtureSample } from '../../src/read/mixture-loader.js';
import { chooseFromSource, planMixtureEpoch } from '../../src/read/mixture-plan.js';
import { mergeMixtureStates, type MixtureState } from '../../src/read/mixture-state.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const SIZES = [7, 30, 1, 55];
let datasets: Dataset[] = [];
beforeAll(async () => {
  const root = tmpDir();
  datasets = await Promise.all(SIZES.map(async (n, i) => openDataset(await writeLoaderDataset(path.join(root, `d${i}`), n, { shardBytes: 8 * 1024 }))));
});
afterAll(async () => {
  await Promise.all(datasets.map((ds) => ds.close()));
});

const shareArb = fc.oneof(fc.record({ weight: fc.double({ min: 0.01, max: 10, noNaN: true }) }), fc.record({ samples: fc.nat(120) }));
/** 1 to 4 of the test datasets (their sizes from SIZES), each with a weight or a count. */
const sourcesArb = fc.uniqueArray(fc.nat(SIZES.length - 1), { minLength: 1, maxLength: SIZES.length }).chain((which) => fc.tuple(fc.constant(which), fc.array(shareArb, { minLength: which.length, maxLength: which.length })));

function mixtureOf(which: number[], shares: ({ weight: number } | { samples: number })[], epochSamples?: number): Mixture {
  const picked = which.map((i) => datasets[i] as Dataset);
  const counts = mixtureCounts(
    shares.map((s, k) => ({ ...s, size: (picked[k] as Dataset).size })),
    epochSamples,
  );
  return new Mixture(picked, counts, []);
}

/** A mixture loader's options without decoding, so that its samples are bytes. */
type BytesMixtureOptions = MixtureLoaderOptions & { decode?: 'none' };

async function batchesOf(mix: Mixture, options: BytesMixtureOptions, stopAfter = Infinity): Promise<{ batches: string[][]; state: MixtureState }> {
  const loader = mix.loader(options);
  const batches: string[][] = [];
  for await (const batch of loader) {
    batches.push(batch.map((s: MixtureSample) => `${s.source}:${s.key}`));
    if (batches.length >= stopAfter) break;
  }
  return { batches, state: loader.state() };
}

describe('mixture counts (property)', () => {
  it('are whole numbers adding up to the epoch, each weighted count within one of its exact share', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ size: fc.integer({ min: 1, max: 10_000 }), share: shareArb }), { minLength: 1, maxLength: 6 }), fc.option(fc.nat(50_000), { nil: undefined }), (sources, epoch) => {
        const shares = sources.map((s) => ({ size: s.size, ...s.share }));
        const weighted = shares.filter((s): s is typeof s & { weight: number } => 'weight' in s);
        fc.pre(epoch === undefined || weighted.length > 0);
        const counts = mixtureCounts(shares, epoch);
        const total = epoch ?? weighted.reduce((n, s) => n + s.size, 0);
        const weightSum = weighted.reduce((n, s) => n + s.weight, 0);
        shares.forEach((s, i) => {
          const c = counts[i] as number;
          expect(Number.isSafeInteger(c) && c >= 0).toBe(true);
          if ('samples' in s) expect(c).toBe(s.samples);
          else expect(Math.abs(c - (total * s.weight) / weightSum)).toBeLessThan(1);
        });
        const weightedSum = shares.reduce((n, s, i) => n + ('weight' in s ? (counts[i] as number) : 0), 0);
        expect(weightedSum).toBe(weighted.length === 0 ? 0 : total);
      }),
    );
  });

  it('choose without replacement below a source size, and by whole passes above it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 300 }), fc.nat(1000), fc.nat(), fc.nat(20), (size, count, seed, epoch) => {
        const chosen = chooseFromSource(size, count, seed, epoch, 0);
        expect(chosen.length).toBe(count);
        const times = new Map<number, number>();
        for (const p of chosen) {
          expect(p).toBeLessThan(size);
          times.set(p, (times.get(p) ?? 0) + 1);
        }
        const passes = Math.floor(count / size);
        for (let p = 0; p < size; p++) expect([passes, passes + 1]).toContain(times.get(p) ?? 0);
        expect([...times.values()].filter((t) => t === passes + 1).length).toBe(count % size);
        expect(chooseFromSource(size, count, seed, epoch, 0)).toEqual(chosen); // deterministic
      }),
    );
  });

  it('an epoch holds each source its count of times, and its order depends only on (seed, epoch)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 50 }), fc.nat(80)), { minLength: 1, maxLength: 4 }), fc.nat(), fc.nat(9), (pairs, seed, epoch) => {
        const sizes = pairs.map((p) => p[0]);
        const counts = pairs.map((p) => p[1]);
        const e = planMixtureEpoch(sizes, counts, seed, epoch);
        counts.forEach((c, i) => expect(e.source.filter((s) => s === i).length).toBe(c));
        expect(planMixtureEpoch(sizes, counts, seed, epoch)).toEqual(e);
      }),
    );
  });
});

describe('mixture loader (property)', () => {
  it('gives every rank the same count, reads the epoch across ranks, and tags samples with their source', async () => {
    await fc.assert(
      fc.asyncProperty(sourcesArb, fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 9 }), fc.constantFrom('pad', 'drop'), fc.nat(), async ([which, shares], worldSize, batchSize, partition, seed) => {
        const mix = mixtureOf(which, shares);
        const perRank = await Promise.all(Array.from({ length: worldSize }, (_, rank) => batchesOf(mix, { batchSize, seed, epoch: 1, rank, worldSize, partition })));
        const lengths = perRank.map((r) => r.batches.flat().length);
        expect(new Set(lengths).size).toBe(1);
        const total = mix.epochSamples;
        const all = perRank.flatMap((r) => r.batches.flat());
        if (partition === 'drop') expect(all.length).toBe(Math.floor(total / worldSize) * worldSize);
        else expect(all.length).toBe(Math.ceil(total / worldSize) * worldSize);
        // without padding, the ranks together read each source exactly its count
        if (partition === 'pad' && total % worldSize === 0) {
          mix.counts.forEach((c, i) => expect(all.filter((s) => s.startsWith(`${i}:`)).length).toBe(c));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('resumes with exactly the batches that were left, on one rank and across ranks (merged states)', async () => {
    await fc.assert(
      fc.asyncProperty(sourcesArb, fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 6 }), fc.nat(6), fc.nat(), async ([which, shares], worldSize, batchSize, stopAfter, seed) => {
        const mix = mixtureOf(which, shares);
        const options = (rank: number): BytesMixtureOptions => ({ batchSize, seed, epoch: 2, rank, worldSize });
        const full = await Promise.all(Array.from({ length: worldSize }, (_, rank) => batchesOf(mix, options(rank))));
        const stopped = await Promise.all(Array.from({ length: worldSize }, (_, rank) => batchesOf(mix, options(rank), Math.max(1, stopAfter))));
        stopped.forEach((s, rank) => expect(s.batches).toEqual((full[rank] as { batches: string[][] }).batches.slice(0, s.batches.length)));
        const state = worldSize === 1 ? (stopped[0] as { state: MixtureState }).state : mergeMixtureStates(stopped.map((s) => s.state));
        const json = JSON.parse(JSON.stringify(state)) as MixtureState; // survives a checkpoint file
        for (let rank = 0; rank < worldSize; rank++) {
          const rest = await batchesOf(mix, { ...options(rank), resumeFrom: json });
          const done = (stopped[rank] as { batches: string[][] }).batches.length;
          expect(rest.batches).toEqual((full[rank] as { batches: string[][] }).batches.slice(done));
        }
      }),
      { numRuns: 40 },
    );
  });
});
