import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { FileSource } from '../../src/io/file-source.js';
import { HttpClient } from '../../src/io/http-client.js';
import { HttpSource } from '../../src/io/http-source.js';
import { IoStats } from '../../src/io/io-stats.js';
import { resolveLocation } from '../../src/io/location.js';
import { isRemote, openByteSource, openByteSourceSync, readAll } from '../../src/io/open-source.js';
import { startFlakyServer } from '../helpers/flaky-server.js';
import { nginxSkipReason, startNginx } from '../helpers/nginx.js';
import type { NginxServer } from '../helpers/nginx.js';

const SHARD_BYTES = 1_000_003;
let root: string;
let shard: Buffer;

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-http-'));
  shard = randomBytes(SHARD_BYTES);
  fs.writeFileSync(path.join(root, 'shard.bin'), shard);
  fs.writeFileSync(path.join(root, 'empty.bin'), '');
  fs.writeFileSync(path.join(root, 'manifest.json'), '{"version":1}');
  for (let i = 0; i < 8; i++) fs.writeFileSync(path.join(root, `part-${i}.bin`), Buffer.alloc(1000, i));
});

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

async function rejection(promise: Promise<unknown>, code: string): Promise<ShardkitError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ShardkitError);
  expect((err as ShardkitError).code, (err as Error).message).toBe(code);
  return err as ShardkitError;
}

const fastRetry = { retries: 2, backoffMs: 1, maxBackoffMs: 5 };

describe.skipIf(nginxSkipReason !== undefined)(`HttpSource against nginx${nginxSkipReason ? ` (skipped: ${nginxSkipReason})` : ''}`, () => {
  let nginx: NginxServer;
  let client: HttpClient;
  let stats: IoStats;

  beforeAll(async () => {
    nginx = await startNginx(root, { tls: true });
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
      expect(Buffer.from(bytes).equals(shard.subarray(o, o + l)), `range ${o}+${l}`).toBe(true);
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
    const file = path.join(root, 'swap.bin');
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
    expect(Buffer.from(await src.read(1000, 100)).equals(shard.subarray(1000, 1100))).toBe(true);
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
      expect(Buffer.from(await src.read(i * 7919, 5000)).equals(shard.subarray(i * 7919, i * 7919 + 5000))).toBe(true);
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
    expect(Buffer.from(await remote.read(7, 3)).equals(shard.subarray(7, 10))).toBe(true);
    await remote.close();
    await rejection(remote.read(0, 1), ErrorCodes.CLOSED);
    const local = openByteSourceSync(path.join(root, 'shard.bin'));
    expect(local).toBeInstanceOf(FileSource);
    expect(await local.size()).toBe(SHARD_BYTES);
    await local.close();
    expect(isRemote(nginx.url)).toBe(true);
  });
});

