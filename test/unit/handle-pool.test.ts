import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { FileSource } from '../../src/io/file-source.js';
import { HandlePool } from '../../src/io/handle-pool.js';
import type { HandlePoolOptions } from '../../src/io/handle-pool.js';
import { IoStats } from '../../src/io/io-stats.js';

let dir: string;
const FILE_COUNT = 10_000;
const FILE_BYTES = 64;

/** File i holds FILE_BYTES bytes, each (i + j) & 0xff, so any read can be checked without keeping copies. */
function fileName(i: number): string {
  return path.join(dir, `shard-${String(i).padStart(5, '0')}.bin`);
}

function expectedByte(i: number, j: number): number {
  return (i + j) & 0xff;
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-handle-pool-'));
  const bytes = Buffer.alloc(FILE_BYTES);
  for (let i = 0; i < FILE_COUNT; i++) {
    for (let j = 0; j < FILE_BYTES; j++) bytes[j] = expectedByte(i, j);
    fs.writeFileSync(fileName(i), bytes);
  }
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Open descriptors of this process that point into the test dir, read from /proc (Linux). */
function openFdsInDir(): number {
  let count = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)) count++;
    } catch {
      // The descriptor used to list the directory is gone by now.
    }
  }
  return count;
}

function filePool(
  maxOpen: number,
  stats?: IoStats,
  extra: Partial<HandlePoolOptions<FileSource>> = {},
): HandlePool<FileSource> {
  const options = stats === undefined ? {} : { stats };
  return new HandlePool<FileSource>({
    open: (p) => FileSource.open(p, options),
    openSync: (p) => FileSource.openSync(p, options),
    maxOpen,
    ...extra,
  });
}

async function expectRejectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ShardkitError);
  expect((err as ShardkitError).code).toBe(code);
}

