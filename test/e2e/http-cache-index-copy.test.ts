import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { indexChecksOut } from '../../src/cache/index-copy.js';
import type { CacheEvent } from '../../src/cache/shard-cache.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import { batches, type BytesLoaderOptions, cachedBytes, expectLocalBatches, flipByte, indexCopies, serveCacheDatasets } from '../helpers/cache-server.js';
import { flipBits } from '../helpers/checked.js';
import { nginxSkipReason } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

/**
 * Issue #25: the index file is copied into the shard cache (index-copy.ts), so a new process on a fully cached dir
 * sends no request for index pages and reads its first epoch through the local path (cached-batch.ts); a dataset on
 * a local path (a network file system) gets the same copy; a page of the copy damaged after it was checked is never
 * used: the reads go on from the dataset's location.
 */
const N = 1500;

describe.skipIf(nginxSkipReason !== undefined)('the index file in the shard cache (real nginx)', () => {
  const fx = serveCacheDatasets({ ds: { samples: N, shardBytes: 128 * 1024 } });
  const indexFile = (): string => fx.local.manifest.index.file;
  const indexGets = async (from: number): Promise<number> => (await fx.server.accessLog()).slice(from).filter((e) => e.uri.endsWith(`/${indexFile()}`)).length;

  for (const shuffle of ['none', 'block', 'full'] as const) {
    it(`${shuffle} shuffle: a new process on a fully cached dir sends no index request and reads its first epoch locally (no miss, no stall)`, async () => {
      const cache = { dir: tmpDir(), maxBytes: 2 * fx.datasetBytes };
      const options: BytesLoaderOptions = { batchSize: 24, shuffle, seed: 3, ...(shuffle === 'block' ? { windowShards: 3 } : {}) };
      const logStart = (await fx.server.accessLog()).length;
      const filler = await openDataset(`${fx.server.url}/ds`, { cache });
      await batches(filler.loader(options));
      await filler.close();
      expect(await indexGets(logStart)).toBe(1); // the index was fetched once, whole, in one request
      expect(indexCopies(cache.dir)).toHaveLength(1);

      const before = (await fx.server.accessLog()).length;
      const ds = await openDataset(`${fx.server.url}/ds`, { cache }); // another process, here: another dataset object
      const { got, stats } = await batches(ds.loader({ ...options, epoch: 1 }));
      await expectLocalBatches(fx.local, got, { ...options, epoch: 1 });
      // the manifest is all it asks nginx for: no index page, no shard
      expect((await fx.server.accessLog()).slice(before).map((e) => e.uri)).toEqual(['/ds/manifest.json']);
      expect(stats.stalls).toBe(0);
      expect(stats.cache).toMatchObject({ misses: 0, remoteBytes: 0, bypassReads: 0 });
      expect(stats.cache?.hits).toBeGreaterThanOrEqual(got.length);
      await ds.close();
    });
  }

  it('a damaged index copy is detected (page checksum), removed, fetched again, and never used', async () => {
    const events: CacheEvent[] = [];
    const cache = { dir: tmpDir(), maxBytes: 2 * fx.datasetBytes, onEvent: (e: CacheEvent) => events.push(e) };
    const first = await openDataset(`${fx.server.url}/ds`, { cache });
    await first.close();
    const [copy] = indexCopies(cache.dir);
    const bytes = fs.readFileSync(copy as string);
    const stat = fs.statSync(copy as string);
    const pageSize = fx.local.manifest.index.pageSize;
    flipBits(bytes, pageSize + (pageSize >> 1), 0x5a); // inside page 1
    fs.writeFileSync(copy as string, bytes);
    fs.utimesSync(copy as string, stat.atime, stat.mtime); // its times as they were (its ctime moves all the same)
    expect(indexChecksOut(bytes, fx.local.manifest.index)).toBe(false);

    const before = (await fx.server.accessLog()).length;
    const ds = await openDataset(`${fx.server.url}/ds`, { cache });
    expect(events).toEqual([{ type: 'corrupt', shard: indexFile(), reason: expect.stringContaining('fails its size or CRC32C check') }]);
    expect(await indexGets(before)).toBe(1);
    expect(indexChecksOut(fs.readFileSync(copy as string), fx.local.manifest.index)).toBe(true);
    expect(fs.existsSync(`${copy as string}.ok`)).toBe(true);
    const options: BytesLoaderOptions = { batchSize: 32, shuffle: 'full', seed: 8 };
    await expectLocalBatches(fx.local, (await batches(ds.loader(options))).got, options);
    await ds.close();
  });

  for (const via of ['loader', 'get'] as const) {
    it(`a page of the copy damaged after open (${via}): the read does not fail, the copy is dropped (said once), its pages come over http, the next process fetches a new copy`, async () => {
      const events: CacheEvent[] = [];
      const cache = { dir: tmpDir(), maxBytes: 2 * fx.datasetBytes, onEvent: (e: CacheEvent) => events.push(e) };
      await (await openDataset(`${fx.server.url}/ds`, { cache })).close();
      const ds = await openDataset(`${fx.server.url}/ds`, { cache }); // trusts the copy by its proof, unread
      const [copy] = indexCopies(cache.dir);
      const { pageSize, pageCount } = fx.local.index.header;
      // bit rot in two pages every lookup path reads (the root, the last leaf), under the open descriptor
      flipByte(copy as string, (pageCount - 1) * pageSize + 100);
      flipByte(copy as string, fx.local.index.tree.header.rootPage * pageSize + 60);
      const before = (await fx.server.accessLog()).length;
      if (via === 'loader') {
        const options: BytesLoaderOptions = { batchSize: 32, shuffle: 'full', seed: 6 };
        await expectLocalBatches(fx.local, (await batches(ds.loader(options))).got, options);
      } else {
        for (const p of [0, 700, N - 1]) {
          const key = (await fx.local.at(p)).key;
          const got = await ds.get(key);
          expect(Buffer.from(got.members.bin as Uint8Array).equals(Buffer.from((await fx.local.get(key)).members.bin as Uint8Array))).toBe(true);
        }
      }
      expect(events).toEqual([{ type: 'corrupt', shard: indexFile(), reason: expect.stringContaining('a page of its copy in the cache fails its check') }]);
      expect(indexCopies(cache.dir)).toEqual([]);
      const pageGets = (await fx.server.accessLog()).slice(before).filter((e) => e.uri.endsWith(`/${indexFile()}`));
      expect(pageGets.length).toBeGreaterThan(0);
      expect(pageGets.every((e) => /^bytes=\d+-\d+$/.test(e.range))).toBe(true); // pages, not the whole file
      await ds.close();

      const again = await openDataset(`${fx.server.url}/ds`, { cache });
      expect(indexCopies(cache.dir)).toHaveLength(1);
      expect(indexChecksOut(fs.readFileSync(indexCopies(cache.dir)[0] as string), fx.local.manifest.index)).toBe(true);
      await again.close();
    });
  }

  it('the index copy is counted in maxBytes: with a cache of half the dataset, copies and index stay within it', async () => {
    const dir = tmpDir();
    const maxBytes = Math.floor(fx.datasetBytes / 2);
    const ds = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes } });
    const options: BytesLoaderOptions = { batchSize: 32, shuffle: 'block', seed: 2, windowShards: 2 };
    for (const epoch of [0, 1]) {
      await expectLocalBatches(fx.local, (await batches(ds.loader({ ...options, epoch }))).got, { ...options, epoch });
      expect(cachedBytes(dir)).toBeLessThanOrEqual(maxBytes);
      expect(indexCopies(dir)).toHaveLength(1); // never evicted by its own dataset's reads
    }
    expect(ds.stats().cache?.evictions).toBeGreaterThan(0);
    await ds.close();
  });

  describe('a dataset on a local path (a network file system)', () => {
    const ioReads = (ds: Dataset): number => ds.stats().io.reads;

    it('gets its index copied too: a new process reads its pages from the copy, not from the dataset directory', async () => {
      const cache = { dir: tmpDir(), maxBytes: 2 * fx.datasetBytes };
      const dsDir = path.join(fx.root, 'ds');
      await (await openDataset(dsDir, { cache })).close();
      expect(indexCopies(cache.dir)).toHaveLength(1);
      expect(indexChecksOut(fs.readFileSync(indexCopies(cache.dir)[0] as string), fx.local.manifest.index)).toBe(true);
      // the same dataset subdirectory as its shard copies
      const options: BytesLoaderOptions = { batchSize: 24, shuffle: 'full', seed: 4 };
      const filler = await openDataset(dsDir, { cache });
      await batches(filler.loader(options));
      await filler.close();
      expect(fs.readdirSync(cache.dir).filter((n) => !n.startsWith('.'))).toEqual([path.basename(path.dirname(indexCopies(cache.dir)[0] as string))]);

      const ds = await openDataset(dsDir, { cache });
      const readsAtOpen = ioReads(ds); // the manifest (the index's copy and the shards' are not the source's files)
      const { got, stats } = await batches(ds.loader({ ...options, epoch: 1 }));
      await expectLocalBatches(fx.local, got, { ...options, epoch: 1 });
      expect(ds.stats().pageCache.misses).toBeGreaterThan(0); // pages were read...
      expect(ioReads(ds)).toBe(readsAtOpen); // ...and none from the dataset's directory
      expect(stats.cache).toMatchObject({ misses: 0, remoteBytes: 0 });
      await ds.close();
    });

    it('a cache smaller than the index: the index is read from the directory, said once', async () => {
      const events: CacheEvent[] = [];
      const ds = await openDataset(path.join(fx.root, 'ds'), { cache: { dir: tmpDir(), maxBytes: 1000, onEvent: (e) => events.push(e) } });
      expect(events).toEqual([{ type: 'bypass', shard: indexFile(), reason: expect.stringContaining("the index is read from the dataset's directory: it is larger than the cache") }]);
      const options: BytesLoaderOptions = { batchSize: 32, seed: 1, shuffle: 'block' };
      await expectLocalBatches(fx.local, (await batches(ds.loader(options))).got, options);
      await ds.close();
    });

    it('a page of its copy damaged after open: the reads go on from the directory, the copy is dropped, said once', async () => {
      const events: CacheEvent[] = [];
      const cache = { dir: tmpDir(), maxBytes: 2 * fx.datasetBytes, onEvent: (e: CacheEvent) => events.push(e) };
      await (await openDataset(path.join(fx.root, 'ds'), { cache })).close();
      const ds = await openDataset(path.join(fx.root, 'ds'), { cache });
      const [copy] = indexCopies(cache.dir);
      const { pageSize, pageCount } = fx.local.index.header;
      for (let p = 1; p < pageCount; p++) flipByte(copy as string, p * pageSize + 64); // every page past the header
      const readsAtOpen = ioReads(ds);
      const options: BytesLoaderOptions = { batchSize: 32, shuffle: 'full', seed: 9 };
      await expectLocalBatches(fx.local, (await batches(ds.loader(options))).got, options);
      expect(events).toEqual([{ type: 'corrupt', shard: indexFile(), reason: expect.stringContaining("pages are read from the dataset's directory from now on") }]);
      expect(indexCopies(cache.dir)).toEqual([]);
      expect(ioReads(ds)).toBeGreaterThan(readsAtOpen); // its pages, from the directory
      await ds.close();
    });
  });
});