describe('HttpSource against a scripted flaky server', () => {
  it('503, 503, then success: retried and returns the right bytes', async () => {
    const server = await startFlakyServer(root, ['503', '503']);
    const stats = new IoStats();
    const src = new HttpSource(`${server.url}/shard.bin`, { stats, retries: 4, backoffMs: 1 });
    expect(Buffer.from(await src.read(500, 1000)).equals(shard.subarray(500, 1500))).toBe(true);
    expect(server.requests).toBe(3);
    expect(stats).toMatchObject({ httpRequests: 3, retries: 2, reads: 1, bytesRead: 1000 });
    await src.close();
    await server.stop();
  });

  it('a reset connection and a cut-off body are retried', async () => {
    const server = await startFlakyServer(root, ['reset', 'shortBody']);
    const stats = new IoStats();
    const src = new HttpSource(`${server.url}/shard.bin`, { stats, retries: 2, backoffMs: 1 });
    expect(Buffer.from(await src.read(0, 100_000)).equals(shard.subarray(0, 100_000))).toBe(true);
    expect(stats.retries).toBe(2);
    await src.close();
    await server.stop();
  });

  it('backs off exponentially: three 503s with backoffMs 50 wait at least 25 + 50 + 100 ms', async () => {
    const server = await startFlakyServer(root, ['503', '503', '503']);
    const src = new HttpSource(`${server.url}/shard.bin`, { retries: 3, backoffMs: 50 });
    const started = performance.now();
    await src.read(0, 10);
    expect(performance.now() - started).toBeGreaterThanOrEqual(175);
    await src.close();
    await server.stop();
  });

  it('one odd reply (416, or an empty 200) fails its read but does not replace the size the manifest gave', async () => {
    for (const fault of ['416', 'empty200'] as const) {
      const server = await startFlakyServer(root, [fault]);
      const src = new HttpSource(`${server.url}/shard.bin`, { size: SHARD_BYTES, sizeMismatchCode: ErrorCodes.SHARD_MISMATCH, retries: 0 });
      await rejection(src.read(20_000, 100), ErrorCodes.TRUNCATED);
      // the file is whole again: reads within it succeed, before and after the offset the odd reply spoke of
      for (const at of [20_000, 100, 900_000]) expect(Buffer.from(await src.read(at, 100)).equals(shard.subarray(at, at + 100)), `${fault} ${at}`).toBe(true);
      expect(await src.size()).toBe(SHARD_BYTES);
      await src.close();
      await server.stop();
    }
  });

  it('compares ETags weakly and only where a reply has one', async () => {
    const tags = ['"v1"', undefined, 'W/"v1"', '"v1"', '"v2"'];
    let next = 0;
    const server = http.createServer((_req, res) => {
      const etag = tags[next++];
      res.writeHead(206, { 'content-range': `bytes 0-9/${SHARD_BYTES}`, 'content-length': '10', ...(etag === undefined ? {} : { etag }) }).end(shard.subarray(0, 10));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const src = new HttpSource(`http://127.0.0.1:${port}/shard.bin`, { retries: 0, sizeMismatchCode: ErrorCodes.INDEX_MISMATCH });
      for (let i = 0; i < 4; i++) expect(Buffer.from(await src.read(0, 10)).equals(shard.subarray(0, 10)), `reply ${i}`).toBe(true);
      await rejection(src.read(0, 10), ErrorCodes.INDEX_MISMATCH);
      await src.close();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('close() ends requests still queued for a socket: none reaches the server after it', async () => {
    const server = await startFlakyServer(root, [], { delayMs: 300 });
    const client = new HttpClient({ maxSockets: 2 });
    const sources = Array.from({ length: 8 }, (_, i) => new HttpSource(`${server.url}/part-${i}.bin`, { client, size: 1000 }));
    const reads = sources.map((src) => src.read(0, 10).then(() => 'ok', (e: unknown) => (e as ShardkitError).code));
    await new Promise((resolve) => setTimeout(resolve, 50)); // two requests at the server, six waiting for a socket
    const atClose = server.requests;
    client.close();
    expect(await Promise.all(reads)).toEqual(Array(8).fill(ErrorCodes.CLOSED));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect([atClose, server.requests]).toEqual([2, 2]);
    await server.stop();
  });

  it("the client's close() (a dataset's) ends a retry backoff at once: the read fails CLOSED, not 10 s later", async () => {
    const server = await startFlakyServer(root, ['503']);
    const client = new HttpClient({ retries: 2, backoffMs: 10_000, maxBackoffMs: 10_000 });
    const src = new HttpSource(`${server.url}/shard.bin`, { client });
    const read = src.read(0, 10).then(() => 'ok', (e: unknown) => (e as ShardkitError).code);
    while (server.requests === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 50)); // the 503 is in: the backoff has begun
    const closedAt = performance.now();
    client.close();
    expect(await read).toBe(ErrorCodes.CLOSED);
    expect(performance.now() - closedAt).toBeLessThan(1000);
    expect(server.requests).toBe(1);
    await server.stop();
  });

  it('a server that never answers times out after timeoutMs, is retried, then fails with HTTP', async () => {
    const server = await startFlakyServer(root, ['hang', 'hang']);
    const stats = new IoStats();
    const src = new HttpSource(`${server.url}/shard.bin`, { stats, retries: 1, timeoutMs: 150, backoffMs: 1 });
    const started = performance.now();
    const err = await rejection(src.read(0, 10), ErrorCodes.HTTP);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(err.message).toMatch(/after 2 attempt\(s\): no data for 150 ms/);
    expect(server.requests).toBe(2);
    await src.close();
    await server.stop();
  });

  it('a body that stalls halfway times out and the retry succeeds', async () => {
    const server = await startFlakyServer(root, ['stallBody']);
    const src = new HttpSource(`${server.url}/shard.bin`, { retries: 1, timeoutMs: 150, backoffMs: 1 });
    expect(Buffer.from(await src.read(10, 200_000)).equals(shard.subarray(10, 200_010))).toBe(true);
    expect(server.requests).toBe(2);
    await src.close();
    await server.stop();
  });

  it('a refused connection is retried, then fails with HTTP and ECONNREFUSED as cause', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const address = s.address();
        s.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
      });
    });
    const stats = new IoStats();
    const src = new HttpSource(`http://127.0.0.1:${port}/shard.bin`, { stats, retries: 2, backoffMs: 1 });
    const err = await rejection(src.read(0, 1), ErrorCodes.HTTP);
    expect((err.cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    expect(stats).toMatchObject({ httpRequests: 3, retries: 2 });
    await src.close();
  });

  it('odd answers to a range: a Content-Length beyond it fails at once, a 416 inside the file is HTTP, "Identity" is no encoding (ranges and whole files)', async () => {
    const body = shard.subarray(0, 100);
    const answers: Array<(res: http.ServerResponse) => void> = [
      // a Content-Length far beyond the range: fails when the head arrives, not after timeoutMs per attempt
      (res) => {
        res.writeHead(206, { 'content-range': `bytes 0-99/${SHARD_BYTES}`, 'content-length': String(2 ** 40) });
        res.write(body);
      },
      // a 416 for a range the same answer says lies inside the file
      (res) => res.writeHead(416, { 'content-range': `bytes */${SHARD_BYTES}`, 'content-length': '0' }).end(),
      // the encoding token is case-insensitive (RFC 9110), for a range and for a whole file (a manifest)
      (res) => res.writeHead(206, { 'content-range': `bytes 0-99/${SHARD_BYTES}`, 'content-length': '100', 'content-encoding': 'Identity' }).end(body),
      (res) => res.writeHead(200, { 'content-length': '100', 'content-encoding': 'IDENTITY' }).end(body),
      (res) => res.writeHead(200, { 'content-length': '100', 'content-encoding': 'GZip' }).end(body),
    ];
    let next = 0;
    const server = http.createServer((_req, res) => (answers[next++] as (r: http.ServerResponse) => void)(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const src = new HttpSource(`http://127.0.0.1:${port}/shard.bin`, { retries: 2, backoffMs: 1, timeoutMs: 5000 });
      const started = Date.now();
      const huge = await rejection(src.read(0, 100), ErrorCodes.HTTP);
      expect(huge.message).toContain(`announced ${2 ** 40} bytes for a range of 100`);
      expect(Date.now() - started).toBeLessThan(2500);
      const inside = await rejection(src.read(0, 100), ErrorCodes.HTTP);
      expect(inside.message).toContain(`answered 416 to bytes 0-99 of a file it says has ${SHARD_BYTES} bytes`);
      expect(Buffer.from(await src.read(0, 100)).equals(body)).toBe(true);
      await src.close();
      expect(Buffer.from(await readAll(`http://127.0.0.1:${port}/manifest.json`)).equals(body)).toBe(true);
      expect((await rejection(readAll(`http://127.0.0.1:${port}/manifest.json`), ErrorCodes.HTTP)).message).toContain('Content-Encoding GZip');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('close() lets reads in flight finish, then refuses new ones with CLOSED', async () => {
    const server = await startFlakyServer(root, []);
    const src = new HttpSource(`${server.url}/shard.bin`, { backoffMs: 1 });
    const reads = Array.from({ length: 6 }, (_, i) => src.read(i * 100_000, 100_000));
    await src.close();
    const results = await Promise.all(reads);
    results.forEach((bytes, i) => expect(Buffer.from(bytes).equals(shard.subarray(i * 100_000, (i + 1) * 100_000))).toBe(true));
    await rejection(src.read(0, 1), ErrorCodes.CLOSED);
    await rejection(src.size(), ErrorCodes.CLOSED);
    await server.stop();
  });

  it('rejects non-http URLs and bad options at construction', () => {
    expect(() => new HttpSource('ftp://h/x')).toThrow(/http:\/\/ or https:\/\//);
    expect(() => new HttpSource('http://h/x', { retries: -1 })).toThrow(
      'Expected integer between 0 and 100 for retries but received -1 of type number',
    );
    expect(() => new HttpClient({ maxSockets: 0 })).toThrow(/maxSockets/);
  });

  it('readAll reads local files and reports a missing one as SHARD_MISSING', async () => {
    const stats = new IoStats();
    expect(Buffer.from(await readAll(path.join(root, 'manifest.json'), { stats })).toString()).toBe('{"version":1}');
    expect(stats).toMatchObject({ opens: 1, closes: 1, stats: 1, reads: 1 });
    await rejection(readAll(path.join(root, 'nothing.json')), ErrorCodes.SHARD_MISSING);
    await rejection(readAll(path.join(root, 'shard.bin'), { maxBytes: 1000 }), ErrorCodes.TOO_LARGE);
  });
});