describe('HandlePool', () => {
  it('evicts the least recently released idle source', async () => {
    const pool = filePool(3);
    const [a, b, c, d] = [fileName(0), fileName(1), fileName(2), fileName(3)];
    const sa = await pool.acquire(a);
    const sb = await pool.acquire(b);
    const sc = pool.acquireSync(c);
    pool.release(sb); // LRU order of idle: b, then a, then c
    pool.release(sa);
    pool.release(sc);
    expect(await pool.use(b, (s) => s)).toBe(sb); // b is now most recent: idle order a, c, b
    const sd = await pool.acquire(d);
    expect(sa.isClosed).toBe(true);
    expect([sb.isClosed, sc.isClosed, sd.isClosed]).toEqual([false, false, false]);
    expect(pool.openCount).toBe(3);
    expect(pool.counters).toMatchObject({ opens: 4, closes: 1, evictions: 1, hits: 1, peakOpen: 3 });
    pool.release(sd);
    // Re-acquiring the evicted key opens it again.
    const sa2 = pool.acquireSync(a);
    expect(sa2).not.toBe(sa);
    expect(sc.isClosed).toBe(true);
    pool.release(sa2);
    await pool.close();
  });

  it('never closes a source in use: acquireSync overshoots by one, acquire waits for a release', async () => {
    const pool = filePool(2);
    const sa = await pool.acquire(fileName(10));
    const sb = await pool.acquire(fileName(11));
    const sc = pool.acquireSync(fileName(12));
    expect([sa.isClosed, sb.isClosed]).toEqual([false, false]);
    expect(pool.openCount).toBe(3);
    expect(pool.counters.overflows).toBe(1);
    expect(Array.from(sc.readSync(0, 4))).toEqual([12, 13, 14, 15]);
    pool.release(sc);
    expect(sc.isClosed).toBe(true); // over budget: closed at release, not kept idle
    expect(pool.openCount).toBe(2);

    let waited = false;
    const pending = pool.acquire(fileName(13)).then((s) => {
      waited = true;
      return s;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(waited).toBe(false);
    expect(pool.counters.waits).toBe(1);
    pool.release(sb);
    const sd = await pending;
    expect(sb.isClosed).toBe(true);
    expect(sa.isClosed).toBe(false);
    expect(Array.from(await sd.read(0, 2))).toEqual([13, 14]);
    pool.release(sa);
    pool.release(sd);
    expect(pool.counters.peakOpen).toBe(3);
    await pool.close();
    expect([sa.isClosed, sd.isClosed]).toEqual([true, true]);
  });

  it('reads 1,000 files in random order, 32 at a time, with maxOpen 8 and at most 8 descriptors', async () => {
    const stats = new IoStats();
    const baseline = openFdsInDir(); // descriptors an earlier failed test may have left open
    let maxFds = 0;
    const pool = filePool(8, stats, {
      onOpen: () => {
        maxFds = Math.max(maxFds, openFdsInDir() - baseline);
      },
    });
    const order = fc.sample(fc.shuffledSubarray([...Array(1000).keys()], { minLength: 1000 }), { numRuns: 1, seed: 7 })[0] ?? [];
    const requests = order.flatMap((i) => (i % 3 === 0 ? [i, i] : [i])); // adjacent repeats share an open
    let next = 0;
    const workers = Array.from({ length: 32 }, async () => {
      while (next < requests.length) {
        const i = requests[next++] ?? 0;
        const j = (i * 7) % (FILE_BYTES - 4);
        const got = await pool.use(fileName(i), (s) => s.read(j, 4));
        expect(Array.from(got)).toEqual([0, 1, 2, 3].map((k) => expectedByte(i, j + k)));
      }
    });
    await Promise.all(workers);
    expect(pool.counters.peakOpen).toBeLessThanOrEqual(8);
    expect(maxFds).toBeLessThanOrEqual(8);
    expect(maxFds).toBeGreaterThan(0);
    expect(pool.openCount).toBeLessThanOrEqual(8);
    expect(stats.opens).toBe(pool.counters.opens);
    expect(stats.opens - stats.closes).toBe(pool.openCount);
    expect(stats.opens).toBeGreaterThanOrEqual(1000);
    expect(stats.opens).toBeLessThan(requests.length);
    expect(stats.reads).toBe(requests.length);
    await pool.close();
    expect(stats.closes).toBe(stats.opens);
    expect(openFdsInDir()).toBe(baseline);
  });

  it('an epoch over 10,000 shards with maxOpen 64 on the sync path keeps at most 64 descriptors', () => {
    const stats = new IoStats();
    const baseline = openFdsInDir();
    let maxFds = 0;
    let opens = 0;
    const pool = filePool(64, stats, {
      onOpen: (source) => {
        opens++;
        if (opens % 500 === 0) maxFds = Math.max(maxFds, openFdsInDir() - baseline);
        expect(source.sizeSync()).toBe(FILE_BYTES);
      },
    });
    for (let i = 0; i < FILE_COUNT; i++) {
      const got = pool.useSync(fileName(i), (s) => s.readSync(FILE_BYTES - 1, 1));
      expect(got[0]).toBe(expectedByte(i, FILE_BYTES - 1));
    }
    expect(maxFds).toBe(64);
    expect(opens).toBe(FILE_COUNT);
    expect(stats.snapshot()).toMatchObject({ opens: FILE_COUNT, closes: FILE_COUNT - 64, reads: FILE_COUNT, stats: FILE_COUNT });
    void pool.close();
    expect(stats.closes).toBe(FILE_COUNT);
  });

  it('concurrent acquires of one key share one open and one onOpen call', async () => {
    let hookCalls = 0;
    const pool = filePool(4, undefined, {
      onOpen: async () => {
        hookCalls++;
        await new Promise((r) => setTimeout(r, 5));
      },
    });
    const sources = await Promise.all(Array.from({ length: 10 }, () => pool.acquire(fileName(20))));
    expect(new Set(sources).size).toBe(1);
    expect(hookCalls).toBe(1);
    expect(pool.counters.opens).toBe(1);
    for (const s of sources) pool.release(s);
    expect(pool.inUseCount).toBe(0);
    await pool.close();
  });

  it('a failing onOpen closes the source, fails every waiter, caches nothing, and frees the slot', async () => {
    let fail = true;
    const opened: FileSource[] = [];
    const pool = filePool(1, undefined, {
      onOpen: (source) => {
        opened.push(source);
        if (fail) throw new ShardkitError(ErrorCodes.SHARD_MISMATCH, `${source.name} has the wrong size`);
      },
    });
    await Promise.all([
      expectRejectCode(pool.acquire(fileName(30)), ErrorCodes.SHARD_MISMATCH),
      expectRejectCode(pool.acquire(fileName(30)), ErrorCodes.SHARD_MISMATCH),
    ]);
    expect(() => pool.acquireSync(fileName(30))).toThrow(/wrong size/);
    expect(opened.every((s) => s.isClosed)).toBe(true);
    expect(pool.openCount).toBe(0);
    fail = false;
    const s = await pool.acquire(fileName(31)); // the budget of 1 is free again
    pool.release(s);
    await pool.close();
  });

  it('a missing file rejects with SHARD_MISSING and leaves no entry behind', async () => {
    const pool = filePool(2);
    await expectRejectCode(pool.acquire(path.join(dir, 'gone.bin')), ErrorCodes.SHARD_MISSING);
    expect(() => pool.acquireSync(path.join(dir, 'gone.bin'))).toThrow(ShardkitError);
    expect(pool.openCount).toBe(0);
    await pool.close();
  });

  it('acquireSync refuses an async onOpen and a pool without openSync', async () => {
    const asyncHook = filePool(2, undefined, { onOpen: async () => undefined });
    expect(() => asyncHook.acquireSync(fileName(40))).toThrow(/synchronous onOpen/);
    expect(asyncHook.openCount).toBe(0);
    await asyncHook.close();
    const noSync = new HandlePool<FileSource>({ open: (p) => FileSource.open(p) });
    expect(() => noSync.acquireSync(fileName(40))).toThrow(/openSync/);
  });

  it('close: idle sources now, in-use ones at release; acquires after close and waiters fail with CLOSED', async () => {
    const pool = filePool(1);
    const held = await pool.acquire(fileName(50));
    const waiter = pool.acquire(fileName(51));
    await pool.close();
    await expectRejectCode(waiter, ErrorCodes.CLOSED);
    expect(held.isClosed).toBe(false);
    expect(held.readSync(0, 1)[0]).toBe(50);
    pool.release(held);
    expect(held.isClosed).toBe(true);
    await expectRejectCode(pool.acquire(fileName(52)), ErrorCodes.CLOSED);
    expect(() => pool.acquireSync(fileName(52))).toThrow(/closed/);
  });

  it('release of a source that holds no reference is INVALID_ARG; bad maxOpen is rejected', async () => {
    const pool = filePool(2);
    const s = await pool.acquire(fileName(60));
    pool.release(s);
    expect(() => pool.release(s)).toThrow(/holds no reference/);
    const stranger = FileSource.openSync(fileName(61));
    expect(() => pool.release(stranger)).toThrow(ShardkitError);
    stranger.closeSync();
    await pool.close();
    expect(() => filePool(0)).toThrow('Expected integer between 1 and 65536 for maxOpen but received 0 of type number');
  });
});
