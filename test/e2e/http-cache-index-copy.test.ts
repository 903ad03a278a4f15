import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sample } from '../../formats/sample.js';
import { indexChecksOut } from '../../src/cache/index-copy.js';
import type { CacheEvent } from '../../src/cache/shard-cache.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import type { Loader, LoaderStats } from '../../src/read/loader.js';
import type { LoaderOptions } from '../../src/read/loader-options.js';
import { sameBytes, writeLoaderDataset } from '../helpers/loader-dataset.js';
import { nginxSkipReason, startNginx, type NginxServer } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

/**
 * Issue #25: the index file is copied into the shard cache (index-copy.ts), so a new process on a fully cached dir
 * sends no request for index pages and reads its first epoch through the local path (cached-batch.ts).
 */
const N = 1500;
let root: string;
let server: NginxServer;
let local: Dataset;
let datasetBytes: number;
let indexFile: string;

async function batches<S>(loader: Loader<S>): Promise<{ got: S[][]; stats: LoaderStats }> {
  const got: S[][] = [];
  for await (const batch of loader) got.push(batch);
  return { got, stats: loader.stats() };
}

async function expectLocalBatches(got: Sample[][], options: LoaderOptions): Promise<void> {
  const want = (await batches(local.loader(options))).got;
  expect(got.map((b) => b.map((s) => s.key))).toEqual(want.map((b) => b.map((s) => s.key)));
  got.forEach((b, i) => b.forEach((s, j) => Object.keys(s.members).forEach((ext) => expect(sameBytes(s.members[ext], want[i]?.[j]?.members[ext])).toBe(true))));
}

/** The index copies under a cache dir (any dataset). */
function indexCopies(dir: string): string[] {
  return fs.readdirSync(dir).flatMap((sub) => (fs.statSync(path.join(dir, sub)).isDirectory() ? fs.readdirSync(path.join(dir, sub)).filter((n) => /~[0-9a-f]{8}~\d+\.idx$/.test(n)).map((n) => path.join(dir, sub, n)) : []));
}

/** Bytes of every file under a cache dir that maxBytes bounds (copies, index copies, downloads). */
function cachedBytes(dir: string): number {
  let n = 0;
  for (const sub of fs.readdirSync(dir)) {
    if (!fs.statSync(path.join(dir, sub)).isDirectory()) continue;
    for (const f of fs.readdirSync(path.join(dir, sub))) if (/~[0-9a-f]{8}~\d+(\.idx)?(\.\d+\.part)?$/.test(f)) n += fs.statSync(path.join(dir, sub, f)).size;
  }
  return n;
}

describe.skipIf(nginxSkipReason !== undefined)('the index file in the shard cache (real nginx)', () => {
  beforeAll(async () => {
    root = tmpDir();
    await writeLoaderDataset(path.join(root, 'ds'), N, { shardBytes: 128 * 1024 });
    server = await startNginx(root);
    local = await openDataset(path.join(root, 'ds'));
    datasetBytes = local.shards.reduce((n, s) => n + s.bytes, 0);
    indexFile = local.manifest.index.file;
  });
  afterAll(async () => {
    await local?.close();
    await server?.stop();
  });

  for (const shuffle of ['none', 'block', 'full'] as const) {
    it(`${shuffle} shuffle: a new process on a fully cached dir sends no index request and reads its first epoch locally (no miss, no stall)`, async () => {
      const cache = { dir: tmpDir(), maxBytes: 2 * datasetBytes };
      const options: LoaderOptions = { batchSize: 24, shuffle, seed: 3, ...(shuffle === 'block' ? { windowShards: 3 } : {}) };
      const logStart = (await server.accessLog()).length;
      const filler = await openDataset(`${server.url}/ds`, { cache });
      await batches(filler.loader(options));
      await filler.close();
      // the index was fetched once, whole, in one request
      const indexGets = (await server.accessLog()).slice(logStart).filter((e) => e.uri.endsWith(`/${indexFile}`));
      expect(indexGets).toHaveLength(1);
      expect(indexCopies(cache.dir)).toHaveLength(1);

      const before = (await server.accessLog()).length;
      const ds = await openDataset(`${server.url}/ds`, { cache }); // another process, here: another dataset object
      const { got, stats } = await batches(ds.loader({ ...options, epoch: 1 }));
      await expectLocalBatches(got, { ...options, epoch: 1 });
      // the manifest is all it asks nginx for: no index page, no shard
      expect((await server.accessLog()).slice(before).map((e) => e.uri)).toEqual(['/ds/manifest.json']);
      expect(stats.stalls).toBe(0);
      expect(stats.cache).toMatchObject({ misses: 0, remoteBytes: 0, bypassReads: 0 });
      expect(stats.cache?.hits).toBeGreaterThanOrEqual(got.length);
      await ds.close();
    });
  }

  it('a damaged index copy is detected (page checksum), removed, fetched again, and never used', async () => {
    const events: CacheEvent[] = [];
    const cache = { dir: tmpDir(), maxBytes: 2 * datasetBytes, onEvent: (e: CacheEvent) => events.push(e) };
    const first = await openDataset(`${server.url}/ds`, { cache });
    await first.close();
    const [copy] = indexCopies(cache.dir);
    const bytes = fs.readFileSync(copy as string);
    const stat = fs.statSync(copy as string);
    const pageSize = local.manifest.index.pageSize;
    bytes[pageSize + (pageSize >> 1)] ^= 0x5a; // inside page 1
    fs.writeFileSync(copy as string, bytes);
    fs.utimesSync(copy as string, stat.atime, stat.mtime); // its times as they were (its ctime moves all the same)
    expect(indexChecksOut(bytes, local.manifest.index)).toBe(false);

    const before = (await server.accessLog()).length;
    const ds = await openDataset(`${server.url}/ds`, { cache });
    expect(events).toEqual([{ type: 'corrupt', shard: indexFile, reason: expect.stringContaining('fails its size or CRC32C check') }]);
    expect((await server.accessLog()).slice(before).filter((e) => e.uri.endsWith(`/${indexFile}`))).toHaveLength(1);
    expect(indexChecksOut(fs.readFileSync(copy as string), local.manifest.index)).toBe(true);
    expect(fs.existsSync(`${copy as string}.ok`)).toBe(true);
    const options: LoaderOptions = { batchSize: 32, shuffle: 'full', seed: 8 };
    await expectLocalBatches((await batches(ds.loader(options))).got, options);
    await ds.close();
  });

  it('the index copy is counted in maxBytes: with a cache of half the dataset, copies and index stay within it', async () => {
    const dir = tmpDir();
    const maxBytes = Math.floor(datasetBytes / 2);
    const ds = await openDataset(`${server.url}/ds`, { cache: { dir, maxBytes } });
    const options: LoaderOptions = { batchSize: 32, shuffle: 'block', seed: 2, windowShards: 2 };
    for (const epoch of [0, 1]) {
      await expectLocalBatches((await batches(ds.loader({ ...options, epoch }))).got, { ...options, epoch });
      expect(cachedBytes(dir)).toBeLessThanOrEqual(maxBytes);
      expect(indexCopies(dir)).toHaveLength(1); // never evicted by its own dataset's reads
    }
    expect(ds.stats().cache?.evictions).toBeGreaterThan(0);
    await ds.close();
  });
});
