import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { loaderSample, sameBytes, writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

describe('zero-copy views: getViewSync / atViewSync', () => {
  for (const compress of ['none', 'lz4'] as const) {
    it(`return the same bytes as getSync (${compress})`, async () => {
      const ds = await openDataset(await writeLoaderDataset(tmpDir(), 300, { compress }));
      for (const i of [0, 5, 150, 299]) {
        const want = loaderSample(i);
        const byKey = ds.getViewSync(want.key);
        expect(byKey.key).toBe(want.key);
        expect(sameBytes(byKey.members.bin, want.members.bin)).toBe(true);
        const byPosition = ds.atViewSync(i);
        expect(sameBytes(byPosition.members.cls, want.members.cls)).toBe(true);
      }
      expect(() => ds.getViewSync('nope')).toThrow(expect.objectContaining({ code: ErrorCodes.KEY_NOT_FOUND }));
      await ds.close();
    });
  }

  it('are valid until the next call: the buffer is reused, slice() copies stay intact', async () => {
    const ds = await openDataset(await writeLoaderDataset(tmpDir(), 50));
    const first = ds.atViewSync(3).members.bin as Uint8Array;
    expect(first).not.toBeInstanceOf(Buffer); // plain Uint8Array: slice() copies
    const kept = first.slice();
    ds.atViewSync(40);
    expect(sameBytes(first, loaderSample(3).members.bin)).toBe(false); // overwritten, as documented
    expect(sameBytes(kept, loaderSample(3).members.bin)).toBe(true);
    await ds.close();
  });

  it('grow for large samples and still read small ones after', async () => {
    const dir = tmpDir();
    const writer = new DatasetWriter({ dir });
    const big = new Uint8Array(300_000).map((_, j) => (j * 13) & 0xff);
    writer.add({ key: 'a', members: { bin: new Uint8Array([1, 2, 3]) } });
    writer.add({ key: 'b', members: { bin: big } });
    await writer.finish();
    const ds = await openDataset(dir);
    expect(sameBytes(ds.getViewSync('b').members.bin, big)).toBe(true);
    expect([...(ds.getViewSync('a').members.bin as Uint8Array)]).toEqual([1, 2, 3]);
    await ds.close();
  });
});
