import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { FileSource } from '../../src/io/file-source.js';
import { HttpClient } from '../../src/io/http-client.js';
import { HttpSource } from '../../src/io/http-source.js';
import { IoStats } from '../../src/io/io-stats.js';
import { resolveLocation } from '../../src/io/location.js';
import { isRemote, openByteSource, openByteSourceSync, readAll } from '../../src/io/open-source.js';
import { startFlakyServer } from '../helpers/flaky-server.js';
import { httpFiles, rejection, SHARD_BYTES } from '../helpers/http-files.js';
import { nginxSkipReason, startNginx } from '../helpers/nginx.js';
import type { NginxServer } from '../helpers/nginx.js';

const files = httpFiles();

const fastRetry = { retries: 2, backoffMs: 1, maxBackoffMs: 5 };

describe.skipIf(nginxSkipReason !== undefined)(`HttpSource against nginx${nginxSkipReason ? ` (skipped: ${nginxSkipReason})` : ''}`, () => {
  let nginx: NginxServer;
  let client: HttpClient;
  let stats: IoStats;

  beforeAll(async () => {
    nginx = await startNginx(files.root, { tls: true });
  });

  afterAll(async () => {
    await nginx?.stop();
  });

  function freshClient(options: ConstructorParameters<typeof HttpClient>[0] = {}): HttpClient {
    stats = new IoStats();
    client = new HttpClient({ stats, ...fastRetry, ...options });
    return client;
  }

  it('returns exactly the file bytes for random ranges, many in flight on one source', async () => {
    const src = new HttpSource(`${nginx.url}/shard.bin`, { client: freshClient({ maxSockets: 8 }) });
    const ranges = fc.sample(
      fc.integer({ min: 0, max: SHARD_BYTES - 1 }).chain((o) => fc.tuple(fc.constant(o), fc.integer({ min: 1, max: Math.min(200_000, SHARD_BYTES - o) }))),
      { numRuns: 120, seed: 42 },
    );
    ranges.push([0, SHARD_BYTES], [SHARD_BYTES - 1, 1], [0, 1]);
    const results = await Promise.all(ranges.map(([o, l]) => src.read(o, l)));
    results.forEach((bytes, i) => {
      const [o, l] = ranges[i] ?? [0, 0];
      expect(Buffer.from(bytes).equals(files.shard.subarray(o, o + l)), `range ${o}+${l}`).toBe(true);
    });
    expect(stats.httpRequests).toBe(ranges.length);
    expect(stats.reads).toBe(ranges.length);
    expect(stats.bytesRead).toBe(ranges.reduce((sum, [, l]) => sum + l, 0));
    expect(stats.retries).toBe(0);
    expect(await src.read(5, 0)).toHaveLength(0);
    client.close();
  });

  it('size(): one bytes=0-0 request, cached; learned from a read for free; 0 for an empty file', async () => {
    freshClient();
    const src = new HttpSource(`${nginx.url}/shard.bin`, { client });
    const [a, b] = await Promise.all([src.size(), src.size()]);
    expect([a, b]).toEqual([SHARD_BYTES, SHARD_BYTES]);
    expect(await src.size()).toBe(SHARD_BYTES);
    expect(stats.httpRequests).toBe(1);
    const log = await nginx.accessLog();
    expect(log.at(-1)).toMatchObject({ method: 'GET', uri: '/shard.bin', range: 'bytes=0-0', status: 206 });

    const learned = new HttpSource(`${nginx.url}/shard.bin`, { client });
    await learned.read(10, 10);
    expect(await learned.size()).toBe(SHARD_BYTES);
    expect(stats.httpRequests).toBe(2);

    const empty = new HttpSource(`${nginx.url}/empty.bin`, { client });
    expect(await empty.size()).toBe(0);
    await rejection(empty.read(0, 1), ErrorCodes.TRUNCATED);
    expect(await new HttpSource(`${nginx.url}/shard.bin`, { client, size: 7 }).size()).toBe(7);
    expect(stats.httpRequests).toBe(4);
    client.close();
  });

  it('reuses kept-alive connections: nginx sees one connection for 40 sequential reads', async () => {
    freshClient({ maxSockets: 1 });
    const before = (await nginx.accessLog()).length;
    const sources = Array.from({ length: 8 }, (_, i) => new HttpSource(`${nginx.url}/part-${i}.bin`, { client }));
    for (let i = 0; i < 40; i++) {
      const bytes = await sources[i % 8]!.read(i, 10);
      expect(Array.from(bytes)).toEqual(Array(10).fill(i % 8));
    }
    const entries = (await nginx.accessLog()).slice(before);
    expect(entries).toHaveLength(40);
    expect(new Set(entries.map((e) => e.connection)).size).toBe(1);
    expect(entries.at(-1)?.connectionRequests).toBe(40);
    expect(client.counters.connections).toBe(1);
    client.close();
  });

  it('opens at most maxSockets connections for 64 concurrent reads', async () => {
    freshClient({ maxSockets: 4 });
    const before = (await nginx.accessLog()).length;
    const src = new HttpSource(`${nginx.url}/shard.bin`, { client });
    await Promise.all(Array.from({ length: 64 }, (_, i) => src.read(i * 1000, 1000)));
    const entries = (await nginx.accessLog()).slice(before);
    expect(entries).toHaveLength(64);
    const connections = new Set(entries.map((e) => e.connection)).size;
    expect(connections).toBeLessThanOrEqual(4);
    expect(client.counters.connections).toBe(connections);
    client.close();
  });

  it('a server that ignores Range (200) is an HTTP error naming the problem, not retried', async () => {
    freshClient();
    const src = new HttpSource(`${nginx.url}/norange/shard.bin`, { client });
    const err = await rejection(src.read(100, 10), ErrorCodes.HTTP);
    expect(err.message).toMatch(/ignores Range/);
    expect(err.message).toContain('/norange/shard.bin');
    await rejection(src.size(), ErrorCodes.HTTP);
    expect(stats.retries).toBe(0);
    expect((await nginx.accessLog()).at(-1)).toMatchObject({ uri: '/norange/shard.bin', status: 200 });
    client.close();
  });

  it('404 is SHARD_MISSING naming the URL without its query string; 403 is HTTP; neither is retried', async () => {
    freshClient();
    const missing = `${nginx.url}/nope.tar?X-Amz-Signature=SECRET`;
    const err = await rejection(new HttpSource(missing, { client }).read(0, 1), ErrorCodes.SHARD_MISSING);
    expect(err.message).toContain(`${nginx.url}/nope.tar`);
    expect(err.message).not.toContain('SECRET');
    expect(err.file).toBe(`${nginx.url}/nope.tar?...`);
    await rejection(new HttpSource(`${nginx.url}/missing/shard.bin`, { client }).size(), ErrorCodes.SHARD_MISSING);
    const forbidden = await rejection(new HttpSource(`${nginx.url}/forbidden/shard.bin`, { client }).read(0, 1), ErrorCodes.HTTP);
    expect(forbidden.message).toContain('403');
    expect(stats.retries).toBe(0);
    expect(stats.httpRequests).toBe(3);
    client.close();
  });

  it('503 is retried `retries` times, then fails with HTTP and the last status', async () => {
    freshClient({ retries: 3 });
    const before = (await nginx.accessLog()).length;
    const err = await rejection(new HttpSource(`${nginx.url}/fail503/shard.bin`, { client }).read(0, 10), ErrorCodes.HTTP);
    expect(err.message).toMatch(/after 4 attempt\(s\): HTTP 503/);
    const entries = (await nginx.accessLog()).slice(before);
    expect(entries.map((e) => e.status)).toEqual([503, 503, 503, 503]);
    expect(stats).toMatchObject({ httpRequests: 4, retries: 3 });
    client.close();
  });

  it('a range past the end is TRUNCATED: a short 206 and a 416 alike', async () => {
    freshClient();
    const src = new HttpSource(`${nginx.url}/shard.bin`, { client });
    const short = await rejection(src.read(SHARD_BYTES - 5, 10), ErrorCodes.TRUNCATED);
    expect(short.offset).toBe(SHARD_BYTES - 5);
    expect(short.message).toContain(`ends at ${SHARD_BYTES}`);
    await rejection(src.read(SHARD_BYTES + 100, 10), ErrorCodes.TRUNCATED);
    expect(stats.retries).toBe(0);
    client.close();
  });

  it('a file replaced at the same size mid-read is SHARD_MISMATCH by its new ETag, not bytes of two versions', async () => {
    freshClient();
    const file = path.join(files.root, 'swap.bin');
    fs.writeFileSync(file, Buffer.alloc(50_000, 1));
    const src = new HttpSource(`${nginx.url}/swap.bin`, { client, size: 50_000, sizeMismatchCode: ErrorCodes.SHARD_MISMATCH });
    expect(Buffer.from(await src.read(0, 10)).equals(Buffer.alloc(10, 1))).toBe(true);
    expect(Buffer.from(await src.read(40_000, 10)).equals(Buffer.alloc(10, 1))).toBe(true);
    // another version of the same size, written next to it and renamed over it (nginx's ETag is mtime and size)
    fs.writeFileSync(`${file}.new`, Buffer.alloc(50_000, 2));
    fs.utimesSync(`${file}.new`, new Date(), new Date(Date.now() + 60_000));
    fs.renameSync(`${file}.new`, file);
    const err = await rejection(src.read(100, 10), ErrorCodes.SHARD_MISMATCH);
    expect(err.message).toMatch(/swap\.bin changed on the server while it was being read \(ETag "[^"]+", now "[^"]+"\)/);
    client.close();
  });

  it('sends presigned-style query strings unchanged, also for shards resolved against a dataset URL', async () => {
    freshClient();
    const dataset = `${nginx.url}/?X-Amz-Credential=a%2Fb&X-Amz-Signature=0123abcd`;
    const src = new HttpSource(resolveLocation(dataset, 'shard.bin'), { client });
    expect(Buffer.from(await src.read(1000, 100)).equals(files.shard.subarray(1000, 1100))).toBe(true);
    expect((await nginx.accessLog()).at(-1)?.uri).toBe('/shard.bin?X-Amz-Credential=a%2Fb&X-Amz-Signature=0123abcd');
    expect(src.name).toBe(`${nginx.url}/shard.bin?...`);
    const manifest = await readAll(resolveLocation(dataset, 'manifest.json'), { client });
    expect(Buffer.from(manifest).toString()).toBe('{"version":1}');
    client.close();
  });

  it('readAll fetches small files with a plain GET; missing is SHARD_MISSING, too big is TOO_LARGE', async () => {
    freshClient();
    await rejection(readAll(`${nginx.url}/manifest.json`, { client, maxBytes: 5 }), ErrorCodes.TOO_LARGE);
    await rejection(readAll(`${nginx.url}/absent.json`, { client }), ErrorCodes.SHARD_MISSING);
    expect((await nginx.accessLog()).at(-1)).toMatchObject({ uri: '/absent.json', range: '-' });
    // Without a client, readAll makes and closes its own.
    expect(Buffer.from(await readAll(`${nginx.url}/manifest.json`)).toString()).toBe('{"version":1}');
    client.close();
  });

  it('reads over https with a trusted CA on one kept-alive connection; an untrusted certificate is HTTP', async () => {
    const httpsUrl = nginx.httpsUrl ?? '';
    freshClient({ ca: nginx.ca ?? '', maxSockets: 1 });
    const src = new HttpSource(`${httpsUrl}/shard.bin`, { client });
    for (let i = 0; i < 5; i++) {
      expect(Buffer.from(await src.read(i * 7919, 5000)).equals(files.shard.subarray(i * 7919, i * 7919 + 5000))).toBe(true);
    }
    expect(await src.size()).toBe(SHARD_BYTES);
    expect(client.counters.connections).toBe(1);
    client.close();
    const untrusted = new HttpSource(`${httpsUrl}/shard.bin`, fastRetry);
    const err = await rejection(untrusted.read(0, 1), ErrorCodes.HTTP);
    expect(err.message).toMatch(/self.signed|certificate/i);
    await untrusted.close();
  });

  it('openByteSource picks HttpSource for URLs and FileSource for paths', async () => {
    const remote = await openByteSource(`${nginx.url}/shard.bin`, fastRetry);
    expect(remote).toBeInstanceOf(HttpSource);
    expect(Buffer.from(await remote.read(7, 3)).equals(files.shard.subarray(7, 10))).toBe(true);
    await remote.close();
    await rejection(remote.read(0, 1), ErrorCodes.CLOSED);
    const local = openByteSourceSync(path.join(files.root, 'shard.bin'));
    expect(local).toBeInstanceOf(FileSource);
    expect(await local.size()).toBe(SHARD_BYTES);
    await local.close();
    expect(isRemote(nginx.url)).toBe(true);
  });
});
