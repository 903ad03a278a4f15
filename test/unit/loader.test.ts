import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import type { Sample } from '../../formats/sample.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import type { DecodedImage } from '../../src/read/decode-image.js';
import type { Loader } from '../../src/read/loader.js';
import { mergeLoaderStates } from '../../src/read/loader-state.js';
import { loadImageFixtures } from '../helpers/fixture-samples.js';
import { loaderSample, sameBytes, writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const N = 600;

async function collect<S>(loader: Loader<S>): Promise<S[][]> {
  const batches: S[][] = [];
  for await (const batch of loader) batches.push(batch);
  return batches;
}

async function dataset(n = N, options: Parameters<typeof writeLoaderDataset>[2] = {}): Promise<Dataset> {
  return openDataset(await writeLoaderDataset(tmpDir(), n, options));
}

describe('Dataset.loader', () => {
  it('syncReadMaxBytes 0 (network file systems, cold disks): every read goes through the thread pool, same bytes', async () => {
    const ds = await openDataset(await writeLoaderDataset(tmpDir(), 300), { syncReadMaxBytes: 0 });
    const samples = (await collect(ds.loader({ batchSize: 16, shuffle: 'full', seed: 3, syncReadMaxBytes: 0, concurrency: 3 }))).flat();
    expect(samples.length).toBe(300);
    for (const s of samples) expect(sameBytes(s.members.bin, loaderSample(Number(s.key.split('/').pop())).members.bin), s.key).toBe(true);
    await expect(openDataset(tmpDir(), { syncReadMaxBytes: -1 })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
    await ds.close();
  });

  it('shuffle none: batches of batchSize in key order, bytes equal to atSync, last batch short', async () => {
    const ds = await dataset();
    expect(ds.shards.length).toBeGreaterThan(3);
    const loader = ds.loader({ batchSize: 32 });
    expect(loader.batches).toBe(Math.ceil(N / 32));
    const batches = await collect(loader);
    expect(batches.map((b) => b.length)).toEqual([...Array(Math.floor(N / 32)).fill(32), N % 32]);
    const samples = batches.flat();
    samples.forEach((s, i) => {
      const want = loaderSample(i);
      expect(s.key).toBe(want.key);
      expect(sameBytes(s.members.bin, want.members.bin)).toBe(true);
      expect(sameBytes(s.members.cls, want.members.cls)).toBe(true);
    });
    // Consecutive samples of a batch share reads: far fewer reads than samples.
    expect(loader.stats().reads).toBeLessThan(N / 4);
    expect(loader.stats()).toMatchObject({ samples: N, batches: batches.length, fetchedSamples: N });
    await ds.close();
  });

  for (const layout of ['tar', 'packed'] as const) {
    for (const compress of ['none', 'lz4'] as const) {
      it(`shuffle full over ${layout}/${compress}: every sample once, bytes intact, deterministic per (seed, epoch)`, async () => {
        const ds = await dataset(300, { layout, compress });
        const keysOf = async (epoch: number): Promise<string[]> =>
          (await collect(ds.loader({ batchSize: 10, shuffle: 'full', seed: 'abc', epoch }))).flat().map((s) => s.key);
        const epoch0 = await keysOf(0);
        expect([...epoch0].sort()).toEqual(Array.from({ length: 300 }, (_, i) => loaderSample(i).key));
        expect(await keysOf(0)).toEqual(epoch0);
        expect(await keysOf(1)).not.toEqual(epoch0);
        for (const s of (await collect(ds.loader({ batchSize: 7, shuffle: 'full', seed: 3 }))).flat()) {
          const i = Number(s.key.slice(2));
          expect(sameBytes(s.members.bin, loaderSample(i).members.bin)).toBe(true);
        }
        await ds.close();
      });
    }
  }

  it('samples from the default path stay intact after later batches (no pooled buffer is reused)', async () => {
    const ds = await dataset();
    const all = (await collect(ds.loader({ batchSize: 16, shuffle: 'block', seed: 1, windowShards: 2 }))).flat();
    expect(all.length).toBe(N);
    for (const s of all) expect(sameBytes(s.members.bin, loaderSample(Number(s.key.slice(2))).members.bin)).toBe(true);
    await ds.close();
  });

  it('view mode yields the same bytes, valid until the next batch; copies stay valid', async () => {
    const ds = await dataset();
    const copies: Sample[] = [];
    const loader = ds.loader({ batchSize: 16, shuffle: 'full', seed: 5, view: true });
    for await (const batch of loader) {
      for (const s of batch) {
        expect(sameBytes(s.members.bin, loaderSample(Number(s.key.slice(2))).members.bin)).toBe(true);
        copies.push({ key: s.key, members: { bin: (s.members.bin as Uint8Array).slice() } });
      }
    }
    expect(copies.length).toBe(N);
    for (const s of copies) expect(sameBytes(s.members.bin, loaderSample(Number(s.key.slice(2))).members.bin)).toBe(true);
    await ds.close();
  });

  it('ranks: every sample goes to exactly one rank with partition drop, equal counts', async () => {
    const ds = await dataset(301);
    const seen: string[] = [];
    for (let rank = 0; rank < 4; rank++) {
      const loader = ds.loader({ batchSize: 8, shuffle: 'full', seed: 9, rank, worldSize: 4, partition: 'drop' });
      expect(loader.length).toBe(75);
      seen.push(...(await collect(loader)).flat().map((s) => s.key));
    }
    expect(new Set(seen).size).toBe(300);
    await ds.close();
  });

  it('dropLast drops the short last batch', async () => {
    const ds = await dataset(100);
    const batches = await collect(ds.loader({ batchSize: 30, dropLast: true }));
    expect(batches.map((b) => b.length)).toEqual([30, 30, 30]);
    await ds.close();
  });

  it('resume: a state taken after k batches yields exactly the rest, without reading the first samples again', async () => {
    const ds = await dataset();
    const options = { batchSize: 25, shuffle: 'full' as const, seed: 11, epoch: 2 };
    const full = (await collect(ds.loader(options))).flat().map((s) => s.key);
    const first = ds.loader({ ...options, prefetch: 0 });
    const head: string[] = [];
    for (let b = 0; b < 7; b++) head.push(...((await first.next()).value as Sample[]).map((s) => s.key));
    const state = JSON.parse(JSON.stringify(first.state())) as ReturnType<typeof first.state>;
    await first.close();
    expect(JSON.stringify(state).length).toBeLessThan(1000);
    const resumed = ds.loader({ ...options, resumeFrom: state, maxReadBytes: 0 });
    expect(resumed.length).toBe(N - 175);
    const readsBefore = ds.io.reads;
    const tail = (await collect(resumed)).flat().map((s) => s.key);
    expect([...head, ...tail]).toEqual(full);
    // One read per remaining sample at most (maxReadBytes 0: no coalescing), plus index pages.
    expect(ds.io.reads - readsBefore).toBeLessThanOrEqual(N - 175 + 20);
    await ds.close();
  });

  it('refuses a state from another dataset or other options with BAD_STATE', async () => {
    const a = await dataset(50);
    const b = await dataset(60);
    const loader = a.loader({ batchSize: 5, shuffle: 'full', seed: 1 });
    await loader.next();
    const state = loader.state();
    expect(() => b.loader({ batchSize: 5, shuffle: 'full', seed: 1, resumeFrom: state })).toThrow(
      expect.objectContaining({ code: ErrorCodes.BAD_STATE, message: expect.stringContaining('another dataset') }),
    );
    expect(() => a.loader({ batchSize: 5, shuffle: 'full', seed: 2, resumeFrom: state })).toThrow(expect.objectContaining({ code: ErrorCodes.BAD_STATE }));
    expect(() => a.loader({ resumeFrom: { kind: 'epoch' } as never })).toThrow(expect.objectContaining({ code: ErrorCodes.BAD_STATE }));
    await a.close();
    await b.close();
  });

  it('merged rank states resume on a different world size', async () => {
    const ds = await dataset(200);
    const options = { batchSize: 4, shuffle: 'full' as const, seed: 4 };
    const loaders = [0, 1, 2].map((rank) => ds.loader({ ...options, rank, worldSize: 3, partition: 'drop' as const }));
    const seen: string[] = [];
    for (const [r, loader] of loaders.entries()) {
      for (let b = 0; b < 3 + r; b++) seen.push(...((await loader.next()).value as Sample[]).map((s) => s.key));
    }
    const merged = mergeLoaderStates(loaders.map((l) => l.state()));
    for (let rank = 0; rank < 2; rank++) {
      seen.push(...(await collect(ds.loader({ ...options, rank, worldSize: 2, partition: 'drop', resumeFrom: merged }))).flat().map((s) => s.key));
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeGreaterThanOrEqual(199);
    await ds.close();
  });

  it('each rank resumes from its own state on the same world size; another rank or world size is told to merge', async () => {
    const ds = await dataset(200);
    const options = { batchSize: 4, shuffle: 'full' as const, seed: 5, worldSize: 3 };
    const whole = await Promise.all([0, 1, 2].map(async (rank) => (await collect(ds.loader({ ...options, rank }))).flat().map((s) => s.key)));
    for (const rank of [0, 1, 2]) {
      const first = ds.loader({ ...options, rank });
      for (let b = 0; b < 2 + rank; b++) await first.next();
      const state = JSON.parse(JSON.stringify(first.state())) as ReturnType<typeof first.state>;
      await first.close();
      const resumed = ds.loader({ ...options, rank, resumeFrom: state });
      expect((await collect(resumed)).flat().map((s) => s.key)).toEqual(whole[rank]!.slice((2 + rank) * 4));
      expect(() => ds.loader({ ...options, rank: (rank + 1) % 3, resumeFrom: state })).toThrow(
        expect.objectContaining({ code: ErrorCodes.BAD_STATE, message: expect.stringContaining('mergeLoaderStates()') }),
      );
      expect(() => ds.loader({ ...options, rank: 0, worldSize: 2, resumeFrom: state })).toThrow(
        `resumeFrom is the state of rank ${rank} of 3, but this loader is rank 0 of 2: to change the world size, ` +
          'merge the states of all 3 ranks with mergeLoaderStates() and resume every rank from the result',
      );
    }
    await ds.close();
  });

  it('prefetch stays bounded in bytes (one batch beyond the bound at most)', async () => {
    const ds = await dataset(1000);
    const prefetch = 20_000;
    const loader = ds.loader({ batchSize: 8, shuffle: 'full', seed: 2, prefetch });
    let maxBatchBytes = 0;
    for await (const batch of loader) {
      const bytes = batch.reduce((n, s) => n + (s.members.bin?.length ?? 0) + 2048, 0);
      maxBatchBytes = Math.max(maxBatchBytes, bytes);
      await new Promise((resolve) => setImmediate(resolve)); // let read-ahead run
    }
    const stats = loader.stats();
    expect(stats.peakPrefetchedBytes).toBeGreaterThan(0);
    expect(stats.peakPrefetchedBytes).toBeLessThanOrEqual(prefetch + 2 * maxBatchBytes);
    expect(stats.prefetchedBytes).toBe(0);
    await ds.close();
  });

  it('reads ahead while the consumer awaits other work, and holds no batch ahead for a consumer that never yields', async () => {
    const ds = await dataset(1000);
    const options = { batchSize: 8, shuffle: 'full' as const, seed: 3, prefetch: 1 << 20 };
    const idle = ds.loader(options);
    let idleAhead = 0;
    for await (const batch of idle) {
      expect(batch.length).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 1)); // "GPU work": the event loop turns, read-ahead runs
      const s = idle.stats();
      idleAhead = Math.max(idleAhead, s.fetchedSamples - s.samples);
    }
    expect(idleAhead).toBeGreaterThanOrEqual(5 * 8);
    expect(idle.stats().stalls).toBeLessThanOrEqual(5); // of 125 batches: the first ones wait for their shards to open
    const tight = ds.loader(options);
    let tightAhead = 0;
    for await (const batch of tight) {
      expect(batch.length).toBeGreaterThan(0);
      const s = tight.stats();
      tightAhead = Math.max(tightAhead, s.fetchedSamples - s.samples);
    }
    // Batches read synchronously: each next() reads its own batch only, none ahead (a batch read ahead in the same call
    // would gain nothing and keep one more batch of buffers alive, see read-ahead.ts).
    expect(tightAhead).toBe(0);
    await ds.close();
  });

  it('break stops the loader; later next() is done', async () => {
    const ds = await dataset();
    const loader = ds.loader({ batchSize: 10 });
    for await (const batch of loader) {
      expect(batch.length).toBe(10);
      break;
    }
    expect((await loader.next()).done).toBe(true);
    expect(loader.state().progress).toMatchObject({ yielded: 10 });
    await ds.close();
  });

  it('a flipped byte in a shard fails the epoch with CHECKSUM naming dataset, shard, key and offset', async () => {
    const dir = await writeLoaderDataset(tmpDir(), 200, { layout: 'packed' });
    const probe = await openDataset(dir);
    const entry = await probe.locate(loaderSample(123).key);
    const shardFile = probe.shardLocation(entry.shard);
    const memberOffset = entry.offset + (entry.members[0]?.offset ?? 0);
    await probe.close();
    const bytes = fs.readFileSync(shardFile);
    bytes[memberOffset + 5] = (bytes[memberOffset + 5] as number) ^ 0x40;
    fs.writeFileSync(shardFile, bytes);
    // checkShards 'size': the flipped byte is past the fingerprinted head of the shard anyway, but be explicit.
    const ds = await openDataset(dir, { checkShards: 'size' });
    const err = await collect(ds.loader({ batchSize: 16, shuffle: 'full', seed: 1 })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.CHECKSUM, key: loaderSample(123).key, shard: path.basename(shardFile), offset: memberOffset });
    expect(String((err as Error).message)).toContain(dir);
    const unverified = (await collect(ds.loader({ batchSize: 16, verify: false }))).flat();
    expect(unverified.length).toBe(200);
    expect(sameBytes(unverified[123]?.members.bin, loaderSample(123).members.bin)).toBe(false);
    await ds.close();
    // One read per sample (maxReadBytes 0): each sample goes through the sync path's read, which checksums a lone
    // member in the native copy when the addon is built; the same error either way, and the same bytes unverified.
    for (const native of [true, false]) {
      const single = await openDataset(dir, { checkShards: 'size', native });
      const failed = await collect(single.loader({ batchSize: 16, shuffle: 'full', seed: 2, maxReadBytes: 0 })).catch((e: unknown) => e);
      expect(failed).toMatchObject({ code: ErrorCodes.CHECKSUM, key: loaderSample(123).key, shard: path.basename(shardFile), offset: memberOffset });
      const plain = (await collect(single.loader({ batchSize: 16, verify: false, maxReadBytes: 0 }))).flat();
      expect(plain.map((x) => x.key)).toEqual(unverified.map((x) => x.key));
      plain.forEach((x, i) => expect(sameBytes(x.members.bin, unverified[i]?.members.bin)).toBe(true));
      await single.close();
    }
  });

  it('decode image: image members become raw pixels with their shape; others stay bytes', async () => {
    const fixtures = await loadImageFixtures();
    const dir = tmpDir();
    const writer = new DatasetWriter({ dir });
    const good = [...fixtures.values()].filter((f) => !f.sample.key.startsWith('broken') && f.sample.key !== 'labels');
    for (const f of good) writer.add(f.sample);
    await writer.finish();
    const ds = await openDataset(dir);
    const decoded = (await collect(ds.loader({ batchSize: 3, decode: 'image', decodeConcurrency: 2 }))).flat();
    expect(decoded.length).toBe(good.length);
    let images = 0;
    for (const s of decoded) {
      const source = fixtures.get(s.key)?.sample as Sample;
      expect(Object.keys(s.members)).toEqual(Object.keys(source.members));
      for (const [ext, value] of Object.entries(s.members)) {
        if (value instanceof Uint8Array) {
          expect(/\.?(jpe?g|png|webp)$/i.test(ext)).toBe(false);
          continue;
        }
        const image = value as DecodedImage;
        const meta = await sharp(source.members[ext] as Uint8Array).metadata();
        const upright = (meta.orientation ?? 1) >= 5;
        expect([image.width, image.height]).toEqual(upright ? [meta.height, meta.width] : [meta.width, meta.height]);
        expect(image.data.length).toBe(image.width * image.height * image.channels);
        images++;
      }
    }
    expect(images).toBeGreaterThan(2);
    const first = good[0] as (typeof good)[number];
    const imageExt = Object.keys(first.sample.members).find((e) => /(jpe?g|png|webp)$/i.test(e)) as string;
    const onlyMap = (await collect(ds.loader({ decode: { [imageExt]: 'none' } }))).flat();
    expect(onlyMap.every((s) => Object.values(s.members).every((m) => m instanceof Uint8Array))).toBe(true);
    await ds.close();
  });

  it('validates options with sharp-style messages', async () => {
    const ds = await dataset(10);
    expect(() => ds.loader({ batchSize: 0.5 })).toThrow('Expected integer between 1 and 2147483647 for batchSize but received 0.5 of type number');
    expect(() => ds.loader({ shuffle: 'random' as never })).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG }));
    expect(() => ds.loader({ decode: 'pixels' as never })).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG }));
    expect(() => ds.loader({ windowShards: 2 })).toThrow('windowShards applies to shuffle "block" only');
    expect(() => ds.loader({ rank: 2, worldSize: 2 })).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG }));
    await ds.close();
    expect(() => ds.loader()).toThrow(expect.objectContaining({ code: ErrorCodes.CLOSED }));
  });
});
