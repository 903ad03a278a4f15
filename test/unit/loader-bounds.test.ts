/**
 * What a loader may hold and start: nothing after it is stopped (break, return()), no more shard handles than
 * maxOpenShards, no more requests in flight than `concurrency`.
 */
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { IoStats } from '../../src/io/io-stats.js';
import { openDataset } from '../../src/read/dataset.js';
import type { Loader } from '../../src/read/loader.js';
import { startFlakyServer } from '../helpers/flaky-server.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const settle = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function drain<S>(loader: Loader<S>): Promise<number> {
  let n = 0;
  for await (const batch of loader) n += batch.length;
  return n;
}

describe('a stopped loader', () => {
  it('starts no read queued behind its concurrency limit after break', async () => {
    const io = new IoStats();
    const ds = await openDataset(await writeLoaderDataset(tmpDir(), 1500), { ioStats: io });
    // every read through the thread pool, one at a time: the read-ahead of a large prefetch waits in the queue
    const loader = ds.loader({ batchSize: 8, shuffle: 'full', seed: 1, syncReadMaxBytes: 0, concurrency: 1, prefetch: 64 * 2 ** 20 });
    for await (const batch of loader) {
      expect(batch.length).toBe(8); // the next batches' reads are queued by now
      break;
    }
    const atBreak = io.snapshot().reads;
    await settle(300);
    expect(io.snapshot().reads - atBreak).toBeLessThanOrEqual(1); // the one read in flight at the break
    expect((await loader.next()).done).toBe(true);
    await ds.close();
  });

  it('starts no image decode queued behind decodeConcurrency after break', async () => {
    const dir = tmpDir();
    const writer = new DatasetWriter({ dir });
    const png = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#808080' } }).png().toBuffer();
    for (let i = 0; i < 60; i++) writer.add({ key: `img/${String(i).padStart(3, '0')}`, members: { png } });
    await writer.finish();
    const ds = await openDataset(dir);
    const loader = ds.loader({ batchSize: 2, decode: 'image', decodeConcurrency: 1, prefetch: 64 * 2 ** 20 });
    for await (const batch of loader) {
      expect(batch.length).toBe(2);
      break;
    }
    const atBreak = loader.stats().imagesDecoded;
    expect(atBreak).toBeLessThan(60);
    await settle(500);
    expect(loader.stats().imagesDecoded - atBreak).toBeLessThanOrEqual(1); // the one decode running at the break
    await ds.close();
  });
});

describe('loader bounds', () => {
  it('keeps shard handles within maxOpenShards when reads go through the thread pool', async () => {
    const dir = await writeLoaderDataset(tmpDir(), 600);
    for (const concurrency of [4, 16]) {
      const ds = await openDataset(dir, { maxOpenShards: 2 });
      expect(ds.shards.length).toBeGreaterThan(8);
      expect(await drain(ds.loader({ batchSize: 16, shuffle: 'full', seed: 3, syncReadMaxBytes: 0, concurrency }))).toBe(600);
      const handles = ds.stats().shardHandles;
      expect([concurrency, handles.peakOpen, handles.overflows]).toEqual([concurrency, 2, 0]);
      await ds.close();
    }
  });

  it('over http, counts index page requests in concurrency', async () => {
    const root = tmpDir();
    // small index pages and a small page cache: lookups are requests all through the epoch
    await writeLoaderDataset(path.join(root, 'ds'), 600, { pageSize: 1024 });
    const server = await startFlakyServer(root, [], { delayMs: 2 });
    try {
      for (const concurrency of [1, 2]) {
        const ds = await openDataset(`${server.url}/ds`, { checkShards: 'size', pageCacheBytes: 4096 });
        let n = 0;
        for await (const batch of ds.loader({ batchSize: 32, shuffle: 'full', seed: 4, concurrency, maxReadBytes: 0, prefetch: 2 ** 20 })) {
          n += batch.length;
          await settle(2); // the consumer's step, while the loader reads ahead: the next batches' lookups and reads
        }
        expect(n).toBe(600);
        await ds.close();
        expect([concurrency, server.peakInFlight]).toEqual([concurrency, concurrency]);
      }
    } finally {
      await server.stop();
    }
  });
});
