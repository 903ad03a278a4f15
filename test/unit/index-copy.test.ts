import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { MANIFEST_FILE, parseManifest, type Manifest } from '../../formats/manifest.js';
import { indexChecksOut, openIndexCopy, type IndexCopyPlace } from '../../src/cache/index-copy.js';
import type { CacheEvent } from '../../src/cache/shard-cache.js';
import { writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

let manifest: Manifest;
let indexBytes: Uint8Array;

function place(maxBytes: number, events: CacheEvent[]): IndexCopyPlace {
  const root = tmpDir();
  return { root, dir: path.join(root, 'ds-id'), maxBytes, onEvent: (e) => events.push(e) };
}

describe('the index copy (index-copy.ts)', () => {
  beforeAll(async () => {
    const dir = await writeLoaderDataset(path.join(tmpDir(), 'ds'), 3000, { shardBytes: 256 * 1024 });
    manifest = parseManifest(fs.readFileSync(path.join(dir, MANIFEST_FILE), 'utf8'), 'manifest.json');
    indexBytes = new Uint8Array(fs.readFileSync(path.join(dir, manifest.index.file)));
  });

  it('indexChecksOut accepts the index and refuses any byte of it changed, and any other size', () => {
    expect(indexChecksOut(indexBytes, manifest.index)).toBe(true);
    fc.assert(
      fc.property(fc.nat({ max: indexBytes.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const damaged = indexBytes.slice();
        damaged[at] = (damaged[at] as number) ^ flip;
        return !indexChecksOut(damaged, manifest.index);
      }),
      { numRuns: 300 },
    );
    expect(indexChecksOut(indexBytes.subarray(0, indexBytes.length - 1), manifest.index)).toBe(false);
    expect(indexChecksOut(indexBytes, { ...manifest.index, crc32c: '00000000' })).toBe(false);
  });

  it('fetches once, then opens the copy by its proof; bytes that fail the checks are never written under its name', async () => {
    const events: CacheEvent[] = [];
    const p = place(1 << 30, events);
    let fetches = 0;
    const fetchWhole = (): Promise<Uint8Array> => {
      fetches++;
      return Promise.resolve(indexBytes);
    };
    const a = await openIndexCopy(p, manifest.index, fetchWhole);
    expect(Buffer.from(a?.readSync(0, indexBytes.length) ?? []).equals(Buffer.from(indexBytes))).toBe(true);
    await a?.close();
    const b = await openIndexCopy(p, manifest.index, fetchWhole);
    expect(fetches).toBe(1);
    await b?.close();
    expect(events).toEqual([]);

    const damaged = indexBytes.slice();
    damaged[100] = (damaged[100] as number) ^ 1;
    const q = place(1 << 30, events);
    expect(await openIndexCopy(q, manifest.index, () => Promise.resolve(damaged))).toBeUndefined();
    expect(events).toEqual([{ type: 'bypass', shard: manifest.index.file, reason: expect.stringContaining('fails its checks against the manifest') }]);
    expect(fs.readdirSync(q.dir)).toEqual([]); // no copy, no part, no lock
  });

  it('a cache too small for the index, or a failing fetch: undefined, said once each, nothing left', async () => {
    const events: CacheEvent[] = [];
    const small = place(indexBytes.length - 1, events);
    expect(await openIndexCopy(small, manifest.index, () => Promise.resolve(indexBytes))).toBeUndefined();
    const failing = place(1 << 30, events);
    expect(await openIndexCopy(failing, manifest.index, () => Promise.reject(new Error('ECONNRESET')))).toBeUndefined();
    expect(events.map((e) => e.reason)).toEqual([expect.stringContaining('larger than the cache'), expect.stringContaining('fetching it whole failed (ECONNRESET)')]);
    expect(fs.readdirSync(small.dir)).toEqual([]);
    expect(fs.readdirSync(failing.dir)).toEqual([]);
  });
});
