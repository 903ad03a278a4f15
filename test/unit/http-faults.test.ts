/** HttpSource and HttpClient against servers that misbehave on cue: retries, timeouts, odd replies, close(). */
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { HttpClient } from '../../src/io/http-client.js';
import { HttpSource } from '../../src/io/http-source.js';
import { IoStats } from '../../src/io/io-stats.js';
import { readAll } from '../../src/io/open-source.js';
import { startFlakyServer } from '../helpers/flaky-server.js';
import { httpFiles, rejection, SHARD_BYTES } from '../helpers/http-files.js';

const files = httpFiles();

const fastRetry = { retries: 2, backoffMs: 1, maxBackoffMs: 5 };

describe('HttpSource against a scripted flaky server', () => {
  it('503, 503, then success: retried and returns the right bytes', async () => {
    const server = await startFlakyServer(files.root, ['503', '503']);
    const stats = new IoStats();
    const src = new HttpSource(`${server.url}/shard.bin`, { stats, retries: 4, backoffMs: 1 });
    expect(Buffer.from(await src.read(500, 1000)).equals(files.shard.subarray(500, 1500))).toBe(true);
    expect(server.requests).toBe(3);
    expect(stats).toMatchObject({ httpRequests: 3, retries: 2, reads: 1, bytesRead: 1000 });
    await src.close();
    await server.stop();
  });

  it('a reset connection and a cut-off body are retried', async () => {
    const server = await startFlakyServer(files.root, ['reset', 'shortBody']);
    const stats = new IoStats();
    const src = new HttpSource(`${server.url}/shard.bin`, { stats, retries: 2, backoffMs: 1 });
    expect(Buffer.from(await src.read(0, 100_000)).equals(files.shard.subarray(0, 100_000))).toBe(true);
    expect(stats.retries).toBe(2);
    await src.close();
    await server.stop();
  });

  it('backs off exponentially: three 503s with backoffMs 50 wait at least 25 + 50 + 100 ms', async () => {
    const server = await startFlakyServer(files.root, ['503', '503', '503']);
    const src = new HttpSource(`${server.url}/shard.bin`, { retries: 3, backoffMs: 50 });
    const started = performance.now();
    await src.read(0, 10);
    expect(performance.now() - started).toBeGreaterThanOrEqual(175);
    await src.close();
    await server.stop();
  });

  it('one odd reply (416, or an empty 200) fails its read but does not replace the size the manifest gave', async () => {
    for (const fault of ['416', 'empty200'] as const) {
      const server = await startFlakyServer(files.root, [fault]);
      const src = new HttpSource(`${server.url}/shard.bin`, { size: SHARD_BYTES, sizeMismatchCode: ErrorCodes.SHARD_MISMATCH, retries: 0 });
      await rejection(src.read(20_000, 100), ErrorCodes.TRUNCATED);
      // the file is whole again: reads within it succeed, before and after the offset the odd reply spoke of
      for (const at of [20_000, 100, 900_000]) expect(Buffer.from(await src.read(at, 100)).equals(files.shard.subarray(at, at + 100)), `${fault} ${at}`).toBe(true);
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
      res.writeHead(206, { 'content-range': `bytes 0-9/${SHARD_BYTES}`, 'content-length': '10', ...(etag === undefined ? {} : { etag }) }).end(files.shard.subarray(0, 10));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const src = new HttpSource(`http://127.0.0.1:${port}/shard.bin`, { retries: 0, sizeMismatchCode: ErrorCodes.INDEX_MISMATCH });
      for (let i = 0; i < 4; i++) expect(Buffer.from(await src.read(0, 10)).equals(files.shard.subarray(0, 10)), `reply ${i}`).toBe(true);
      await rejection(src.read(0, 10), ErrorCodes.INDEX_MISMATCH);
      await src.close();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('close() ends requests still queued for a socket: none reaches the server after it', async () => {
    const server = await startFlakyServer(files.root, [], { delayMs: 300 });
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
    const server = await startFlakyServer(files.root, ['503']);
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
    const server = await startFlakyServer(files.root, ['hang', 'hang']);
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
    const server = await startFlakyServer(files.root, ['stallBody']);
    const src = new HttpSource(`${server.url}/shard.bin`, { retries: 1, timeoutMs: 150, backoffMs: 1 });
    expect(Buffer.from(await src.read(10, 200_000)).equals(files.shard.subarray(10, 200_010))).toBe(true);
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
    const body = files.shard.subarray(0, 100);
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
    const server = await startFlakyServer(files.root, []);
    const src = new HttpSource(`${server.url}/shard.bin`, { backoffMs: 1 });
    const reads = Array.from({ length: 6 }, (_, i) => src.read(i * 100_000, 100_000));
    await src.close();
    const results = await Promise.all(reads);
    results.forEach((bytes, i) => expect(Buffer.from(bytes).equals(files.shard.subarray(i * 100_000, (i + 1) * 100_000))).toBe(true));
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
    expect(Buffer.from(await readAll(path.join(files.root, 'manifest.json'), { stats })).toString()).toBe('{"version":1}');
    expect(stats).toMatchObject({ opens: 1, closes: 1, stats: 1, reads: 1 });
    await rejection(readAll(path.join(files.root, 'nothing.json')), ErrorCodes.SHARD_MISSING);
    await rejection(readAll(path.join(files.root, 'shard.bin'), { maxBytes: 1000 }), ErrorCodes.TOO_LARGE);
  });
});
