/**
 * What the shard-cache e2e tests share (issue #25): loader datasets written under one root and served by a real nginx
 * on loopback, the first one also opened locally as the reference; the batches a loader yields, compared byte for
 * byte with a local loader's; and what the tests look at in a cache dir (copies, index copies, the bytes maxBytes
 * bounds) and in nginx's access log (shard requests, range bytes).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Sample } from '../../formats/sample.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import type { Loader, LoaderStats } from '../../src/read/loader.js';
import type { LoaderOptions } from '../../src/read/loader-options.js';
import { sameBytes, writeLoaderDataset } from './loader-dataset.js';
import { startNginx, type AccessLogEntry, type NginxServer } from './nginx.js';
import { tmpDir } from './tmp.js';

/** A loader's options without decoding, so that its samples are bytes (the `decode: 'none'` overload of `loader`). */
export type BytesLoaderOptions = LoaderOptions & { decode?: 'none' };

/** Filled in by the describe block's beforeAll (see serveCacheDatasets). */
export interface CacheServer {
  /** The directory nginx serves: one subdirectory per dataset. */
  root: string;
  server: NginxServer;
  /** The first dataset, opened from its directory: the reference. */
  local: Dataset;
  /** The sum of the first dataset's shard sizes. */
  datasetBytes: number;
}

/**
 * In a describe block: writes each dataset (`samples` loader samples, shards of `shardBytes`) under a fresh root,
 * starts nginx on it and opens the first dataset locally before the block's tests; closes both after them.
 */
export function serveCacheDatasets(datasets: Record<string, { samples: number; shardBytes: number }>): CacheServer {
  const fx = {} as CacheServer;
  beforeAll(async () => {
    fx.root = tmpDir();
    for (const [name, d] of Object.entries(datasets)) await writeLoaderDataset(path.join(fx.root, name), d.samples, { shardBytes: d.shardBytes });
    fx.server = await startNginx(fx.root);
    fx.local = await openDataset(path.join(fx.root, Object.keys(datasets)[0] as string));
    fx.datasetBytes = fx.local.shards.reduce((n, s) => n + s.bytes, 0);
  });
  afterAll(async () => {
    await fx.local?.close();
    await fx.server?.stop();
  });
  return fx;
}

/** The batches of a loader, and its stats once done. */
export async function batches<S>(loader: Loader<S>): Promise<{ got: S[][]; stats: LoaderStats }> {
  const got: S[][] = [];
  for await (const batch of loader) got.push(batch);
  return { got, stats: loader.stats() };
}

/** The samples of a loader, batches joined. */
export async function collect<S>(loader: Loader<S>): Promise<S[]> {
  return (await batches(loader)).got.flat();
}

/** `got` is batch for batch, sample for sample, member for member and byte for byte what `local`'s loader yields. */
export async function expectLocalBatches(local: Dataset, got: Sample[][], options: BytesLoaderOptions): Promise<void> {
  const want = (await batches(local.loader(options))).got;
  expect(got.map((b) => b.length)).toEqual(want.map((b) => b.length));
  expectSameSamples(got.flat(), want.flat());
}

/** {@link expectLocalBatches} for samples whose batches were joined (collect). */
export async function expectLocalSamples(local: Dataset, got: Sample[], options: BytesLoaderOptions): Promise<void> {
  expectSameSamples(got, await collect(local.loader(options)));
}

function expectSameSamples(got: Sample[], want: Sample[]): void {
  expect(got.map((s) => s.key)).toEqual(want.map((s) => s.key));
  got.forEach((s, i) => {
    const w = want[i] as Sample;
    expect(Object.keys(s.members)).toEqual(Object.keys(w.members));
    for (const ext of Object.keys(w.members)) expect(sameBytes(s.members[ext], w.members[ext])).toBe(true);
  });
}

/** Files of the cache's dataset subdirectories whose base name matches `name`. */
function cacheFiles(dir: string, name: RegExp): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).flatMap((sub) => {
    const d = path.join(dir, sub);
    return fs.statSync(d).isDirectory() ? fs.readdirSync(d).filter((n) => name.test(n)).map((n) => path.join(d, n)) : [];
  });
}

/** The verified copies of shards under a cache dir (all datasets). */
export function shardCopies(dir: string): string[] {
  return cacheFiles(dir, /~[0-9a-f]{8}~\d+$/);
}

/** The index copies under a cache dir (all datasets). */
export function indexCopies(dir: string): string[] {
  return cacheFiles(dir, /~[0-9a-f]{8}~\d+\.idx$/);
}

/** Bytes of every file under a cache dir that maxBytes bounds (copies, index copies, downloads). */
export function cachedBytes(dir: string): number {
  return cacheFiles(dir, /~[0-9a-f]{8}~\d+(\.idx)?(\.\d+\.part)?$/).reduce((n, f) => n + fs.statSync(f).size, 0);
}

/** Downloads and locks left in a cache dir. */
export function leftovers(dir: string): string[] {
  return cacheFiles(dir, /\.(part|lock)$/);
}

/** The requests of an access log for shard files. */
export function shardLog(log: AccessLogEntry[]): AccessLogEntry[] {
  return log.filter((e) => /shard-\d+\.tar$/.test(e.uri));
}

/** Bytes the requests' ranges asked for. */
export function rangeBytes(entries: AccessLogEntry[]): number {
  return entries.reduce((n, e) => {
    const m = /bytes=(\d+)-(\d+)/.exec(e.range);
    return n + (m === null ? 0 : Number(m[2]) - Number(m[1]) + 1);
  }, 0);
}

/** Flips the byte at `at` of `file` in place (the inode an open copy's descriptor and map hold). */
export function flipByte(file: string, at: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const one = Buffer.alloc(1);
    fs.readSync(fd, one, 0, 1, at);
    one[0] = (one[0] as number) ^ 0xff;
    fs.writeSync(fd, one, 0, 1, at);
  } finally {
    fs.closeSync(fd);
  }
}
