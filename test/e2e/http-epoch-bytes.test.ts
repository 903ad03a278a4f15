import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDataset } from '../../src/read/dataset.js';
import type { ShuffleName } from '../../src/read/shuffle/index.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { nginxSkipReason, startNginx, type AccessLogEntry, type NginxServer } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

/**
 * Issue #25, part 0: an epoch over http reads each stored byte about once. Before, coalescing ranges across gaps in
 * a shuffled order read the same bytes again and again (block: 7.4x the dataset, full: 5.1x). The byte counts come
 * from nginx's access log (the Range of every shard request), so they are what the server sent.
 */
const N = 3000;
let root: string;
let server: NginxServer;

function rangeBytes(entries: AccessLogEntry[]): number {
  return entries.reduce((n, e) => {
    const m = /bytes=(\d+)-(\d+)/.exec(e.range);
    if (m === null) throw new Error(`a shard request without a byte range: ${e.uri} ${e.range}`);
    return n + Number(m[2]) - Number(m[1]) + 1;
  }, 0);
}

async function epoch(shuffle: ShuffleName, options: { prefetch?: number } = {}): Promise<{ ratio: number; requests: number; reads: number; samples: number }> {
  const ds = await openDataset(`${server.url}/ds`, { checkShards: 'size' });
  const datasetBytes = ds.shards.reduce((n, s) => n + s.bytes, 0);
  const before = (await server.accessLog()).length;
  const loader = ds.loader({ batchSize: 32, shuffle, seed: 5, ...options });
  let samples = 0;
  for await (const batch of loader) samples += batch.length;
  const shardRequests = (await server.accessLog()).slice(before).filter((e) => /shard-\d+\.tar$/.test(e.uri));
  await ds.close();
  return { ratio: rangeBytes(shardRequests) / datasetBytes, requests: shardRequests.length, reads: loader.stats().reads, samples };
}

describe.skipIf(nginxSkipReason !== undefined)('an http epoch reads each byte about once (real nginx)', () => {
  beforeAll(async () => {
    root = tmpDir();
    await writeLoaderDataset(path.join(root, 'ds'), N, { shardBytes: 1024 * 1024 });
    server = await startNginx(root);
  });
  afterAll(async () => {
    await server?.stop();
  });

  // Shard requests of these epochs before the fix (commit 9860b4c), when block read 4.5x and full 2.4x the dataset.
  // After: none 103, block 642 (0.94x the bytes), full 881 (0.95x).
  const requestsBefore = { none: 103, block: 1640, full: 2452 };
  for (const [shuffle, bound] of [['none', 1.1], ['block', 1.1], ['full', 1.5]] as const) {
    it(`${shuffle} shuffle: at most ${bound}x the dataset's bytes, in no more requests than before`, async () => {
      const got = await epoch(shuffle);
      expect(got.samples).toBe(N);
      expect(got.requests).toBe(got.reads);
      expect(got.ratio).toBeLessThanOrEqual(bound);
      expect(got.requests).toBeLessThanOrEqual(requestsBefore[shuffle]);
    });
    // A window smaller than the shuffle's locality (block: 4 shards here) keeps the byte bound and pays in requests.
    it(`${shuffle} shuffle with a 256 KiB prefetch window: still at most ${bound}x the dataset's bytes`, async () => {
      const got = await epoch(shuffle, { prefetch: 256 * 1024 });
      expect(got.samples).toBe(N);
      expect(got.ratio).toBeLessThanOrEqual(bound);
    });
  }
});
