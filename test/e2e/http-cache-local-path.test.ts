import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sample } from '../../formats/sample.js';
import type { CacheEvent, ShardCache } from '../../src/cache/shard-cache.js';
import { nativeAvailable } from '../../src/native/native.js';
import { openDataset } from '../../src/read/dataset.js';
import { batches, type BytesLoaderOptions, expectLocalBatches, flipByte, rangeBytes, serveCacheDatasets, shardCopies, shardLog } from '../helpers/cache-server.js';
import { nginxSkipReason } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

/**
 * Issue #25: a fully cached epoch is read the way local shards are (cached-batch.ts): synchronously, from the copies,
 * index records from decoded pages. Same batches and bytes as local disk, no request to nginx, every member checked,
 * and copies evicted mid-epoch (in this process or by another) never read wrongly.
 */
const N = 1500;
const modes = nativeAvailable() ? [true, false] : [false];

describe.skipIf(nginxSkipReason !== undefined)('fully cached epochs read as local ones (real nginx)', () => {
  const fx = serveCacheDatasets({ ds: { samples: N, shardBytes: 128 * 1024 }, other: { samples: 400, shardBytes: 128 * 1024 } });
  const shardRequests = async (from: number): Promise<number> => shardLog((await fx.server.accessLog()).slice(from)).length;

  for (const native of modes) {
    for (const shuffle of ['none', 'block', 'full'] as const) {
      it(`${shuffle} shuffle${native ? '' : ', pread (no addon)'}: after the first epoch, the same batches as local disk, no request, no miss, no stall`, async () => {
        const ds = await openDataset(`${fx.server.url}/ds`, { native, cache: { dir: tmpDir(), maxBytes: 2 * fx.datasetBytes } });
        const options: BytesLoaderOptions = { batchSize: 24, shuffle, seed: 5, ...(shuffle === 'block' ? { windowShards: 3 } : {}) };
        const first = await batches(ds.loader(options));
        await expectLocalBatches(fx.local, first.got, options);
        for (const epoch of [1, 2]) {
          const before = (await fx.server.accessLog()).length;
          const pagesBefore = ds.stats().pageCache.misses;
          const { got, stats } = await batches(ds.loader({ ...options, epoch, batchSize: epoch === 2 ? 1 : 24 }));
          await expectLocalBatches(fx.local, got, { ...options, epoch, batchSize: epoch === 2 ? 1 : 24 });
          expect((await fx.server.accessLog()).length).toBe(before); // no request at all: shards nor index pages
          expect(ds.stats().pageCache.misses).toBe(pagesBefore);
          // every batch was read synchronously when it was started (the remote path's first batch always stalls)
          expect(stats.stalls).toBe(0);
          expect(stats.cache).toMatchObject({ misses: 0, remoteBytes: 0, bypassReads: 0 });
          expect(stats.cache?.hits).toBeGreaterThanOrEqual(got.length);
        }
        await ds.close();
      });
    }
  }

  it('a new process opens copies its proofs vouch for synchronously: once its index pages are decoded, no miss and no stall', async () => {
    const cache = { dir: tmpDir(), maxBytes: 2 * fx.datasetBytes };
    const options: BytesLoaderOptions = { batchSize: 32, shuffle: 'full', seed: 4 };
    const filler = await openDataset(`${fx.server.url}/ds`, { cache });
    await batches(filler.loader(options));
    await filler.close();
    const ds = await openDataset(`${fx.server.url}/ds`, { cache }); // another process, here: another dataset object
    for (let p = 0; p < ds.size; p++) await ds.index.leafOf(p); // (not needed since the index copy: http-cache-index-copy.test.ts)
    const before = (await fx.server.accessLog()).length;
    const { got, stats } = await batches(ds.loader({ ...options, epoch: 1 }));
    await expectLocalBatches(fx.local, got, { ...options, epoch: 1 });
    expect((await fx.server.accessLog()).length).toBe(before);
    expect(stats.stalls).toBe(0);
    expect(stats.cache).toMatchObject({ misses: 0, remoteBytes: 0 });
    await ds.close();
  });

  it('copies evicted mid-epoch, by this process or by others, still yield the right bytes', async () => {
    const dir = tmpDir();
    const maxBytes = Math.ceil(fx.datasetBytes * 1.1);
    const ds = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes } });
    const options: BytesLoaderOptions = { batchSize: 16, shuffle: 'block', seed: 9, windowShards: 2 };
    await batches(ds.loader(options));
    expect(shardCopies(dir).length).toBe(fx.local.shards.length);
    const loader = ds.loader({ ...options, epoch: 1 });
    const got: Sample[][] = [];
    const before = (await fx.server.accessLog()).length;
    let step = 0;
    for await (const batch of loader) {
      got.push(batch);
      step++;
      if (step === 5) {
        // this process stops trusting some copies (what it does when it evicts one, or a member check fails): the
        // batches that read them go the remote path, which checks the copies whole again before reading them
        for (const s of [0, 2, 4]) (ds.cache as ShardCache).suspect(s);
      }
      if (step === 10) {
        // another process evicts copies this one has open: the open maps and descriptors keep the bytes
        for (const f of shardCopies(dir).slice(0, 3)) fs.rmSync(f);
      }
      if (step === 15) {
        // another dataset's loader in the same dir makes room by evicting this dataset's copies
        const other = await openDataset(`${fx.server.url}/other`, { cache: { dir, maxBytes } });
        await batches(other.loader({ batchSize: 32 }));
        expect(other.stats().cache?.evictions).toBeGreaterThan(0);
        await other.close();
      }
    }
    await expectLocalBatches(fx.local, got, { ...options, epoch: 1 });
    expect(loader.stats().cache?.hits).toBeGreaterThan(0);
    expect(await shardRequests(before)).toBeGreaterThan(0); // the other dataset's shards
    // a new process finds what is left and fetches what is gone; its bytes are right too
    const again = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes } });
    await expectLocalBatches(fx.local, (await batches(again.loader({ ...options, epoch: 2 }))).got, { ...options, epoch: 2 });
    expect(again.stats().cache?.remoteBytes).toBeGreaterThan(0);
    await again.close();
    await ds.close();
  });

  it('a copy evicted while it is being opened is not kept open as ready: every ready copy is on disk, within maxBytes', async () => {
    const dir = tmpDir();
    const maxBytes = Math.floor(fx.datasetBytes / 4);
    const ds = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes, policy: 'lru' } });
    const cache = ds.cache as ShardCache;
    for (const epoch of [0, 1]) {
      const options: BytesLoaderOptions = { batchSize: 32, shuffle: 'full', seed: 1, epoch };
      await expectLocalBatches(fx.local, (await batches(ds.loader(options))).got, options);
      const onDisk = new Set(shardCopies(dir).map((f) => path.basename(f).split('~')[0]));
      const ready = fx.local.shards.filter((_, s) => cache.isReady(s));
      // (a copy evicted between its download's rename and its open once stayed ready through its unlinked file:
      // 19 of 26 shards, the disk holding a quarter of them, and later epochs fetched nothing)
      expect(ready.every((r) => onDisk.has(encodeURIComponent(r.file)))).toBe(true);
      expect(ready.reduce((n, r) => n + r.bytes, 0)).toBeLessThanOrEqual(maxBytes);
    }
    await ds.close();
  });

  /** Descriptors this process holds open on files under `dir`. */
  const openUnder = (dir: string): number =>
    fs.readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir);
      } catch {
        return false; // closed meanwhile (readdir's own descriptor)
      }
    }).length;

  for (const native of modes) {
    it(`maxOpenShards bounds the copies open at once${native ? '' : ' (pread)'}: a full shuffle over more shards reopens them by their proof, same bytes, no request`, async () => {
      const dir = tmpDir();
      const maxOpenShards = 3;
      expect(fx.local.shards.length).toBeGreaterThan(3 * maxOpenShards);
      const ds = await openDataset(`${fx.server.url}/ds`, { native, maxOpenShards, cache: { dir, maxBytes: 2 * fx.datasetBytes } });
      const options: BytesLoaderOptions = { batchSize: 8, shuffle: 'full', seed: 11 };
      await expectLocalBatches(fx.local, (await batches(ds.loader(options))).got, options);
      const before = (await fx.server.accessLog()).length;
      for (const epoch of [1, 2]) {
        const loader = ds.loader({ ...options, epoch });
        const got: Sample[][] = [];
        let most = 0;
        for await (const batch of loader) {
          got.push(batch);
          most = Math.max(most, openUnder(dir)); // copies and the index copy
        }
        await expectLocalBatches(fx.local, got, { ...options, epoch });
        expect(most).toBeLessThanOrEqual(maxOpenShards + 1);
        expect(loader.stats().cache).toMatchObject({ remoteBytes: 0, bypassReads: 0 });
      }
      expect((await fx.server.accessLog()).length).toBe(before);
      // a closed (parked) copy removed by another process: fetched again when read, the right bytes
      const open = new Set(fs.readdirSync('/proc/self/fd').map((fd) => { try { return fs.readlinkSync(`/proc/self/fd/${fd}`); } catch { return ''; } }));
      const closed = shardCopies(dir).filter((f) => !open.has(f));
      expect(closed.length).toBeGreaterThan(0);
      for (const f of closed.slice(0, 2)) fs.rmSync(f);
      const { got, stats } = await batches(ds.loader({ ...options, epoch: 3 }));
      await expectLocalBatches(fx.local, got, { ...options, epoch: 3 });
      expect(stats.cache?.remoteBytes).toBeGreaterThan(0);
      await ds.close();
    });
  }

  for (const native of modes) {
    it(`a copy damaged under an open map${native ? '' : ' (pread)'}: the batch is read again, the copy checked whole, removed (said once) and fetched again; no read fails`, async () => {
      const dir = tmpDir();
      const events: CacheEvent[] = [];
      const ds = await openDataset(`${fx.server.url}/ds`, { native, cache: { dir, maxBytes: 2 * fx.datasetBytes, onEvent: (e) => events.push(e) } });
      const options: BytesLoaderOptions = { batchSize: 32 };
      await batches(ds.loader(options));
      // a byte of sample 700's `bin` member, changed in place: the file is the inode the copy's map and descriptor hold
      const entry = await fx.local.locate('s/000700');
      const shard = fx.local.shards[entry.shard] as { file: string; bytes: number };
      const victim = shardCopies(dir).find((f) => path.basename(f).startsWith(encodeURIComponent(shard.file))) as string;
      flipByte(victim, entry.offset + (entry.members[0]?.offset as number) + 5);
      const before = (await fx.server.accessLog()).length;
      const { got, stats } = await batches(ds.loader(options));
      await expectLocalBatches(fx.local, got, options);
      expect(events).toEqual([{ type: 'corrupt', shard: shard.file, reason: 'its copy fails its CRC32C' }]);
      // the damaged shard, fetched again whole, once; nothing else
      const log = shardLog((await fx.server.accessLog()).slice(before));
      expect(log.map((e) => e.uri)).toEqual([expect.stringMatching(new RegExp(`/${shard.file}$`))]);
      expect(rangeBytes(log)).toBe(shard.bytes);
      expect(stats.cache?.remoteBytes).toBe(shard.bytes);
      expect(fs.readFileSync(victim).equals(fs.readFileSync(path.join(fx.root, 'ds', shard.file)))).toBe(true);
      const after = (await fx.server.accessLog()).length;
      await expectLocalBatches(fx.local, (await batches(ds.loader({ ...options, shuffle: 'full', seed: 2 }))).got, { ...options, shuffle: 'full', seed: 2 });
      expect((await fx.server.accessLog()).length).toBe(after);
      await ds.close();
    });
  }
});
