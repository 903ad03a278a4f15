import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CacheEvent } from '../../src/cache/shard-cache.js';
import { openDataset } from '../../src/read/dataset.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { writeMember } from '../../src/read/inspect.js';
import { shardkit } from '../helpers/cli.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { flipByte, leftovers, rangeBytes, shardCopies, shardLog } from '../helpers/cache-server.js';
import { nginxSkipReason, startNginx, type AccessLogEntry, type NginxServer } from '../helpers/nginx.js';
import { tmpDir } from '../helpers/tmp.js';

/** Issue #25: `verify --cache-dir` checks the source and fills the cache with the shards that check out. */
let root: string;
let server: NginxServer;
let shards: { file: string; bytes: number }[];
let datasetBytes: number;

/** Bytes the ranges asked for, leaving out the 1-byte probes that learn a shard's size (one per shard at most). */
function streamedBytes(entries: AccessLogEntry[]): number {
  const probes = entries.filter((e) => e.range === 'bytes=0-0');
  expect(probes.length).toBeLessThanOrEqual(shards.length);
  return rangeBytes(entries.filter((e) => e.range !== 'bytes=0-0'));
}

/** The verified copies under a cache dir: shard file name (decoded) -> path. */
function copies(dir: string): Map<string, string> {
  return new Map(shardCopies(dir).map((f) => [decodeURIComponent(path.basename(f).replace(/~[0-9a-f]{8}~\d+$/, '')), f]));
}

/** Flips one byte in the middle of a shard (inside a member or its tar padding: either way the shard's CRC changes). */
function damage(file: string): Buffer {
  const before = fs.readFileSync(file);
  const bytes = Buffer.from(before);
  const at = bytes.length >> 1;
  bytes[at] = (bytes[at] as number) ^ 0xff;
  fs.writeFileSync(file, bytes);
  return before;
}

