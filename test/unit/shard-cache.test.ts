import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { openDataset } from '../../src/read/dataset.js';
import type { Loader } from '../../src/read/loader.js';
import { sameBytes, writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

/** The shard cache over a local path (a network file system's mount, here a temp dir). The http side: test/e2e/http-cache.test.ts. */
let src: string;
let datasetBytes: number;

async function collect(loader: Loader<Sample>): Promise<Sample[]> {
  const out: Sample[] = [];
  for await (const batch of loader) out.push(...batch);
  return out;
}

describe('shard cache over a local path', () => {
  beforeAll(async () => {
    src = await writeLoaderDataset(path.join(tmpDir(), 'ds'), 600, { shardBytes: 128 * 1024 });
    const ds = await openDataset(src);
    datasetBytes = ds.shards.reduce((n, s) => n + s.bytes, 0);
    await ds.close();
  });

  it('copies each shard once, verified, and reads later epochs from the copies only', async () => {
    const dir = tmpDir();
    const plain = await openDataset(src);
    const options = { batchSize: 16, shuffle: 'full' as const, seed: 4 };
    const want = await collect(plain.loader(options));
    const ds = await openDataset(src, { cache: { dir, maxBytes: 2 * datasetBytes } });
    expect(ds.remote).toBe(true);
    const first = ds.loader(options);
    const got = await collect(first);
    expect(got.map((s) => s.key)).toEqual(want.map((s) => s.key));
    got.forEach((s, i) => expect(sameBytes(s.members.bin, want[i]?.members.bin)).toBe(true));
    expect(first.stats().cache?.remoteBytes).toBe(datasetBytes);
    const second = ds.loader({ ...options, epoch: 1 });
    expect((await collect(second)).length).toBe(600);
    expect(second.stats().cache).toMatchObject({ remoteBytes: 0, misses: 0 });
    expect(second.stats().cache?.hits).toBeGreaterThan(0);
    const copies = fs.readdirSync(path.join(dir, fs.readdirSync(dir).find((n) => !n.startsWith('.')) as string)).filter((n) => /~\d*[0-9a-f]{8}~\d+$/.test(n));
    expect(copies.length).toBe(ds.shards.length);
    expect(() => ds.getSync('s/000001')).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG, message: expect.stringContaining('does not read through the shard cache') }));
    await ds.close();
    await plain.close();
  });

  it('refuses bad cache options with sharp-style messages', async () => {
    await expect(openDataset(src, { cache: { dir: '', maxBytes: 1 } })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringContaining('cache.dir') });
    await expect(openDataset(src, { cache: { dir: tmpDir(), maxBytes: 0 } })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringContaining('cache.maxBytes') });
    await expect(openDataset(src, { cache: { dir: tmpDir(), maxBytes: 1, policy: 'fifo' as never } })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringContaining('cache.policy') });
  });

  it('a full shuffle with half the dataset cached reads ranges instead of fetching a whole shard per sample', async () => {
    // before admission control: 4x (clairvoyant) to 31x (LRU) the dataset per epoch (bench/cache.mjs)
    const dir = tmpDir();
    const ds = await openDataset(src, { cache: { dir, maxBytes: Math.floor(datasetBytes / 2) } });
    for (const epoch of [0, 1]) {
      const loader = ds.loader({ batchSize: 16, shuffle: 'full', seed: 9, epoch });
      expect((await collect(loader)).length).toBe(600);
      expect(loader.stats().cache?.remoteBytes).toBeLessThanOrEqual(datasetBytes);
    }
    await ds.close();
  });
});
