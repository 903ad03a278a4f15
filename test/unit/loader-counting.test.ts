import { describe, expect, it } from 'vitest';
import { IoStats } from '../../src/io/io-stats.js';
import { openDataset } from '../../src/read/dataset.js';
import type { Loader } from '../../src/read/loader.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const N = 1500;

async function drain<S>(loader: Loader<S>): Promise<number> {
  let n = 0;
  for await (const batch of loader) n += batch.length;
  return n;
}

describe('loader operation counts', () => {
  for (const shuffle of ['none', 'full', 'block'] as const) {
    it(`an epoch (${shuffle}) over S shards and N samples opens each shard once and reads each sample at most once`, async () => {
      const dir = await writeLoaderDataset(tmpDir(), N);
      const io = new IoStats();
      const ds = await openDataset(dir, { ioStats: io, maxOpenShards: 1000, checkShards: 'size' });
      const S = ds.shards.length;
      expect(S).toBeGreaterThan(20);
      const before = io.snapshot();
      const missesBefore = ds.stats().pageCache.misses;
      // maxReadBytes 0: no coalescing, so every sample costs exactly one pread.
      const loader = ds.loader({ batchSize: 32, shuffle, seed: 3, maxReadBytes: 0 });
      expect(await drain(loader)).toBe(N);
      const after = io.snapshot();
      const indexPageReads = ds.stats().pageCache.misses - missesBefore;
      expect(after.opens - before.opens).toBe(S);
      expect(after.stats - before.stats).toBe(S); // one fstat per shard (checkShards 'size')
      expect(after.reads - before.reads - indexPageReads).toBe(N);
      expect(loader.stats().reads).toBe(N);

      // A second epoch on the same dataset opens nothing and, coalescing on, reads no more than N times.
      const loader2 = ds.loader({ batchSize: 32, shuffle, seed: 3, epoch: 1 });
      const mid = io.snapshot();
      expect(await drain(loader2)).toBe(N);
      expect(io.opens - mid.opens).toBe(0);
      expect(io.reads - mid.reads).toBeLessThanOrEqual(N);
      expect(loader2.stats().reads).toBe(io.reads - mid.reads - (ds.stats().pageCache.misses - missesBefore - indexPageReads));
      // Key order: one read per (batch, shard) pair, so at most one per batch plus one per shard boundary.
      if (shuffle === 'none') expect(loader2.stats().reads).toBeLessThanOrEqual(loader2.batches + S);
      await ds.close();
    });
  }

  it('locally, a loader reads through no hole wider than a tar header and its padding (coalesceGapBytes 1 KiB)', async () => {
    const dir = await writeLoaderDataset(tmpDir(), 600);
    const ds = await openDataset(dir, { maxOpenShards: 1000, checkShards: 'size' });
    let spans = 0;
    for await (const e of ds.entries()) spans += e.length;
    for (const shuffle of ['full', 'none'] as const) {
      const loader = ds.loader({ batchSize: 64, shuffle, seed: 2 });
      expect(await drain(loader)).toBe(600);
      const { reads, bytesRead } = loader.stats();
      // each join reads at most one header and its padding (< 1 KiB) beyond the spans themselves
      expect(bytesRead - spans).toBeLessThanOrEqual(1023 * (600 - reads));
      if (shuffle === 'none') expect(reads).toBeLessThan(600 / 4); // neighbours in key order still share reads
    }
    await ds.close();
  });

  it('with the default fingerprint check, the only extra reads are one per shard at first open', async () => {
    const dir = await writeLoaderDataset(tmpDir(), 400);
    const io = new IoStats();
    const ds = await openDataset(dir, { ioStats: io, maxOpenShards: 1000 });
    const S = ds.shards.length;
    const before = io.snapshot();
    const misses = ds.stats().pageCache.misses;
    const loader = ds.loader({ batchSize: 8, shuffle: 'full', maxReadBytes: 0 });
    await drain(loader);
    expect(io.opens - before.opens).toBe(S);
    expect(io.reads - before.reads - (ds.stats().pageCache.misses - misses)).toBe(400 + S);
    await ds.close();
  });

  it('with fewer handles than shards, an epoch still completes within the budget', async () => {
    const dir = await writeLoaderDataset(tmpDir(), 600);
    const ds = await openDataset(dir, { maxOpenShards: 3 });
    expect(ds.shards.length).toBeGreaterThan(3);
    expect(await drain(ds.loader({ batchSize: 16, shuffle: 'block', windowShards: 2 }))).toBe(600);
    expect(ds.stats().shardHandles.peakOpen).toBeLessThanOrEqual(3);
    await ds.close();
  });
});
