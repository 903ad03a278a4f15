/**
 * The read paths take a sample's place from its index leaf's columns: a decoded leaf makes its IndexEntry objects
 * only when something asks for them (scans, locate, damage reports), so a dataset read with get/at, their sync and
 * view twins and the loader keeps about 180 bytes a sample of index in memory instead of 450.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { Codec } from '../../formats/index-entry.js';
import { ErrorCodes } from '../../formats/errors.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { flipBits } from '../helpers/checked.js';
import { tmpDir } from '../helpers/tmp.js';

describe('index leaves (columns)', () => {
  it('get/at, their sync and view twins, locate and the loader never make a leaf\'s entry objects, LZ4 or not (a cached leaf keeps its columns only)', async () => {
    const dir = tmpDir();
    // one-member and two-member samples, compressed and not, across several shards and leaves (1 KiB pages)
    for (const compress of ['none', 'lz4'] as const) {
      const w = new DatasetWriter({ dir: `${dir}/${compress}`, compress, shardBytes: 16 * 1024, pageSize: 1024 });
      const keys: string[] = [];
      for (let i = 0; i < 300; i++) {
        const key = `k/${String(i).padStart(4, '0')}`;
        keys.push(key);
        w.add({ key, members: i % 3 === 0 ? { jpg: new Uint8Array(40 + i).fill(i), cls: new Uint8Array([i & 255]) } : { bin: new Uint8Array(100 + i).fill(i) } });
      }
      await w.finish();
      const ds = await openDataset(`${dir}/${compress}`);
      try {
        const leaf = ds.index.leafOfSync(0).leaf;
        const made = vi.spyOn(Object.getPrototypeOf(leaf) as { entries: unknown }, 'entries', 'get');
        const reads: Array<() => unknown> = [];
        keys.forEach((key, i) => {
          reads.push(() => ds.getSync(key), () => ds.atSync(i), () => ds.getViewSync(key), () => ds.atViewSync(i), () => ds.get(key), () => ds.at(i), () => ds.has(key), () => ds.hasSync(key));
        });
        for (const read of reads) await read();
        for await (const batch of ds.loader({ batchSize: 16, shuffle: 'full', seed: 5 })) expect(batch.length).toBeGreaterThan(0);
        for await (const batch of ds.loader({ batchSize: 16, view: true })) expect(batch.length).toBeGreaterThan(0);
        expect(made).not.toHaveBeenCalled();
        const entry = await ds.locate(keys[6]!); // made from the columns alone (entryAt)
        expect(entry.key).toBe(keys[6]);
        expect(entry.members.map((m) => m.ext)).toEqual(['cls', 'jpg']);
        expect(made).not.toHaveBeenCalled();
        expect(leaf.entries[6]).toEqual(entry); // what the leaf's entries, made now, say
        expect(made).toHaveBeenCalled();
        made.mockRestore();
      } finally {
        await ds.close();
      }
    }
  });

  it('a damaged LZ4 frame is CORRUPT_SHARD naming the sample on every read path (the entry reports what the columns could not decode)', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, compress: 'lz4' });
    for (let i = 0; i < 20; i++) w.add({ key: `k/${i}`, members: { txt: new TextEncoder().encode(`sample ${i} `.repeat(50)), cls: new Uint8Array([i]) } });
    await w.finish();
    const probe = await openDataset(dir);
    const entry = await probe.locate('k/5');
    const txt = entry.members.find((m) => m.ext === 'txt')!;
    expect(txt.codec).toBe(Codec.lz4);
    const shard = path.join(dir, probe.shardName(entry.shard));
    await probe.close();
    const bytes = fs.readFileSync(shard);
    flipBits(bytes, entry.offset + txt.offset, 0xff); // the frame's magic number
    fs.writeFileSync(shard, bytes);
    for (const verify of [true, false]) {
      const ds = await openDataset(dir, { checkShards: 'size', verify });
      const keys: string[] = [];
      for await (const k of ds.keys()) keys.push(k);
      const position = keys.indexOf('k/5');
      const damaged = expect.objectContaining({ code: ErrorCodes.CORRUPT_SHARD, key: 'k/5', offset: entry.offset + txt.offset });
      expect(() => ds.getSync('k/5')).toThrow(damaged);
      expect(() => ds.atSync(position)).toThrow(damaged);
      expect(() => ds.atViewSync(position)).toThrow(damaged);
      await expect(ds.get('k/5')).rejects.toEqual(damaged);
      await expect((async () => {
        for await (const batch of ds.loader({ batchSize: 4 })) batch.length;
      })()).rejects.toEqual(damaged);
      await ds.close();
    }
  });
});
