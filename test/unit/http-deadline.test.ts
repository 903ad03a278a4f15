/**
 * Issue 26, item 7 (family: every remote operation has a deadline a user can set; progress that stalls is a
 * failure, not a wait). A server trickling 64 bytes every 50 ms keeps each attempt alive forever; one that never
 * answers held a read for retries × timeoutMs.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { isHttpDeadline } from '../../src/io/http-client.js';
import { HttpSource } from '../../src/io/http-source.js';
import { startFlakyServer } from '../helpers/flaky-server.js';
import { httpFiles, rejection } from '../helpers/http-files.js';

const files = httpFiles();

describe('HttpClient deadline', () => {
  it('trickling_server_fails_at_the_deadline: HTTP naming the deadline, not retried', async () => {
    const server = await startFlakyServer(files.root, ['trickle', 'trickle', 'trickle']);
    // 200 KB at 64 bytes per 50 ms would take minutes; no gap reaches timeoutMs
    const src = new HttpSource(`${server.url}/shard.bin`, { retries: 2, timeoutMs: 5000, deadlineMs: 600, backoffMs: 1 });
    const err = await rejection(src.read(0, 200_000), ErrorCodes.HTTP);
    expect(isHttpDeadline(err)).toBe(true);
    expect(err.message).toMatch(/^GET http:\/\/127\.0\.0\.1:\d+\/shard\.bin did not finish within 600 ms \(the answer was still coming\); .*--timeout/);
    expect(server.requests).toBe(1);
    await src.close();
    await server.stop();
  });

  it('hanging_server_with_retries_ends_at_the_deadline, not after every attempt', async () => {
    const server = await startFlakyServer(files.root, Array(20).fill('hang'));
    // 20 attempts of 200 ms each would take 4 s; the deadline ends the read after 700 ms, within its third attempt
    const src = new HttpSource(`${server.url}/shard.bin`, { retries: 19, timeoutMs: 200, deadlineMs: 700, backoffMs: 1, maxBackoffMs: 1 });
    const err = await rejection(src.read(0, 10), ErrorCodes.HTTP);
    expect(isHttpDeadline(err)).toBe(true);
    expect(server.requests).toBeLessThanOrEqual(4);
    await src.close();
    await server.stop();
  });

  it('a backoff that would pass the deadline fails at once with the last failure named', async () => {
    const server = await startFlakyServer(files.root, ['503', '503']);
    const src = new HttpSource(`${server.url}/shard.bin`, { retries: 5, deadlineMs: 2000, backoffMs: 60_000, maxBackoffMs: 60_000 });
    const err = await rejection(src.read(0, 10), ErrorCodes.HTTP);
    expect(err.message).toMatch(/did not finish within 2000 ms \(1 attempt\(s\); the last: .*503/);
    expect(server.requests).toBe(1);
    await src.close();
    await server.stop();
  });

  it('deadlineMs is validated at the boundary', () => {
    expect(() => new HttpSource('http://127.0.0.1:1/x', { deadlineMs: 0 })).toThrow(/deadlineMs/);
  });
});
