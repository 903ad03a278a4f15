/** A damaged index never crashes, hangs or returns wrong data: every flipped byte ends in a ShardkitError. */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { DatasetWriter, INDEX_FILE } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { flipBits } from '../helpers/checked.js';
import { tmpDir } from '../helpers/tmp.js';

const N = 400;
const keyOf = (i: number) => `s/${String(i).padStart(4, '0')}`;
const bodyOf = (i: number) => Uint8Array.from({ length: 20 + (i % 13) }, (_, j) => (i + j) & 0xff);

let source: string;
let indexBytes: Buffer;

beforeAll(async () => {
  source = tmpDir();
  const w = new DatasetWriter({ dir: source, pageSize: 1024, shardBytes: 16 * 1024 });
  for (let i = 0; i < N; i++) w.add({ key: keyOf(i), members: { bin: bodyOf(i) } });
  await w.finish();
  indexBytes = fs.readFileSync(path.join(source, INDEX_FILE));
});

function copyWithIndex(bytes: Uint8Array): string {
  const dir = tmpDir();
  for (const f of fs.readdirSync(source)) fs.copyFileSync(path.join(source, f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, INDEX_FILE), bytes);
  return dir;
}

const allowed = new Set<string>([ErrorCodes.CORRUPT_INDEX, ErrorCodes.BAD_MAGIC, ErrorCodes.UNSUPPORTED_VERSION, ErrorCodes.TRUNCATED, ErrorCodes.INDEX_MISMATCH]);

describe('index damage', () => {
  it('a flipped byte anywhere in the index gives an error code or the right data, never wrong data', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: indexBytes.length - 1 }), fc.integer({ min: 1, max: 255 }), async (pos, mask) => {
        const damaged = Buffer.from(indexBytes);
        damaged[pos] = (damaged[pos] as number) ^ mask;
        const dir = copyWithIndex(damaged);
        let ds;
        try {
          ds = await openDataset(dir);
          for (let i = 0; i < N; i += 7) {
            const s = await ds.get(keyOf(i));
            expect(Buffer.from(s.members.bin!).equals(Buffer.from(bodyOf(i)))).toBe(true);
            expect((await ds.at(i)).key).toBe(keyOf(i));
          }
        } catch (err) {
          if (!isShardkitError(err) || !allowed.has(err.code)) throw err;
        } finally {
          await ds?.close();
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 150 },
    );
  });

  it('reports wrong magic, a future version and truncation with their own codes', async () => {
    const magic = Buffer.from(indexBytes);
    magic[0] = 0x7f;
    await expect(openDataset(copyWithIndex(magic))).rejects.toMatchObject({ code: ErrorCodes.BAD_MAGIC });
    const future = Buffer.from(indexBytes);
    future[8] = 9;
    await expect(openDataset(copyWithIndex(future))).rejects.toMatchObject({ code: ErrorCodes.UNSUPPORTED_VERSION });
    await expect(openDataset(copyWithIndex(indexBytes.subarray(0, indexBytes.length - 100)))).rejects.toMatchObject({ code: ErrorCodes.TRUNCATED });
    await expect(openDataset(copyWithIndex(indexBytes.subarray(0, 50)))).rejects.toMatchObject({ code: ErrorCodes.TRUNCATED });
  });

  it('detects an index from another dataset', async () => {
    const other = tmpDir();
    const w = new DatasetWriter({ dir: other, pageSize: 1024, shardBytes: 16 * 1024 });
    for (let i = 0; i < N; i++) w.add({ key: keyOf(i), members: { bin: bodyOf(i + 1) } });
    await w.finish();
    const dir = copyWithIndex(fs.readFileSync(path.join(other, INDEX_FILE)));
    await expect(openDataset(dir)).rejects.toMatchObject({ code: ErrorCodes.INDEX_MISMATCH });
  });
});

describe('concurrent lookups', () => {
  it('share one read per index page', async () => {
    const ds = await openDataset(source, { pageCacheBytes: 1 << 20 });
    const before = ds.stats().io.reads;
    // 50 lookups at once of keys on the same few pages: each page is read once
    const keys = Array.from({ length: 50 }, (_, i) => keyOf(i));
    const found = await Promise.all(keys.map((k) => ds.locate(k)));
    expect(found.map((e) => e.key)).toEqual(keys);
    const pageReads = ds.stats().io.reads - before;
    expect(pageReads).toBeLessThanOrEqual(ds.index.header.height + 2);
    await ds.close();
  });
});

describe('what a damaged or lost index tells the user to do', () => {
  async function damaged(layout: 'tar' | 'packed'): Promise<{ page: string; lost: string; other: string }> {
    const make = async (seed: number): Promise<string> => {
      const dir = tmpDir();
      const w = new DatasetWriter({ dir, layout, pageSize: 1024, shardBytes: 16 * 1024 });
      for (let i = 0; i < N; i++) w.add({ key: keyOf(i), members: { bin: bodyOf(i + seed) } });
      await w.finish();
      return dir;
    };
    const page = await make(0);
    const index = path.join(page, INDEX_FILE);
    const bytes = fs.readFileSync(index);
    flipBits(bytes, 1024 + 40, 1); // inside page 1
    fs.writeFileSync(index, bytes);
    const lost = await make(0);
    fs.rmSync(path.join(lost, INDEX_FILE));
    const other = await make(0);
    fs.copyFileSync(path.join(await make(1), INDEX_FILE), path.join(other, INDEX_FILE));
    return { page, lost, other };
  }
  const messageOf = async (run: () => Promise<unknown>): Promise<string> => {
    try {
      await run();
    } catch (err) {
      if (isShardkitError(err)) return err.message;
      throw err;
    }
    throw new Error('expected an error');
  };
  const readAll = async (dir: string): Promise<void> => {
    const ds = await openDataset(dir);
    try {
      for (let i = 0; i < N; i++) await ds.at(i);
    } finally {
      await ds.close();
    }
  };

  it('tar: run `shardkit reindex`, which rebuilds the index from the tar headers', async () => {
    const { page, lost, other } = await damaged('tar');
    for (const dir of [page, lost, other]) expect(await messageOf(() => readAll(dir))).toMatch(/; run `shardkit reindex`$/);
    for (const dir of [page, lost, other]) expect((await verifyDataset(dir)).problems.some((p) => /; run `shardkit reindex`$/.test(p.what))).toBe(true);
  });

  it('packed: restore the index or pack again; reindex refuses packed datasets', async () => {
    const { page, lost, other } = await damaged('packed');
    for (const dir of [page, lost, other]) {
      const message = await messageOf(() => readAll(dir));
      expect(message).toMatch(/; restore the index from a backup or pack the dataset again/);
      expect(message).not.toMatch(/run `shardkit reindex`/);
      const { problems } = await verifyDataset(dir);
      expect(problems.some((p) => /restore the index from a backup/.test(p.what))).toBe(true);
      expect(problems.filter((p) => /run `shardkit reindex`/.test(p.what))).toEqual([]);
    }
  });
});
