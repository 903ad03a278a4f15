import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { FileSource } from '../../src/io/file-source.js';
import { IoStats } from '../../src/io/io-stats.js';

let dir: string;
let file: string;
let content: Buffer;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-file-source-'));
  file = path.join(dir, 'shard.bin');
  content = randomBytes(300_000);
  fs.writeFileSync(file, content);
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function expectCode(fn: () => unknown, code: string): ShardkitError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ShardkitError);
    expect((err as ShardkitError).code).toBe(code);
    return err as ShardkitError;
  }
  throw new Error(`expected ${code}, nothing was thrown`);
}

async function expectRejectCode(promise: Promise<unknown>, code: string): Promise<ShardkitError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ShardkitError);
  expect((err as ShardkitError).code).toBe(code);
  return err as ShardkitError;
}

const rangeArb = fc
  .integer({ min: 0, max: 300_000 })
  .chain((offset) => fc.tuple(fc.constant(offset), fc.integer({ min: 0, max: 300_000 - offset })));

describe('FileSource', () => {
  it('readSync returns exactly the bytes of any in-bounds range', () => {
    const src = FileSource.openSync(file);
    fc.assert(
      fc.property(rangeArb, ([offset, length]) => {
        expect(Buffer.from(src.readSync(offset, length)).equals(content.subarray(offset, offset + length))).toBe(true);
      }),
      { numRuns: 200 },
    );
    src.closeSync();
  });

  it('read returns the same bytes through the synchronous and the thread-pool path', async () => {
    for (const syncReadMaxBytes of [0, 65_536, 1_000_000]) {
      const src = await FileSource.open(file, { syncReadMaxBytes });
      await fc.assert(
        fc.asyncProperty(rangeArb, async ([offset, length]) => {
          const got = await src.read(offset, length);
          expect(Buffer.from(got).equals(content.subarray(offset, offset + length))).toBe(true);
        }),
        { numRuns: 60 },
      );
      await src.close();
    }
  });

  it('readInto and readIntoSync fill a pooled buffer at the given offset and leave the rest alone', async () => {
    const src = FileSource.openSync(file, { syncReadMaxBytes: 0 });
    const pool = Buffer.alloc(200_000, 0xee);
    src.readIntoSync(pool, 10, 1000, 5000);
    await src.readInto(pool, 2000, 150_000, 100_000);
    expect(pool.subarray(10, 1010).equals(content.subarray(5000, 6000))).toBe(true);
    expect(pool.subarray(2000, 152_000).equals(content.subarray(100_000, 250_000))).toBe(true);
    expect(pool[9]).toBe(0xee);
    expect(pool[1010]).toBe(0xee);
    expect(pool[152_000]).toBe(0xee);
    expectCode(() => src.readIntoSync(pool, 199_999, 2, 0), ErrorCodes.INVALID_ARG);
    src.closeSync();
  });

  it('a read past the end fails with TRUNCATED naming the file and offset, on both paths', async () => {
    const src = FileSource.openSync(file, { syncReadMaxBytes: 0 });
    const err = expectCode(() => src.readSync(299_990, 20), ErrorCodes.TRUNCATED);
    expect(err.file).toBe(file);
    expect(err.offset).toBe(299_990);
    expect(err.message).toContain(file);
    expect(err.message).toContain('299990');
    const asyncErr = await expectRejectCode(src.read(299_000, 200_000), ErrorCodes.TRUNCATED);
    expect(asyncErr.offset).toBe(299_000);
    expectCode(() => src.readSync(400_000, 1), ErrorCodes.TRUNCATED);
    // A zero-length read at the very end is not a truncation.
    expect(src.readSync(300_000, 0).length).toBe(0);
    src.closeSync();
  });

  it('reads at offsets beyond 4 GiB (64-bit positions) in a sparse file', async () => {
    const big = path.join(dir, 'sparse.bin');
    const position = 4.5 * 2 ** 30;
    const marker = randomBytes(4096);
    const fd = fs.openSync(big, 'w');
    fs.writeSync(fd, marker, 0, marker.length, position);
    fs.closeSync(fd);
    const src = FileSource.openSync(big);
    expect(src.sizeSync()).toBe(position + marker.length);
    expect(Buffer.from(src.readSync(position, 4096)).equals(marker)).toBe(true);
    expect(Buffer.from(await src.read(position + 100, 100)).equals(marker.subarray(100, 200))).toBe(true);
    src.closeSync();
    fs.rmSync(big);
  });

  it('a missing file fails at open with SHARD_MISSING, sync and async', async () => {
    const missing = path.join(dir, 'nope.tar');
    const err = expectCode(() => FileSource.openSync(missing), ErrorCodes.SHARD_MISSING);
    expect(err.file).toBe(missing);
    expect(err.message).toContain(missing);
    expect((err.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
    await expectRejectCode(FileSource.open(missing), ErrorCodes.SHARD_MISSING);
    // A path through a regular file (ENOTDIR) is missing too.
    expectCode(() => FileSource.openSync(path.join(file, 'x')), ErrorCodes.SHARD_MISSING);
  });

  it('other open failures are IO with the system error as cause', () => {
    const tooLong = path.join(dir, 'x'.repeat(5000));
    const err = expectCode(() => FileSource.openSync(tooLong), ErrorCodes.IO);
    expect((err.cause as NodeJS.ErrnoException).code).toBe('ENAMETOOLONG');
  });

  it('a directory or a FIFO where a file should be is UNSAFE_PATH at open, at once (a FIFO never blocks the open)', async () => {
    // open(2) of a directory read-only succeeds on Linux, and of a FIFO blocks until a writer comes
    const fifo = path.join(dir, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const p of [dir, fifo]) {
      expectCode(() => FileSource.openSync(p), ErrorCodes.UNSAFE_PATH);
      await expectRejectCode(FileSource.open(p), ErrorCodes.UNSAFE_PATH);
    }
  });

  it('an unreadable file is IO (EACCES), not SHARD_MISSING', () => {
    const locked = path.join(dir, 'locked.bin');
    fs.writeFileSync(locked, 'x');
    fs.chmodSync(locked, 0);
    fs.chmodSync(dir, 0o755);
    // root reads anything: drop the effective uid to nobody for the open (this worker is its own process)
    const root = process.getuid?.() === 0;
    if (root) process.seteuid?.(65534);
    let err: ShardkitError;
    try {
      err = expectCode(() => FileSource.openSync(locked), ErrorCodes.IO);
    } finally {
      if (root) process.seteuid?.(0);
    }
    expect((err.cause as NodeJS.ErrnoException).code).toBe('EACCES');
  });

  it('counts one open, one fstat however often size is asked, one read per syscall, and one close', async () => {
    const stats = new IoStats();
    const src = FileSource.openSync(file, { stats });
    expect(src.sizeSync()).toBe(content.length);
    expect(await src.size()).toBe(content.length);
    src.readSync(0, 100);
    await src.read(1000, 100);
    await src.read(2000, 100_000);
    src.closeSync();
    src.closeSync();
    expect(stats.snapshot()).toEqual({
      opens: 1,
      closes: 1,
      reads: 3,
      mappedReads: 0,
      bytesRead: 100_200,
      stats: 1,
      httpRequests: 0,
      retries: 0,
    });
  });

  it('after close, reads fail with CLOSED; a close during thread-pool reads waits for them', async () => {
    const stats = new IoStats();
    const src = FileSource.openSync(file, { stats, syncReadMaxBytes: 0 });
    const reads = Array.from({ length: 16 }, (_, i) => src.read(i * 10_000, 100_000 - i));
    await src.close();
    expect(src.isClosed).toBe(true);
    expect(stats.closes).toBe(0); // deferred: reads still own the descriptor
    const results = await Promise.all(reads);
    results.forEach((bytes, i) => {
      expect(Buffer.from(bytes).equals(content.subarray(i * 10_000, i * 10_000 + 100_000 - i))).toBe(true);
    });
    expect(stats.closes).toBe(1);
    expectCode(() => src.readSync(0, 1), ErrorCodes.CLOSED);
    await expectRejectCode(src.read(0, 1), ErrorCodes.CLOSED);
    expectCode(() => src.sizeSync(), ErrorCodes.CLOSED);
  });

  it('rejects bad ranges and options with INVALID_ARG and a sharp-style message', async () => {
    const src = FileSource.openSync(file);
    expectCode(() => src.readSync(-1, 1), ErrorCodes.INVALID_ARG);
    expectCode(() => src.readSync(0.5, 1), ErrorCodes.INVALID_ARG);
    expectCode(() => src.readSync(0, Number.NaN), ErrorCodes.INVALID_ARG);
    await expectRejectCode(src.read(0, -2), ErrorCodes.INVALID_ARG);
    src.closeSync();
    const err = expectCode(() => FileSource.openSync(file, { syncReadMaxBytes: 1.5 }), ErrorCodes.INVALID_ARG);
    expect(err.message).toBe(
      'Expected integer between 0 and 2147483647 for syncReadMaxBytes but received 1.5 of type number',
    );
  });
});
