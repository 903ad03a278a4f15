/**
 * The loader's reads of one-member uncompressed samples ("lone" samples, most real trees): a batch of one is read as
 * atSync reads it, and from memory maps neighbours in a coalesced run are copied and checksummed one by one (one pass)
 * instead of read as one run and checksummed after. Same samples, same errors, honest counts.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { planEpoch, type Partition } from '../../src/read/epoch-plan.js';
import type { Loader } from '../../src/read/loader.js';
import type { ShuffleName } from '../../src/read/shuffle/index.js';
import { sameBytes } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

/** Sample i: one `png` member of `size` bytes that depend on i. */
function loneSample(i: number, size: number): Sample {
  const png = new Uint8Array(size);
  for (let j = 0; j < size; j++) png[j] = (i * 31 + j * 13) & 0xff;
  return { key: `k/${String(i).padStart(5, '0')}`, members: { png } };
}

async function writeLone(sizes: readonly number[], layout: 'tar' | 'packed', shardBytes = 16 * 1024): Promise<string> {
  const dir = tmpDir();
  const writer = new DatasetWriter({ dir, layout, shardBytes });
  sizes.forEach((size, i) => writer.add(loneSample(i, size)));
  await writer.finish();
  return dir;
}

async function collect<S>(loader: Loader<S>): Promise<S[][]> {
  const out: S[][] = [];
  for await (const batch of loader) out.push(batch);
  return out;
}

