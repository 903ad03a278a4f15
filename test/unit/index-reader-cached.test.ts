import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { MANIFEST_FILE, parseManifest } from '../../formats/manifest.js';
import type { ByteSource } from '../../src/io/byte-source.js';
import { FileSource } from '../../src/io/file-source.js';
import { IndexReader } from '../../src/read/index-reader.js';
import { flipBits } from '../helpers/checked.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

/** An index read as over http: asynchronous reads only (no readSync), each counted. */
class AsyncOnlySource implements ByteSource {
  reads = 0;
  constructor(private readonly file: FileSource) {}
  get name(): string {
    return this.file.name;
  }
  size(): Promise<number> {
    return this.file.size();
  }
  read(offset: number, length: number): Promise<Uint8Array> {
    this.reads++;
    return this.file.read(offset, length);
  }
  close(): Promise<void> {
    return this.file.close();
  }
}

const N = 6000;
let dir: string;
let indexFile: string;

describe('IndexReader.leafOfIfCached (the cached loader path\'s synchronous lookups)', () => {
  beforeAll(async () => {
    dir = await writeLoaderDataset(path.join(tmpDir(), 'ds'), N, { shardBytes: 256 * 1024 });
    indexFile = path.join(dir, parseManifest(fs.readFileSync(path.join(dir, MANIFEST_FILE), 'utf8'), 'manifest.json').index.file);
  });

  it('answers from decoded pages only: undefined (no read, no miss counted) until leafOf has read them, then the same leaf', async () => {
    const source = new AsyncOnlySource(await FileSource.open(indexFile));
    const index = await IndexReader.open(source);
    expect(index.size).toBe(N);
    const positions = [0, N - 1, 2999, 17, 4500, 3000, 1];
    for (const p of positions) {
      const reads = source.reads;
      const misses = index.cache.misses;
      const before = index.leafOfIfCached(p);
      expect(source.reads).toBe(reads);
      expect(index.cache.misses).toBe(misses);
      const hit = await index.leafOf(p);
      if (before !== undefined) expect(before.leaf).toBe(hit.leaf); // a leaf an earlier lookup decoded
      const after = index.leafOfIfCached(p);
      expect(after?.leaf).toBe(hit.leaf);
      expect(after?.base).toBe(hit.base);
      expect(after?.leaf.entries[p - (after?.base ?? 0)]).toEqual(await index.at(p));
    }
    // a position under a leaf never read: undefined, and nothing read for it
    const cold = [...Array(N).keys()].find((p) => index.leafOfIfCached(p) === undefined);
    expect(cold).toBeDefined();
    const reads = source.reads;
    expect(index.leafOfIfCached(cold as number)).toBeUndefined();
    expect(source.reads).toBe(reads);
    await index.close();
  });

  it('once every page is decoded, every position is found synchronously, as leafOf finds it', async () => {
    const source = new AsyncOnlySource(await FileSource.open(indexFile));
    const index = await IndexReader.open(source);
    for (let p = 0; p < N; p++) await index.leafOf(p);
    const reads = source.reads;
    for (let p = N - 1; p >= 0; p -= 7) {
      const hit = index.leafOfIfCached(p);
      expect(hit?.leaf.keys[p - (hit?.base ?? 0)]).toBe(`s/${String(p).padStart(6, '0')}`);
    }
    expect(source.reads).toBe(reads);
    await index.close();
  });

  it('reads the pages it lacks synchronously from a local source (the index copy in the shard cache), as leafOfSync', async () => {
    const index = await IndexReader.open(await FileSource.open(indexFile));
    const reference = await IndexReader.open(await FileSource.open(indexFile));
    const misses = index.cache.misses;
    for (const p of [N - 1, 0, 2999, 17, 4500, 3000, 1]) {
      const hit = index.leafOfIfCached(p);
      const want = reference.leafOfSync(p);
      expect(hit?.base).toBe(want.base);
      expect(hit?.leaf.keys).toEqual(want.leaf.keys);
      expect(hit?.leaf.keys[p - (hit?.base ?? 0)]).toBe(`s/${String(p).padStart(6, '0')}`);
    }
    expect(index.cache.misses).toBeGreaterThan(misses); // the pages were read, not found decoded
    await index.close();
    await reference.close();
  });

  describe('a copy of the index whose pages fail their check (IndexFallback)', () => {
    /** A copy of the index with one byte flipped in each of `pages`, on disk. */
    function damagedCopy(pages: number[], from = indexFile): string {
      const bytes = fs.readFileSync(from);
      const pageSize = 4096; // the default: the dataset is written with it (checked below)
      for (const p of pages) flipBits(bytes, p * pageSize + 77, 0x20);
      const copy = path.join(tmpDir(), 'index.copy');
      fs.writeFileSync(copy, bytes);
      return copy;
    }

    for (const via of ['async', 'sync', 'cached'] as const) {
      it(`${via}: every lookup answers as the index does; the fallback is opened and told once; the copy is closed`, async () => {
        const reference = await IndexReader.open(await FileSource.open(indexFile));
        const pageCount = reference.header.pageCount;
        expect(reference.header.pageSize).toBe(4096);
        const copySource = await FileSource.open(damagedCopy([1, 2, pageCount - 1, Math.floor(pageCount / 2)]));
        const dropped: unknown[] = [];
        let opened = 0;
        const index = await IndexReader.open(copySource, undefined, {
          open: () => {
            opened++;
            return via === 'cached' ? new AsyncOnlySource(FileSource.openSync(indexFile)) : FileSource.openSync(indexFile);
          },
          dropped: (err) => dropped.push(err),
        });
        for (let p = 0; p < N; p += 13) {
          const want = reference.leafOfSync(p);
          let hit = via === 'async' ? await index.leafOf(p) : via === 'sync' ? index.leafOfSync(p) : index.leafOfIfCached(p);
          if (hit === undefined) hit = await index.leafOf(p); // left for a source without readSync: the async lookup reads it
          expect(hit.base).toBe(want.base);
          expect(hit.leaf.keys).toEqual(want.leaf.keys);
        }
        expect(opened).toBe(1);
        expect(dropped).toEqual([expect.objectContaining({ code: 'SHARDKIT_ERR_CORRUPT_INDEX' })]);
        expect(copySource.isClosed).toBe(true);
        await index.close();
        await reference.close();
      });
    }

    it('sync with decode-to-slot (an index larger than the page cache): the same records; the fallback opened and told once', async () => {
      const reference = await IndexReader.open(await FileSource.open(indexFile));
      const pageCount = reference.header.pageCount;
      const copySource = await FileSource.open(damagedCopy([1, 2, pageCount - 1, Math.floor(pageCount / 2)]));
      const dropped: unknown[] = [];
      let opened = 0;
      const index = await IndexReader.open(copySource, 4096, {
        open: () => (opened++, FileSource.openSync(indexFile)),
        dropped: (err) => dropped.push(err),
      });
      expect(index.decodeToSlot).toBe(true);
      for (const step of [13, 7]) {
        for (let p = 0; p < N; p += step) {
          const want = reference.leafOfSync(p);
          const hit = index.leafOfSync(p);
          expect(hit.leaf.keys[p - hit.base]).toBe(want.leaf.keys[p - want.base]);
        }
      }
      expect(opened).toBe(1);
      expect(dropped).toEqual([expect.objectContaining({ code: 'SHARDKIT_ERR_CORRUPT_INDEX' })]);
      expect(copySource.isClosed).toBe(true);
      await index.close();
      await reference.close();
    });

    it('the index at the location damaged too: CORRUPT_INDEX, never a wrong leaf', async () => {
      const index = await IndexReader.open(await FileSource.open(damagedCopy([1, 2, 3, 4, 5, 6, 7, 8])), undefined, {
        open: () => FileSource.openSync(damagedCopy([1, 2, 3, 4, 5, 6, 7, 8])),
        dropped: () => undefined,
      });
      const errors: unknown[] = [];
      for (let p = 0; p < N; p += 13) await index.leafOf(p).catch((err: unknown) => errors.push(err));
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.every((e) => (e as { code?: string }).code === 'SHARDKIT_ERR_CORRUPT_INDEX')).toBe(true);
      await index.close();
    });
  });
});
