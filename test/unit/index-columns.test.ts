/**
 * The read paths take a sample's place from its index leaf's columns: a decoded leaf makes its IndexEntry objects
 * only when something asks for them (scans, locate, damage reports), so a dataset read with get/at, their sync and
 * view twins and the loader keeps about 180 bytes a sample of index in memory instead of 450.
 */
import { describe, expect, it, vi } from 'vitest';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { tmpDir } from '../helpers/tmp.js';

describe('index leaves (columns)', () => {
  it('get/at, their sync and view twins and the loader never make entry objects; locate and scans do', async () => {
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
        // compressed members are decoded through their entry (LZ4 needs the member objects' sizes)
        if (compress === 'none') expect(made).not.toHaveBeenCalled();
        made.mockClear();
        expect((await ds.locate(keys[7]!)).key).toBe(keys[7]);
        expect(made).toHaveBeenCalled();
        made.mockRestore();
      } finally {
        await ds.close();
      }
    }
  });
});
