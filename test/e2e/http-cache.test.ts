import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { hasProof, writeProof } from '../../src/cache/copy-proof.js';
import type { CacheEvent, CacheOptions } from '../../src/cache/shard-cache.js';
import { openDataset } from '../../src/read/dataset.js';
import { flipBits } from '../helpers/checked.js';
import { shardkit, shardkitAsync } from '../helpers/cli.js';
import { startFlakyServer } from '../helpers/flaky-server.js';
import { collect, expectLocalSamples, flipByte, rangeBytes, serveCacheDatasets, shardCopies, shardLog } from '../helpers/cache-server.js';
import { sameBytes } from '../helpers/loader-dataset.js';
import { nginxSkipReason, type AccessLogEntry } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

/** Issue #25, part 1: the node-local shard cache, against a real nginx on loopback and the fault server. */
const N = 1200;

const epochOptions = { batchSize: 32, shuffle: 'block' as const, seed: 3, windowShards: 2 };

describe.skipIf(nginxSkipReason !== undefined)('node-local shard cache (real nginx)', () => {
  const fx = serveCacheDatasets({ ds: { samples: N, shardBytes: 256 * 1024 }, other: { samples: 300, shardBytes: 256 * 1024 } });

  /** A cache dir holding a verified copy of every shard of `ds` (one epoch read through it), and its events. */
  async function fullCache(): Promise<{ dir: string; events: CacheEvent[]; cache: CacheOptions }> {
    const dir = tmpDir();
    const events: CacheEvent[] = [];
    const cache = { dir, maxBytes: 2 * fx.datasetBytes, onEvent: (e: CacheEvent) => events.push(e) };
    const ds = await openDataset(`${fx.server.url}/ds`, { cache });
    await collect(ds.loader({ batchSize: 64 }));
    await ds.close();
    return { dir, events, cache };
  }

  it('fetches each shard once into the cache, then serves later epochs and processes from it with no shard request', async () => {
    const dir = tmpDir();
    const cache = { dir, maxBytes: 2 * fx.datasetBytes };
    const before = (await fx.server.accessLog()).length;
    const ds = await openDataset(`${fx.server.url}/ds`, { cache });
    await expectLocalSamples(fx.local, await collect(ds.loader(epochOptions)), epochOptions);
    const first = shardLog((await fx.server.accessLog()).slice(before));
    expect(rangeBytes(first)).toBe(fx.datasetBytes); // each shard's bytes once, whole
    expect(shardCopies(dir).length).toBe(fx.local.shards.length);
    const second = (await fx.server.accessLog()).length;
    await expectLocalSamples(fx.local, await collect(ds.loader({ ...epochOptions, epoch: 1 })), { ...epochOptions, epoch: 1 });
    expect(shardLog((await fx.server.accessLog()).slice(second))).toEqual([]);
    await ds.close();
    // another process (here: another dataset object) using the same dir
    const again = await openDataset(`${fx.server.url}/ds`, { cache });
    const third = (await fx.server.accessLog()).length;
    expect((await again.get('s/000777')).key).toBe('s/000777');
    await expectLocalSamples(fx.local, await collect(again.loader(epochOptions)), epochOptions);
    expect(shardLog((await fx.server.accessLog()).slice(third))).toEqual([]);
    expect(again.stats().cache).toMatchObject({ misses: expect.any(Number), remoteBytes: 0 });
    expect(again.stats().cache?.hits).toBeGreaterThan(0);
    await again.close();
  });

  it('keeps two datasets in one dir apart, and bounds the dir by maxBytes across them', async () => {
    const dir = tmpDir();
    const maxBytes = Math.ceil(fx.datasetBytes * 0.6);
    const a = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes } });
    const b = await openDataset(`${fx.server.url}/other`, { cache: { dir, maxBytes } });
    await collect(a.loader(epochOptions));
    await collect(b.loader({ batchSize: 16 }));
    expect(fs.readdirSync(dir).filter((n) => !n.startsWith('.')).length).toBe(2);
    const onDisk = shardCopies(dir).reduce((n, f) => n + fs.statSync(f).size, 0);
    expect(onDisk).toBeLessThanOrEqual(maxBytes);
    expect(a.stats().cache?.evictions).toBeGreaterThan(0);
    await a.close();
    await b.close();
  });

  it('a damaged copy is detected, removed, fetched again and never returned', async () => {
    const { dir, events, cache } = await fullCache();
    const [victim] = shardCopies(dir).sort();
    const bytes = fs.readFileSync(victim as string);
    flipBits(bytes, bytes.length >> 1, 0xff); // inside some sample's member
    fs.writeFileSync(victim as string, bytes);
    const again = await openDataset(`${fx.server.url}/ds`, { cache });
    const before = (await fx.server.accessLog()).length;
    await expectLocalSamples(fx.local, await collect(again.loader(epochOptions)), epochOptions);
    const refetched = shardLog((await fx.server.accessLog()).slice(before));
    expect(new Set(refetched.map((e) => e.uri)).size).toBe(1);
    expect(rangeBytes(refetched)).toBe(bytes.length);
    expect(events).toEqual([{ type: 'corrupt', shard: expect.stringMatching(/shard-\d+\.tar/), reason: 'its copy fails its CRC32C' }]);
    await again.close();
  });

  it('a later process trusts a copy by its proof, unread; damage its proof does not show is caught by the member checks, and the read goes on from a new copy', async () => {
    const { dir, events, cache } = await fullCache();
    expect(shardCopies(dir).every((f) => hasProof(f, fx.local.shards.find((s) => f.includes(encodeURIComponent(s.file)))?.crc32c ?? -1))).toBe(true);
    const [victim] = shardCopies(dir).sort();
    const bytes = fs.readFileSync(victim as string);
    flipByte(victim as string, bytes.length >> 1); // inside some sample's member
    // a disk's bit rot: the file's times stay as they were checked (here the proof is made to match them)
    writeProof(victim as string, fx.local.shards[0]?.crc32c as number);
    const again = await openDataset(`${fx.server.url}/ds`, { cache });
    // trusted without a whole check (no corrupt event at open); the damaged member is refused where it is read, the
    // copy is checked whole, removed and fetched again, and the batch read again: the loader yields the right bytes
    const before = (await fx.server.accessLog()).length;
    await expectLocalSamples(fx.local, await collect(again.loader(epochOptions)), epochOptions);
    const refetched = shardLog((await fx.server.accessLog()).slice(before));
    expect(refetched.map((e) => e.uri)).toEqual([expect.stringMatching(/shard-0+\.tar$/)]);
    expect(rangeBytes(refetched)).toBe(bytes.length);
    expect(events).toEqual([{ type: 'corrupt', shard: expect.stringMatching(/shard-0+\.tar/), reason: 'its copy fails its CRC32C' }]);
    expect(fs.readFileSync(victim as string).equals(fs.readFileSync(path.join(fx.root, 'ds', fx.local.shards[0]?.file as string)))).toBe(true);
    await again.close();
  });

  it('a copy damaged and its source damaged too: the read is tried again once, then fails (the source fails its CRC32C); no copy is kept', async () => {
    fs.cpSync(path.join(fx.root, 'ds'), path.join(fx.root, 'rotten'), { recursive: true });
    const dir = tmpDir();
    const cache = { dir, maxBytes: 2 * fx.datasetBytes };
    const ds = await openDataset(`${fx.server.url}/rotten`, { cache });
    await collect(ds.loader({ batchSize: 64 }));
    const entry = await fx.local.locate('s/000100');
    const shardFile = fx.local.shards[entry.shard]?.file as string;
    const at = entry.offset + (entry.members[0]?.offset as number) + 3;
    flipByte(shardCopies(dir).find((f) => path.basename(f).startsWith(encodeURIComponent(shardFile))) as string, at);
    flipByte(path.join(fx.root, 'rotten', shardFile), at);
    // never returned: fetched again, the source's bytes fail the shard's CRC32C, and no copy of them is made
    for (let i = 0; i < 2; i++) await expect(ds.get('s/000100')).rejects.toMatchObject({ code: ErrorCodes.SHARD_MISMATCH, message: expect.stringContaining(shardFile) });
    expect(shardCopies(dir).some((f) => path.basename(f).startsWith(encodeURIComponent(shardFile)))).toBe(false);
    await ds.close();
  });

  it('a copy left without its proof (a process killed after the rename) is checked whole before anything is read from it', async () => {
    const { dir, events, cache } = await fullCache();
    const [victim] = shardCopies(dir).sort();
    const bytes = fs.readFileSync(victim as string);
    const stat = fs.statSync(victim as string);
    flipBits(bytes, bytes.length >> 1, 0xff);
    fs.writeFileSync(victim as string, bytes);
    fs.utimesSync(victim as string, stat.atime, stat.mtime); // its times as they were
    fs.rmSync(`${victim as string}.ok`);
    const again = await openDataset(`${fx.server.url}/ds`, { cache });
    await expectLocalSamples(fx.local, await collect(again.loader(epochOptions)), epochOptions);
    expect(events).toEqual([{ type: 'corrupt', shard: expect.stringMatching(/shard-0+\.tar/), reason: 'its copy fails its CRC32C' }]);
    expect(shardCopies(dir).every((f) => fs.existsSync(`${f}.ok`))).toBe(true); // checked whole, then given a proof
    await again.close();
  });

  it('a cache smaller than one shard reads with range requests, said once, and writes nothing', async () => {
    const dir = tmpDir();
    const events: CacheEvent[] = [];
    const ds = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes: 1000, onEvent: (e) => events.push(e) } });
    await expectLocalSamples(fx.local, await collect(ds.loader(epochOptions)), epochOptions);
    // said once for the index (read over http, index-copy.ts), once for the shards
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ type: 'bypass', shard: ds.manifest.index.file, reason: expect.stringContaining('the index is read over http: it is larger than the cache') });
    expect(events[1]).toMatchObject({ type: 'bypass', shard: expect.stringMatching(/shard-\d+\.tar/), reason: expect.stringContaining('larger than the cache') });
    expect(shardCopies(dir)).toEqual([]);
    expect(ds.stats().cache?.bypassReads).toBeGreaterThan(0);
    await ds.close();
  });

  it('an unusable cache dir fails at open, naming it; a dir removed while in use is made again', async () => {
    const file = path.join(tmpDir(), 'a-file');
    fs.writeFileSync(file, 'x');
    const err = await openDataset(`${fx.server.url}/ds`, { cache: { dir: path.join(file, 'cache'), maxBytes: 1 << 30 } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.IO, message: expect.stringContaining(`cannot use the cache directory ${path.join(file, 'cache')}`) });
    const dir = tmpDir();
    const ds = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes: 2 * fx.datasetBytes } });
    fs.rmSync(dir, { recursive: true });
    await expectLocalSamples(fx.local, await collect(ds.loader(epochOptions)), epochOptions);
    expect(shardCopies(dir).length).toBe(fx.local.shards.length);
    await ds.close();
  });

  it('a shard another live process is fetching is read with range reads; a dead holder\'s lock is taken over', async () => {
    const dir = tmpDir();
    const cache = { dir, maxBytes: 2 * fx.datasetBytes };
    const ds = await openDataset(`${fx.server.url}/ds`, { cache });
    const sub = path.join(dir, fs.readdirSync(dir)[0] as string);
    const name = (s: { file: string; crc32c: number; bytes: number }): string => `${s.file}~${(s.crc32c >>> 0).toString(16).padStart(8, '0')}~${s.bytes}`;
    const [s0, s1] = ds.shards;
    const dead = spawnSync('true').pid as number; // exited: a dead holder
    fs.writeFileSync(path.join(sub, `${name(s0 as never)}.lock`), JSON.stringify({ pid: process.ppid, host: (await import('node:os')).hostname() }));
    fs.writeFileSync(path.join(sub, `${name(s1 as never)}.lock`), JSON.stringify({ pid: dead, host: (await import('node:os')).hostname() }));
    fs.writeFileSync(path.join(sub, `${name(s1 as never)}.${dead}.part`), 'left by a killed process');
    const before = (await fx.server.accessLog()).length;
    await expectLocalSamples(fx.local, await collect(ds.loader({ batchSize: 64 })), { batchSize: 64 });
    const log = shardLog((await fx.server.accessLog()).slice(before));
    const ranges0 = log.filter((e) => e.uri.endsWith(`/${s0?.file}`));
    expect(ranges0.length).toBeGreaterThan(1); // range reads of what the batches needed, no whole download
    expect(rangeBytes(ranges0)).toBeLessThan((s0?.bytes ?? 0) * 1.1);
    expect(fs.existsSync(path.join(sub, name(s0 as never)))).toBe(false);
    expect(fs.existsSync(path.join(sub, name(s1 as never)))).toBe(true); // the dead holder's lock was taken over
    expect(fs.readdirSync(sub).filter((n) => n.endsWith('.part'))).toEqual([]);
    await ds.close();
  });

  it('a server dying mid-shard: retried; when it keeps failing, a clear error and no copy, partial or whole', async () => {
    const open = ['ok', 'ok', 'ok'] as const; // manifest, index header, shard table
    const dir = tmpDir();
    const flaky = await startFlakyServer(fx.root, [...open, 'shortBody', 'reset']);
    const ds = await openDataset(`${flaky.url}/ds`, { cache: { dir, maxBytes: 2 * fx.datasetBytes }, http: { backoffMs: 1 } });
    await expectLocalSamples(fx.local, await collect(ds.loader({ batchSize: 64 })), { batchSize: 64 });
    expect(ds.stats().io.retries).toBe(2);
    expect(shardCopies(dir).length).toBe(fx.local.shards.length);
    await ds.close();
    await flaky.stop();

    const dir2 = tmpDir();
    const failing = await startFlakyServer(fx.root, [...open, ...Array<'shortBody'>(2000).fill('shortBody')]);
    const ds2 = await openDataset(`${failing.url}/ds`, { cache: { dir: dir2, maxBytes: 2 * fx.datasetBytes }, http: { backoffMs: 1, retries: 2 } });
    const err = await collect(ds2.loader({ batchSize: 64 })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.HTTP });
    await ds2.close();
    await failing.stop();
    // whatever was cached before the error is whole and verified: equal to the source
    for (const f of shardCopies(dir2)) {
      const file = decodeURIComponent(path.basename(f).replace(/~.*$/, ''));
      expect(fs.readFileSync(f).equals(fs.readFileSync(path.join(fx.root, 'ds', file)))).toBe(true);
    }
    for (const s of fs.readdirSync(dir2).filter((n) => !n.startsWith('.'))) {
      expect(fs.readdirSync(path.join(dir2, s)).filter((n) => n.endsWith('.part') || n.endsWith('.lock'))).toEqual([]);
    }
  });

  for (const shuffle of ['none', 'block'] as const) {
    it(`${shuffle} shuffle, half the dataset cached: a loader prefetches, and the next epoch fetches about what MIN would`, async () => {
      const remoteBytes: Record<'lru' | 'clairvoyant', number[]> = { lru: [], clairvoyant: [] };
      const prefetched: Record<'lru' | 'clairvoyant', number> = { lru: 0, clairvoyant: 0 };
      const maxBytes = Math.floor(fx.datasetBytes / 2);
      for (const policy of ['lru', 'clairvoyant'] as const) {
        const dir = tmpDir();
        const ds = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes, policy } });
        for (const epoch of [0, 1]) {
          const options = shuffle === 'block' ? { ...epochOptions, epoch } : { batchSize: 32, shuffle, epoch };
          const loader = ds.loader(options);
          await expectLocalSamples(fx.local, await collect(loader), options);
          const stats = loader.stats().cache;
          remoteBytes[policy].push(stats?.remoteBytes ?? NaN);
          prefetched[policy] += stats?.prefetchedBytes ?? NaN;
          // every shard is read from a copy: a prefetch that found no room left its read to fetch it, not to range reads
          if (policy === 'clairvoyant') expect(stats?.bypassReads).toBe(0);
          expect(shardCopies(dir).reduce((n, f) => n + fs.statSync(f).size, 0)).toBeLessThanOrEqual(maxBytes);
        }
        await ds.close();
      }
      // prefetch fills the cache's free room; once it is full, a prefetch evicts only what MIN would when the shard is
      // read, so whether a later epoch finds one to do depends on how far the consumer is behind the reads
      expect(prefetched.clairvoyant).toBeGreaterThan(0);
      expect(prefetched.lru).toBe(0);
      // MIN's optimum is what does not fit (shards are whole: give or take two, one being fetched, one in use)
      const largestShard = Math.max(...fx.local.shards.map((s) => s.bytes));
      expect(remoteBytes.clairvoyant[0]).toBe(fx.datasetBytes);
      expect(remoteBytes.clairvoyant[1]).toBeLessThanOrEqual(fx.datasetBytes - maxBytes + 2 * largestShard);
      // LRU's figures depend on timing (file mtimes): bench/cache.mjs compares them; here they only bound the dir.
    });
  }

  it('block shuffle, a quarter of the dataset cached: a shard the plan admits is fetched whole, not read with ranges first and fetched whole after', async () => {
    const dir = tmpDir();
    const ds = await openDataset(`${fx.server.url}/ds`, { cache: { dir, maxBytes: Math.floor(fx.datasetBytes / 4) } });
    const whole = (e: AccessLogEntry): boolean => {
      const m = /bytes=(\d+)-(\d+)/.exec(e.range);
      return m !== null && Number(m[1]) === 0 && Number(m[2]) + 1 === fx.local.shards.find((s) => e.uri.endsWith(s.file))?.bytes;
    };
    const both: number[] = [];
    for (const epoch of [0, 1, 2]) {
      const before = (await fx.server.accessLog()).length;
      const options = { ...epochOptions, epoch };
      await expectLocalSamples(fx.local, await collect(ds.loader(options)), options);
      const log = shardLog((await fx.server.accessLog()).slice(before));
      const wholeShards = new Set(log.filter(whole).map((e) => e.uri));
      both.push(new Set(log.filter((e) => !whole(e) && wholeShards.has(e.uri)).map((e) => e.uri)).size);
    }
    // admitted from the cursor on, the next window's shards were refused to the reads ahead of the consumer and
    // fetched whole later: 9-10 shards an epoch. One may still be, when its read found every cached shard needed sooner.
    expect(both.every((n) => n <= 1)).toBe(true);
    await ds.close();
  });

  it('CLI: get and extract take --cache-dir/--cache-size; a second run sends no shard request; one flag alone is a usage error', async () => {
    const dir = tmpDir();
    const url = `${fx.server.url}/ds`;
    const cacheFlags = ['--cache-dir', dir, '--cache-size', '64MiB'];
    const out = path.join(tmpDir(), 'x');
    const first = shardkit(['extract', url, out, ...cacheFlags]);
    expect(first.status, first.stderr).toBe(0);
    expect(shardCopies(dir).length).toBe(fx.local.shards.length);
    const before = (await fx.server.accessLog()).length;
    const got = shardkit(['get', url, 's/000042', '--ext', 'bin', ...cacheFlags]);
    expect(got.status, got.stderr).toBe(0);
    expect(Buffer.from(got.stdout, 'latin1').length).toBeGreaterThan(0);
    expect(shardLog((await fx.server.accessLog()).slice(before))).toEqual([]);
    const half = shardkit(['info', url, '--cache-dir', dir]);
    expect(half.status).toBe(2);
    expect(half.stderr).toMatch(/--cache-dir and --cache-size go together/);
    const tiny = shardkit(['extract', url, path.join(tmpDir(), 'y'), '--cache-dir', tmpDir(), '--cache-size', '1KB']);
    expect(tiny.status, tiny.stderr).toBe(0);
    // once for the index (read over http), once for the shards
    expect(tiny.stderr.match(/note: cache: .*larger than the cache/g)).toHaveLength(2);
    expect(tiny.stderr).toMatch(/note: cache: [^:\n]+: the index is read over http: it is larger than the cache/);
  });

  it('two processes on one cache dir: each shard is downloaded whole at most once, and both read every sample right', async () => {
    const dir = tmpDir();
    const url = `${fx.server.url}/ds`;
    const before = (await fx.server.accessLog()).length;
    const outs = [path.join(tmpDir(), 'a'), path.join(tmpDir(), 'b')];
    const runs = outs.map((out) => {
      const child = shardkitAsync(['extract', url, out, '--cache-dir', dir, '--cache-size', '64MiB']);
      let stderr = '';
      child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
      return new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stderr })));
    });
    for (const r of await Promise.all(runs)) expect(r.code, r.stderr).toBe(0);
    const log = shardLog((await fx.server.accessLog()).slice(before));
    for (const shard of fx.local.shards) {
      const whole = log.filter((e) => e.uri.endsWith(`/${shard.file}`) && e.range === `bytes=0-${shard.bytes - 1}`);
      expect(whole.length).toBeLessThanOrEqual(1);
    }
    expect(shardCopies(dir).length).toBe(fx.local.shards.length);
    for (const out of outs) {
      for (const key of ['s/000000', 's/000613', `s/${String(N - 1).padStart(6, '0')}`]) {
        const want = (await fx.local.get(key)).members.bin as Uint8Array;
        expect(sameBytes(fs.readFileSync(path.join(out, `${key}.bin`)), want)).toBe(true);
      }
    }
  });

  it('a dataset rewritten at the same URL gets a cache of its own; a shard replaced under its manifest is never cached', async () => {
    const dir = tmpDir();
    const cache = { dir, maxBytes: 4 * fx.datasetBytes };
    fs.cpSync(path.join(fx.root, 'ds'), path.join(fx.root, 'moving'), { recursive: true });
    const before = await openDataset(`${fx.server.url}/moving`, { cache });
    await collect(before.loader({ batchSize: 64 }));
    await before.close();
    // rewritten: another dataset (another index) at the same URL
    fs.rmSync(path.join(fx.root, 'moving'), { recursive: true });
    fs.cpSync(path.join(fx.root, 'other'), path.join(fx.root, 'moving'), { recursive: true });
    const after = await openDataset(`${fx.server.url}/moving`, { cache });
    const otherLocal = await openDataset(path.join(fx.root, 'other'));
    const got = await collect(after.loader({ batchSize: 64 }));
    const want = await collect(otherLocal.loader({ batchSize: 64 }));
    expect(got.map((s) => s.key)).toEqual(want.map((s) => s.key));
    got.forEach((s, i) => expect(sameBytes(s.members.bin, want[i]?.members.bin)).toBe(true));
    expect(fs.readdirSync(dir).filter((n) => !n.startsWith('.')).length).toBe(2);
    await after.close();
    await otherLocal.close();
    // a shard replaced at the source with the manifest unchanged (same size, one byte off): fetched, refused, not kept
    const fresh = tmpDir();
    const shard = path.join(fx.root, 'moving', otherLocal.shards[0]?.file as string);
    const bytes = fs.readFileSync(shard);
    flipBits(bytes, bytes.length - 700, 0x01);
    fs.writeFileSync(shard, bytes);
    const replaced = await openDataset(`${fx.server.url}/moving`, { cache: { dir: fresh, maxBytes: 4 * fx.datasetBytes } });
    const err = await collect(replaced.loader({ batchSize: 64 })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.SHARD_MISMATCH, message: expect.stringContaining("CRC32C differs from the index's") });
    await replaced.close();
    expect(shardCopies(fresh).some((f) => f.includes(encodeURIComponent(otherLocal.shards[0]?.file as string)))).toBe(false);
  });
});
