import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sample } from '../../formats/sample.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import { planReads, type SpanRequest } from '../../src/read/fetch-plan.js';
import type { Partition } from '../../src/read/epoch-plan.js';
import type { Loader } from '../../src/read/loader.js';
import type { LoaderOptions } from '../../src/read/loader-options.js';
import { mergeLoaderStates, type LoaderState } from '../../src/read/loader-state.js';
import { loaderSample, sameBytes, writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

describe('planReads (coalescing)', () => {
  const shardArb = fc.array(fc.uint8Array({ minLength: 1, maxLength: 400 }), { minLength: 1, maxLength: 4 });

  it('never changes bytes: each span sliced from its run equals a read of the span alone', () => {
    fc.assert(
      fc.property(
        shardArb.chain((files) =>
          fc.record({
            files: fc.constant(files),
            requests: fc.array(
              fc.nat({ max: files.length - 1 }).chain((shard) => {
                const size = (files[shard] as Uint8Array).length;
                return fc.nat({ max: size }).chain((offset) => fc.record({ shard: fc.constant(shard), offset: fc.constant(offset), length: fc.nat({ max: size - offset }) }));
              }),
              { maxLength: 40 },
            ),
            gapBytes: fc.nat({ max: 200 }),
            maxReadBytes: fc.nat({ max: 500 }),
          }),
        ),
        ({ files, requests, gapBytes, maxReadBytes }) => {
          const runs = planReads(requests, { gapBytes, maxReadBytes });
          const served = new Array<number>(requests.length).fill(0);
          for (const run of runs) {
            const file = files[run.shard] as Uint8Array;
            expect(run.offset + run.length).toBeLessThanOrEqual(file.length);
            const bytes = file.subarray(run.offset, run.offset + run.length); // the one positional read
            expect(joinsWithinLimit(run.slices, maxReadBytes)).toBe(true);
            for (const s of run.slices) {
              served[s.request]!++;
              const req = requests[s.request] as SpanRequest;
              expect(run.shard).toBe(req.shard);
              expect(sameBytes(bytes.subarray(s.start, s.start + s.length), file.subarray(req.offset, req.offset + req.length))).toBe(true);
            }
          }
          expect(served.every((n) => n === 1)).toBe(true);
          // Runs of one shard never overlap: no byte is read twice.
          const sorted = [...runs].sort((a, b) => a.shard - b.shard || a.offset - b.offset);
          for (let i = 1; i < sorted.length; i++) {
            const [p, q] = [sorted[i - 1]!, sorted[i]!];
            if (p.shard === q.shard && p.length > 0 && q.length > 0) expect(q.offset).toBeGreaterThanOrEqual(p.offset + p.length);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('plans exactly what a plain comparator sort and one pass over it plan (the merge sort and its scratch growth)', () => {
    const request = fc.record({ shard: fc.nat({ max: 3 }), offset: fc.nat({ max: 300 }), length: fc.nat({ max: 60 }) });
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.array(request, { maxLength: 20 }), fc.array(request, { minLength: 60, maxLength: 300 })), { minLength: 1, maxLength: 3 }),
        fc.nat({ max: 100 }),
        fc.nat({ max: 400 }),
        (batches, gapBytes, maxReadBytes) => {
          // Several calls in a row: the scratch arrays are reused and grow (past 64 requests) between calls.
          for (const requests of batches) expect(planReads(requests, { gapBytes, maxReadBytes })).toEqual(referencePlan(requests, gapBytes, maxReadBytes));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('joins neighbours within the gap when they fit, and keeps them apart otherwise', () => {
    const reqs: SpanRequest[] = [
      { shard: 0, offset: 0, length: 10 },
      { shard: 0, offset: 15, length: 10 },
      { shard: 0, offset: 100, length: 10 },
      { shard: 1, offset: 25, length: 5 },
    ];
    expect(planReads(reqs, { gapBytes: 5, maxReadBytes: 1000 }).map((r) => [r.shard, r.offset, r.length])).toEqual([[0, 0, 25], [0, 100, 10], [1, 25, 5]]);
    expect(planReads(reqs, { gapBytes: 100, maxReadBytes: 1000 }).map((r) => [r.shard, r.offset, r.length])).toEqual([[0, 0, 110], [1, 25, 5]]);
    expect(planReads(reqs, { gapBytes: 100, maxReadBytes: 20 }).length).toBe(4);
  });

  it('lets a span that starts inside a run extend it past maxReadBytes rather than read bytes twice', () => {
    // Found by the property above (seed 1198135021): an empty span, a neighbour joined through the gap, then an
    // overlapping span that ends past the limit.
    const reqs: SpanRequest[] = [
      { shard: 0, offset: 5, length: 2 },
      { shard: 0, offset: 0, length: 0 },
      { shard: 0, offset: 1, length: 5 },
    ];
    const runs = planReads(reqs, { gapBytes: 1, maxReadBytes: 6 });
    expect(runs.map((r) => [r.offset, r.length])).toEqual([[0, 7]]);
    expect(runs[0]?.slices.map((s) => [s.request, s.start, s.length])).toEqual([[1, 0, 0], [2, 1, 5], [0, 5, 2]]);
  });
});

/** The planning rule written plainly: sort by (shard, offset, longest first, request order), then one joining pass. */
function referencePlan(requests: readonly SpanRequest[], gapBytes: number, maxReadBytes: number) {
  const order = requests.map((_, i) => i).sort((a, b) => {
    const [x, y] = [requests[a]!, requests[b]!];
    return x.shard - y.shard || x.offset - y.offset || y.length - x.length || a - b;
  });
  const runs: Array<{ shard: number; offset: number; length: number; slices: Array<{ request: number; start: number; length: number }> }> = [];
  for (const i of order) {
    const r = requests[i]!;
    const run = runs.at(-1);
    const runEnd = run === undefined ? 0 : run.offset + run.length;
    const end = r.offset + r.length;
    if (run !== undefined && run.shard === r.shard && (r.offset < runEnd || (r.offset - runEnd <= gapBytes && end - run.offset <= maxReadBytes))) {
      run.length = Math.max(runEnd, end) - run.offset;
      run.slices.push({ request: i, start: r.offset - run.offset, length: r.length });
    } else {
      runs.push({ shard: r.shard, offset: r.offset, length: r.length, slices: [{ request: i, start: 0, length: r.length }] });
    }
  }
  return runs;
}

/**
 * The joining rule, restated from the slices alone: a span that starts at or past the bytes gathered so far joins
 * only when the read up to its end stays within maxReadBytes; a span that starts inside them (a repeat, or an
 * overlapping neighbour) may extend the read past the limit, because splitting it would read bytes twice.
 */
function joinsWithinLimit(slices: readonly { start: number; length: number }[], maxReadBytes: number): boolean {
  let end = 0;
  for (const [i, s] of slices.entries()) {
    if (i > 0 && s.start >= end && s.start + s.length > maxReadBytes) return false;
    end = Math.max(end, s.start + s.length);
  }
  return true;
}

const N = 137;
let ds: Dataset;

beforeAll(async () => {
  ds = await openDataset(await writeLoaderDataset(tmpDir(), N, { shardBytes: 16 * 1024 }));
});
afterAll(async () => {
  await ds.close();
});

async function keysOf(loader: Loader<Sample>): Promise<string[]> {
  const keys: string[] = [];
  for await (const batch of loader) {
    for (const s of batch) {
      expect(sameBytes(s.members.bin, loaderSample(Number(s.key.slice(2))).members.bin)).toBe(true);
      keys.push(s.key);
    }
  }
  return keys;
}

const orderArb = fc.record({
  shuffle: fc.constantFrom('none' as const, 'full' as const, 'block' as const),
  seed: fc.oneof(fc.nat(), fc.string({ maxLength: 5 })),
  epoch: fc.nat({ max: 20 }),
  batchSize: fc.integer({ min: 1, max: 20 }),
  maxReadBytes: fc.constantFrom(0, 4096, 1 << 20),
  coalesceGapBytes: fc.constantFrom(0, 65536),
  prefetch: fc.constantFrom(0, 10_000, 1 << 26),
});

describe('loader epochs over a real dataset', () => {
  it('every sample exactly once per epoch across ranks (drop), at least once with equal counts (pad)', async () => {
    await fc.assert(
      fc.asyncProperty(orderArb, fc.integer({ min: 1, max: 5 }), fc.constantFrom<Partition>('pad', 'drop'), fc.boolean(), async (opts, worldSize, partition, dropLast) => {
        const perRank: string[][] = [];
        for (let rank = 0; rank < worldSize; rank++) perRank.push(await keysOf(ds.loader({ ...opts, rank, worldSize, partition, dropLast })));
        const share = partition === 'pad' ? Math.ceil(N / worldSize) : Math.floor(N / worldSize);
        const expected = dropLast ? share - (share % opts.batchSize) : share;
        for (const keys of perRank) expect(keys.length).toBe(expected);
        const all = perRank.flat();
        if (partition === 'drop') expect(new Set(all).size).toBe(all.length);
        if (partition === 'pad' && !dropLast) expect(new Set(all).size).toBe(N);
        if (worldSize === 1 && !dropLast) expect([...all].sort()).toEqual(Array.from({ length: N }, (_, i) => loaderSample(i).key));
      }),
      { numRuns: 25 },
    );
  });

  it('resume from any cut point yields exactly the remainder', async () => {
    await fc.assert(
      fc.asyncProperty(orderArb, fc.nat(), fc.integer({ min: 1, max: 20 }), async (opts, cutSeed, resumeBatch) => {
        const full = await keysOf(ds.loader(opts));
        const first = ds.loader(opts);
        const cut = cutSeed % (first.batches + 1);
        const head: string[] = [];
        for (let b = 0; b < cut; b++) head.push(...((await first.next()).value as Sample[]).map((s) => s.key));
        const state = JSON.parse(JSON.stringify(first.state())) as LoaderState;
        await first.close();
        const tail = await keysOf(ds.loader({ ...opts, batchSize: resumeBatch, resumeFrom: state }));
        expect([...head, ...tail]).toEqual(full);
      }),
      { numRuns: 25 },
    );
  });

  it('ranks cut at different points, merged, resume on another world size without repeats or losses', async () => {
    await fc.assert(
      fc.asyncProperty(orderArb, fc.integer({ min: 1, max: 4 }), fc.array(fc.nat(), { minLength: 4, maxLength: 4 }), fc.integer({ min: 1, max: 4 }), async (opts, w, cuts, w2) => {
        const base: LoaderOptions = { ...opts, partition: 'drop' };
        const loaders = Array.from({ length: w }, (_, rank) => ds.loader({ ...base, rank, worldSize: w }));
        const head: string[] = [];
        for (const [r, loader] of loaders.entries()) {
          const cut = (cuts[r] as number) % (loader.batches + 1);
          for (let b = 0; b < cut; b++) head.push(...((await loader.next()).value as Sample[]).map((s) => s.key));
        }
        const merged = JSON.parse(JSON.stringify(mergeLoaderStates(loaders.map((l) => l.state())))) as LoaderState;
        const tail: string[] = [];
        for (let rank = 0; rank < w2; rank++) tail.push(...(await keysOf(ds.loader({ ...opts, rank, worldSize: w2, partition: 'pad', resumeFrom: merged }))));
        expect(new Set(head).size).toBe(head.length);
        const headSet = new Set(head);
        const fresh = tail.filter((k) => !headSet.has(k));
        // Everything not yielded before comes now; repeats only from the pad partition's fill (< w2).
        expect(new Set([...head, ...fresh]).size).toBe(N);
        expect(tail.length - new Set(fresh).size).toBeLessThan(w2);
      }),
      { numRuns: 20 },
    );
  });
});
