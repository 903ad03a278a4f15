/**
 * A write of the live index that fails (a full disk) keeps what a `--resume` continues from: the index file with its
 * checkpoints. Resumed once space is back, the dataset is the same bytes as one written without the failure.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { tmpDir } from '../helpers/tmp.js';

const OPTS = { shardBytes: 16 * 1024, pageSize: 1024 };
const N = 1200;

function sample(i: number): { key: string; members: Record<string, Uint8Array> } {
  const body = new Uint8Array(100 + (i % 50) * 40).map((_, j) => (i * 31 + j) & 0xff);
  return { key: `k/${String(i).padStart(5, '0')}`, members: { bin: body } };
}

/** The next positional write (the index's: shards append) fails with ENOSPC once `armed` is set. */
function diskFullOnIndexWrite(): { arm: () => void } {
  const real = fs.writeSync;
  let armed = false;
  vi.spyOn(fs, 'writeSync').mockImplementation(((...args: unknown[]) => {
    if (armed && args.length === 5) {
      armed = false;
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
    }
    return (real as (...a: unknown[]) => number)(...args);
  }) as typeof fs.writeSync);
  return { arm: () => (armed = true) };
}

/** The dataset written without a failure, to compare with. */
async function writeWhole(): Promise<string> {
  const dir = tmpDir();
  const w = new DatasetWriter({ dir, ...OPTS });
  for (let i = 0; i < N; i++) w.add(sample(i));
  await w.finish();
  return dir;
}

function sameTree(a: string, b: string): void {
  const names = fs.readdirSync(a).sort();
  expect(fs.readdirSync(b).sort()).toEqual(names);
  for (const n of names) expect(fs.readFileSync(path.join(b, n)).equals(fs.readFileSync(path.join(a, n))), n).toBe(true);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a full disk while the index is written', () => {
  it('in the middle of the write (a page of the live index): the error is thrown, and --resume continues', async () => {
    const whole = await writeWhole();

    const dir = tmpDir();
    const disk = diskFullOnIndexWrite();
    const first = new DatasetWriter({ dir, ...OPTS });
    let failedAt = -1;
    for (let i = 0; i < N; i++) {
      if (i === 700) disk.arm();
      try {
        first.add(sample(i));
      } catch (err) {
        expect(isShardkitError(err) && err.code).toBe(ErrorCodes.IO);
        failedAt = i;
        break;
      }
    }
    expect(failedAt).toBeGreaterThanOrEqual(700);
    first.abort();
    vi.restoreAllMocks();
    const resumed = new DatasetWriter({ dir, ...OPTS, resume: true });
    expect(resumed.resumedCursor).toBeGreaterThan(0);
    for (let i = resumed.resumedCursor; i < N; i++) resumed.add(sample(i));
    await resumed.finish();
    sameTree(whole, dir);
  });

  it('at the end (shard table, header): the error is thrown, and --resume finishes', async () => {
    const whole = await writeWhole();

    const dir = tmpDir();
    const disk = diskFullOnIndexWrite();
    const first = new DatasetWriter({ dir, ...OPTS });
    for (let i = 0; i < N; i++) first.add(sample(i));
    disk.arm();
    await expect(first.finish()).rejects.toMatchObject({ code: ErrorCodes.IO });
    first.abort();
    expect(fs.existsSync(path.join(dir, 'manifest.json'))).toBe(false);
    vi.restoreAllMocks();
    const resumed = new DatasetWriter({ dir, ...OPTS, resume: true });
    for (let i = resumed.resumedCursor; i < N; i++) resumed.add(sample(i));
    await resumed.finish();
    sameTree(whole, dir);
  });
});