describe.skipIf(nginxSkipReason !== undefined)('verify with a shard cache (real nginx)', () => {
  beforeAll(async () => {
    root = tmpDir();
    await writeLoaderDataset(path.join(root, 'ds'), 600, { shardBytes: 128 * 1024 });
    server = await startNginx(root);
    const ds = await openDataset(path.join(root, 'ds'));
    shards = ds.shards.map((s) => ({ file: s.file, bytes: s.bytes }));
    datasetBytes = shards.reduce((n, s) => n + s.bytes, 0);
    await ds.close();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('streams each shard from the source once, copies each into the cache; a loader after it sends no shard request', async () => {
    const dir = tmpDir();
    const before = (await server.accessLog()).length;
    const report = await verifyDataset(`${server.url}/ds`, { cache: { dir, maxBytes: 2 * datasetBytes } });
    expect(report.ok).toBe(true);
    expect(report.cache).toMatchObject({ copied: shards.length, copiedBytes: datasetBytes, alreadyCached: 0, notCopied: 0, repairFrom: [] });
    expect(streamedBytes(shardLog((await server.accessLog()).slice(before)))).toBe(datasetBytes);
    expect([...copies(dir).keys()].sort()).toEqual(shards.map((s) => s.file).sort());
    for (const s of shards) expect(fs.readFileSync(copies(dir).get(s.file) as string).equals(fs.readFileSync(path.join(root, 'ds', s.file)))).toBe(true);
    expect(leftovers(dir)).toEqual([]);

    // the loader uses the same subdirectory: warm from its first epoch
    const warm = (await server.accessLog()).length;
    const ds = await openDataset(`${server.url}/ds`, { cache: { dir, maxBytes: 2 * datasetBytes } });
    let n = 0;
    for await (const batch of ds.loader({ batchSize: 50, shuffle: 'block', seed: 1 })) n += batch.length;
    await ds.close();
    expect(n).toBe(600);
    expect(shardLog((await server.accessLog()).slice(warm))).toEqual([]);

    // a second verify still reads the source: a copy proves nothing about it
    const again = (await server.accessLog()).length;
    const second = await verifyDataset(`${server.url}/ds`, { cache: { dir, maxBytes: 2 * datasetBytes } });
    expect(second.cache).toMatchObject({ copied: 0, alreadyCached: shards.length, notCopied: 0 });
    expect(streamedBytes(shardLog((await server.accessLog()).slice(again)))).toBe(datasetBytes);
  });

  it('reports a shard damaged at the source, does not copy it, and names an intact copy cached earlier for the repair', async () => {
    const dir = tmpDir();
    const cache = { dir, maxBytes: 2 * datasetBytes };
    const target = shards[2] as { file: string };
    const file = path.join(root, 'ds', target.file);
    const intact = damage(file);
    try {
      const first = await verifyDataset(`${server.url}/ds`, { cache });
      expect(first.ok).toBe(false);
      expect(first.problems.some((p) => p.file === target.file) || first.damaged.some((d) => d.shard === target.file)).toBe(true);
      expect(copies(dir).has(target.file)).toBe(false);
      expect(first.cache).toMatchObject({ copied: shards.length - 1, notCopied: 0, repairFrom: [] });
      expect(leftovers(dir)).toEqual([]);
    } finally {
      fs.writeFileSync(file, intact);
    }
    // intact again: copied; then damaged at the source after the copy was made
    expect((await verifyDataset(`${server.url}/ds`, { cache })).cache).toMatchObject({ copied: 1, alreadyCached: shards.length - 1 });
    damage(file);
    try {
      const report = await verifyDataset(`${server.url}/ds`, { cache });
      expect(report.ok).toBe(false);
      const copy = copies(dir).get(target.file) as string;
      expect(report.cache?.repairFrom).toEqual([{ shard: target.file, copy }]);
      // the CLI prints the repair, and putting the copy back repairs the source
      const cli = shardkit(['verify', `${server.url}/ds`, '--cache-dir', dir, '--cache-size', String(2 * datasetBytes)]);
      expect(cli.status).toBe(1);
      expect(cli.stdout).toContain(`repair   ${target.file}: the cache holds an intact copy`);
      expect(cli.stdout).toContain(copy);
      fs.copyFileSync(copy, file);
      expect((await verifyDataset(`${server.url}/ds`, { cache })).ok).toBe(true);
    } finally {
      fs.writeFileSync(file, intact);
    }
  });

  it('a damaged cached copy is not named for a repair: it is removed', async () => {
    const dir = tmpDir();
    const cache = { dir, maxBytes: 2 * datasetBytes };
    await verifyDataset(`${server.url}/ds`, { cache });
    const target = shards[1] as { file: string };
    damage(copies(dir).get(target.file) as string);
    const file = path.join(root, 'ds', target.file);
    const intact = damage(file);
    try {
      const report = await verifyDataset(`${server.url}/ds`, { cache });
      expect(report.ok).toBe(false);
      expect(report.cache?.repairFrom).toEqual([]);
      expect(copies(dir).has(target.file)).toBe(false);
    } finally {
      fs.writeFileSync(file, intact);
    }
  });

  it('a cache smaller than the dataset keeps the first shards it copied and stays within its size', async () => {
    const dir = tmpDir();
    const maxBytes = Math.floor(datasetBytes / 2);
    const report = await verifyDataset(`${server.url}/ds`, { cache: { dir, maxBytes } });
    expect(report.ok).toBe(true);
    const got = copies(dir);
    // in shard order, each one that still fits without evicting an earlier one
    let used = 0;
    const fit = shards.filter((s) => (used + s.bytes <= maxBytes ? ((used += s.bytes), true) : false));
    expect(fit.length).toBeLessThan(shards.length);
    expect([...got.keys()].sort()).toEqual(fit.map((s) => s.file).sort());
    expect(report.cache).toMatchObject({ copied: fit.length, notCopied: shards.length - fit.length });
    expect([...got.values()].reduce((n, f) => n + fs.statSync(f).size, 0)).toBeLessThanOrEqual(maxBytes);
  });

  it('CLI: --quick with a cache, or one cache flag alone, is a usage error', () => {
    const url = `${server.url}/ds`;
    const quick = shardkit(['verify', url, '--quick', '--cache-dir', tmpDir(), '--cache-size', '1MiB']);
    expect(quick.status).toBe(2);
    expect(quick.stderr).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: .*drop --quick or the cache\n$/);
    expect(shardkit(['verify', url, '--cache-dir', tmpDir()]).status).toBe(2);
  });
});

describe.skipIf(nginxSkipReason !== undefined)('a cached copy damaged after this process checked it (real nginx)', () => {
  let server2: NginxServer;
  let root2: string;
  beforeAll(async () => {
    root2 = tmpDir();
    await writeLoaderDataset(path.join(root2, 'ds'), 300, { shardBytes: 64 * 1024 });
    server2 = await startNginx(root2);
  });
  afterAll(async () => {
    await server2?.stop();
  });

  it('the damaged read does not fail: the copy is checked whole, removed (said once), the shard fetched again and the sample read from it', async () => {
    const dir = tmpDir();
    const local = await openDataset(path.join(root2, 'ds'));
    const events: CacheEvent[] = [];
    const ds = await openDataset(`${server2.url}/ds`, { cache: { dir, maxBytes: 1 << 30, onEvent: (e) => events.push(e) } });
    try {
      const key = (await local.at(150)).key;
      const want = (await local.get(key)).members.bin as Uint8Array;
      expect(Buffer.from((await ds.get(key)).members.bin as Uint8Array).equals(Buffer.from(want))).toBe(true); // the copy is made, checked and open
      const entry = await local.index.at(150);
      const shard = local.shards[entry.shard] as { file: string; bytes: number };
      // damaged in place on disk, under this process's open copy
      flipByte(copies(dir).get(shard.file) as string, entry.offset + (entry.members[0]?.offset ?? 0));
      const before = (await server2.accessLog()).length;
      expect(Buffer.from((await ds.get(key)).members.bin as Uint8Array).equals(Buffer.from(want))).toBe(true);
      const refetched = (await server2.accessLog()).slice(before).filter((e) => e.uri.endsWith(`/${shard.file}`));
      expect(rangeBytes(refetched)).toBe(shard.bytes);
      expect(events).toEqual([{ type: 'corrupt', shard: shard.file, reason: 'its copy fails its CRC32C' }]);
      expect(fs.readFileSync(copies(dir).get(shard.file) as string).equals(fs.readFileSync(path.join(root2, 'ds', shard.file)))).toBe(true);
    } finally {
      await ds.close();
      await local.close();
    }
  });

  it('a streamed member (get --out of a member past the span limit) read from a damaged copy: CHECKSUM, no file, and the copy is distrusted, so the next read fetches the shard again and gets the right bytes', async () => {
    process.env.SHARDKIT_TEST_MAX_SPAN_BYTES = '1024';
    process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES = '700';
    const dir = tmpDir();
    const local = await openDataset(path.join(root2, 'ds'));
    const ds = await openDataset(`${server2.url}/ds`, { cache: { dir, maxBytes: 1 << 30 } });
    try {
      let n = 0;
      for await (const batch of ds.loader({ batchSize: 50 })) n += batch.length;
      expect(n).toBe(300);
      const position = 150; // loader sample 150: 50 + (150 * 7919) % 3000 = 2,900 bytes of bin, streamed
      const entry = await local.index.at(position);
      const want = Buffer.from((await local.at(position)).members.bin as Uint8Array);
      expect(want.length).toBe(2900);
      const shard = local.shards[entry.shard] as { file: string; bytes: number };
      const copy = copies(dir).get(shard.file) as string;
      flipByte(copy, entry.offset + (entry.members.find((m) => m.ext === 'bin')?.offset ?? 0) + 2000);
      const target = path.join(tmpDir(), 'm.bin');
      await expect(writeMember(ds, entry.key, 'bin', { file: target })).rejects.toMatchObject({ code: 'SHARDKIT_ERR_CHECKSUM' });
      expect(fs.existsSync(target)).toBe(false);
      expect(fs.existsSync(`${copy}.ok`)).toBe(false); // distrusted: checked whole before its next use
      const before = (await server2.accessLog()).length;
      await writeMember(ds, entry.key, 'bin', { file: target });
      expect(fs.readFileSync(target).equals(want)).toBe(true);
      expect(rangeBytes((await server2.accessLog()).slice(before).filter((e) => e.uri.endsWith(`/${shard.file}`)))).toBe(shard.bytes);
    } finally {
      delete process.env.SHARDKIT_TEST_MAX_SPAN_BYTES;
      delete process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES;
      await ds.close();
      await local.close();
    }
  });
});