describe('loader over one-member samples', () => {
  it('yields what atSync reads at the planned positions, for any batch size, shuffle, deal and layout (memory maps and pread)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          sizes: fc.array(fc.oneof(fc.constant(0), fc.nat({ max: 40 }), fc.nat({ max: 3000 })), { minLength: 1, maxLength: 90 }),
          layout: fc.constantFrom('tar' as const, 'packed' as const),
          native: fc.boolean(),
          batchSize: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 70 })),
          shuffle: fc.constantFrom<ShuffleName>('none', 'full', 'block'),
          worldSize: fc.integer({ min: 1, max: 3 }),
          rankSeed: fc.nat(),
          partition: fc.constantFrom<Partition>('pad', 'drop'),
          seed: fc.nat({ max: 1000 }),
        }),
        async ({ sizes, layout, native, batchSize, shuffle, worldSize, rankSeed, partition, seed }) => {
          const rank = rankSeed % worldSize;
          const dir = await writeLone(sizes, layout, 4 * 1024);
          const ds = await openDataset(dir, { checkShards: 'size', native });
          try {
            const loader = ds.loader({ batchSize, shuffle, seed, rank, worldSize, partition });
            const plan = planEpoch({ shardSizes: ds.shards.map((s) => s.samples), seed, epoch: 0, shuffle, batchSize, rank, worldSize, partition });
            const got = (await collect(loader)).flat();
            expect(got.length).toBe(plan.length);
            got.forEach((sample, i) => {
              const want = ds.atSync(plan.at(i));
              expect(sample.key).toBe(want.key);
              expect(Object.keys(sample.members)).toEqual(['png']);
              expect(sameBytes(sample.members.png, want.members.png)).toBe(true);
            });
            // one read per sample span copied; bytes: the spans, with no hole between neighbours when copied one by one
            const { reads, bytesRead, fetchedSamples } = loader.stats();
            expect(fetchedSamples).toBe(plan.length);
            expect(reads).toBeLessThanOrEqual(plan.length);
            if (native) expect(bytesRead).toBe(got.reduce((n, s) => n + (s.members.png as Uint8Array).length, 0));
          } finally {
            await ds.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('in view mode yields the same bytes, each batch valid until the next is asked for (memory maps and pread)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          sizes: fc.array(fc.oneof(fc.constant(0), fc.nat({ max: 40 }), fc.nat({ max: 3000 })), { minLength: 1, maxLength: 90 }),
          layout: fc.constantFrom('tar' as const, 'packed' as const),
          native: fc.boolean(),
          batchSize: fc.integer({ min: 1, max: 70 }),
          shuffle: fc.constantFrom<ShuffleName>('none', 'full', 'block'),
          seed: fc.nat({ max: 1000 }),
        }),
        async ({ sizes, layout, native, batchSize, shuffle, seed }) => {
          const dir = await writeLone(sizes, layout, 4 * 1024);
          const ds = await openDataset(dir, { checkShards: 'size', native });
          try {
            const plan = planEpoch({ shardSizes: ds.shards.map((s) => s.samples), seed, epoch: 0, shuffle, batchSize });
            let i = 0;
            const held: Uint8Array[] = [];
            for await (const batch of ds.loader({ batchSize, shuffle, seed, view: true })) {
              for (const sample of batch) {
                const want = ds.atSync(plan.at(i++));
                expect(sample.key).toBe(want.key);
                expect(sameBytes(sample.members.png, want.members.png)).toBe(true);
                held.push(sample.members.png as Uint8Array);
              }
              // members of one batch never share bytes: each is a span of its own in the batch's buffer
              const spans = held.filter((m) => m.length > 0).map((m) => [m.buffer, m.byteOffset, m.byteOffset + m.length] as const);
              for (let a = 0; a < spans.length; a++) {
                for (let b = a + 1; b < spans.length; b++) {
                  const [x, y] = [spans[a]!, spans[b]!];
                  if (x[0] === y[0]) expect(x[2] <= y[1] || y[2] <= x[1]).toBe(true);
                }
              }
              held.length = 0;
            }
            expect(i).toBe(plan.length);
          } finally {
            await ds.close();
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it('batches mixing one- and two-member samples over several shards, verify on and off, copy and view mode: what atSync reads', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          samples: fc.array(fc.record({ size: fc.oneof(fc.constant(0), fc.nat({ max: 40 }), fc.nat({ max: 3000 })), second: fc.option(fc.nat({ max: 300 }), { freq: 3 }) }), { minLength: 1, maxLength: 90 }),
          layout: fc.constantFrom('tar' as const, 'packed' as const),
          native: fc.boolean(),
          verify: fc.boolean(),
          view: fc.boolean(),
          batchSize: fc.integer({ min: 1, max: 70 }),
          shuffle: fc.constantFrom<ShuffleName>('none', 'full', 'block'),
          seed: fc.nat({ max: 1000 }),
        }),
        async ({ samples, layout, native, verify, view, batchSize, shuffle, seed }) => {
          const dir = tmpDir();
          const writer = new DatasetWriter({ dir, layout, shardBytes: 4 * 1024 });
          samples.forEach(({ size, second }, i) => {
            const sample = loneSample(i, size);
            if (second !== null) sample.members.txt = loneSample(i + 1, second).members.png as Uint8Array;
            writer.add(sample);
          });
          await writer.finish();
          const ds = await openDataset(dir, { checkShards: 'size', native });
          try {
            const plan = planEpoch({ shardSizes: ds.shards.map((s) => s.samples), seed, epoch: 0, shuffle, batchSize });
            let i = 0;
            // each batch checked before the next is asked for (view mode: valid until then)
            for await (const batch of ds.loader({ batchSize, shuffle, seed, verify, view })) {
              for (const sample of batch) {
                const want = ds.atSync(plan.at(i++));
                expect(sample.key).toBe(want.key);
                expect(Object.keys(sample.members)).toEqual(Object.keys(want.members));
                for (const ext of Object.keys(want.members)) expect(sameBytes(sample.members[ext], want.members[ext])).toBe(true);
              }
            }
            expect(i).toBe(plan.length);
          } finally {
            await ds.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('view-mode loaders of one dataset, one after another (an epoch, one stopped early, the next), reuse its read buffers and read the right bytes', async () => {
    const sizes = Array.from({ length: 240 }, (_, i) => 100 + ((i * 7919) % 5000));
    const ds = await openDataset(await writeLone(sizes, 'tar', 64 * 1024), { checkShards: 'size' });
    const earlier = new Set<ArrayBufferLike>(); // buffers the loaders before this one read into
    const firstBatchReused: boolean[] = [];
    const check = async (epoch: number, stopAfter: number): Promise<void> => {
      const plan = planEpoch({ shardSizes: ds.shards.map((s) => s.samples), seed: 5, epoch, shuffle: 'full', batchSize: 16 });
      const mine = new Set<ArrayBufferLike>();
      let i = 0;
      for await (const batch of ds.loader({ batchSize: 16, shuffle: 'full', seed: 5, epoch, view: true })) {
        if (i === 0) firstBatchReused.push(earlier.has((batch[0]?.members.png as Uint8Array).buffer));
        for (const sample of batch) {
          const png = sample.members.png as Uint8Array;
          expect(sameBytes(png, loneSample(plan.at(i), sizes[plan.at(i)] as number).members.png), sample.key).toBe(true);
          mine.add(png.buffer);
          i++;
        }
        if (i === stopAfter * 16) break;
      }
      for (const b of mine) earlier.add(b);
    };
    await check(0, Infinity);
    await check(1, 3); // stopped early: its held batch goes back to the pool
    await check(2, Infinity);
    // later loaders start in the slabs earlier ones used (with memory maps: a lone-sample batch reads into one slab)
    if (ds.native) expect(firstBatchReused).toEqual([false, true, true]);
    await ds.close();
  });

  it('from memory maps, key order copies each sample on its own: reads = samples, bytesRead = member bytes (no tar header read)', async () => {
    const sizes = Array.from({ length: 300 }, (_, i) => 100 + ((i * 7919) % 5000));
    const dir = await writeLone(sizes, 'tar', 256 * 1024);
    const ds = await openDataset(dir, { checkShards: 'size' });
    if (!ds.native) {
      await ds.close();
      return; // the addon is not built: pread coalesces as before (loader-counting.test.ts)
    }
    const loader = ds.loader({ batchSize: 64, shuffle: 'none' });
    const samples = (await collect(loader)).flat();
    expect(samples.map((s) => s.key)).toEqual(sizes.map((_, i) => loneSample(i, 0).key));
    samples.forEach((s, i) => expect(sameBytes(s.members.png, loneSample(i, sizes[i] as number).members.png)).toBe(true));
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(loader.stats()).toMatchObject({ reads: 300, bytesRead: total, fetchedSamples: 300 });
    await ds.close();
  });

  for (const batchSize of [1, 64]) {
    it(`a flipped byte fails the epoch with CHECKSUM naming the sample (batchSize ${batchSize}, key order, native and pread)`, async () => {
      const sizes = Array.from({ length: 200 }, (_, i) => 200 + ((i * 104729) % 3000));
      const dir = await writeLone(sizes, 'packed', 1024 * 1024);
      const probe = await openDataset(dir);
      const entry = await probe.locate(loneSample(77, 0).key);
      const shardFile = probe.shardLocation(entry.shard);
      await probe.close();
      const bytes = fs.readFileSync(shardFile);
      bytes[entry.offset + 9] = (bytes[entry.offset + 9] as number) ^ 0x10;
      fs.writeFileSync(shardFile, bytes);
      for (const native of [true, false]) {
        const ds = await openDataset(dir, { checkShards: 'size', native });
        const err = await collect(ds.loader({ batchSize, shuffle: 'none' })).catch((e: unknown) => e);
        expect(err).toMatchObject({ code: ErrorCodes.CHECKSUM, key: loneSample(77, 0).key, shard: path.basename(shardFile), offset: entry.offset });
        const plain = (await collect(ds.loader({ batchSize, verify: false }))).flat();
        expect(plain.length).toBe(200);
        expect(sameBytes(plain[77]?.members.png, loneSample(77, sizes[77] as number).members.png)).toBe(false);
        expect(sameBytes(plain[78]?.members.png, loneSample(78, sizes[78] as number).members.png)).toBe(true);
        await ds.close();
      }
    });
  }
});
