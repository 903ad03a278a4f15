import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { derive } from '../../src/pack/derive.js';
import { parseSelection, selectPositions, uniformChoice } from '../../src/pack/select.js';
import { openDataset } from '../../src/read/dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A dataset of `perClass[c]` samples of class c, keys c<class>/<i>, with cls members. */
async function classDataset(perClass: number[], withCls = true): Promise<string> {
  const dir = path.join(tmpDir(), 'ds');
  const w = new DatasetWriter({ dir, shardBytes: 8192 });
  perClass.forEach((n, c) => {
    for (let i = 0; i < n; i++) w.add({ key: `c${c}/${String(i).padStart(4, '0')}`, members: { txt: text(`${c}-${i}`), ...(withCls ? { cls: text(String(c)) } : {}) } });
  });
  await w.finish();
  return dir;
}

describe('parseSelection', () => {
  it('reads the three forms and refuses anything else, naming what it expects', () => {
    expect(parseSelection('random:5')).toEqual({ mode: 'random', count: 5 });
    expect(parseSelection('per-class:20')).toEqual({ mode: 'per-class', count: 20 });
    expect(parseSelection('fraction:0.25')).toEqual({ mode: 'fraction', fraction: 0.25 });
    for (const bad of ['random:0', 'random:-1', 'random:1.5', 'fraction:0', 'fraction:1.5', 'fraction:x', 'class:3', 'random']) {
      expect(() => parseSelection(bad), bad).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG, message: `Expected random:N, per-class:N or fraction:F (0 < F <= 1), e.g. per-class:20 for --select but received ${JSON.stringify(bad)}` }));
    }
  });
});

describe('selection (property)', () => {
  it('uniformChoice: count distinct positions, ascending, one set per seed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 500 }), fc.nat(500), fc.oneof(fc.nat(), fc.string()), (size, want, seed) => {
        const count = Math.min(want, size);
        const chosen = uniformChoice(size, count, seed);
        expect(chosen.length).toBe(count);
        expect(new Set(chosen).size).toBe(count);
        for (let i = 1; i < chosen.length; i++) expect(chosen[i] as number).toBeGreaterThan(chosen[i - 1] as number);
        for (const p of chosen) expect(p).toBeLessThan(size);
        expect(uniformChoice(size, count, seed)).toEqual(chosen);
      }),
    );
  });

  it('per-class:N keeps min(N, class size) of each class, deterministically', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1, maxLength: 5 }), fc.integer({ min: 1, max: 12 }), fc.nat(), async (perClass, n, seed) => {
        const ds = await openDataset(await classDataset(perClass));
        const chosen = await selectPositions(ds, { mode: 'per-class', count: n }, seed);
        const byClass = perClass.map(() => 0);
        for (const p of chosen) byClass[Number(new TextDecoder().decode((await ds.at(p)).members.cls))]!++;
        expect(byClass).toEqual(perClass.map((size) => Math.min(size, n)));
        expect(await selectPositions(ds, { mode: 'per-class', count: n }, seed)).toEqual(chosen);
        await ds.close();
      }),
      { numRuns: 15 },
    );
  });
});

describe('derive --select', () => {
  it('writes the chosen samples byte for byte, records the selection, and needs no pass', async () => {
    const src = await classDataset([30, 3, 12]);
    const out = path.join(tmpDir(), 'exemplars');
    const r = await derive({ dataset: src, out, passes: [], select: { mode: 'per-class', count: 5 }, seed: 'task-1' });
    expect(r.manifest.totals.samples).toBe(13);
    const source = await openDataset(src);
    expect(r.manifest.extra.selection).toEqual({ select: 'per-class:5', seed: 'task-1', from: { index: source.manifest.index.crc32c, samples: 45 }, samples: 13 });
    const chosen = await selectPositions(source, { mode: 'per-class', count: 5 }, 'task-1');
    const ds = await openDataset(out);
    let i = 0;
    for await (const e of ds.entries()) {
      const want = await source.at(chosen[i++] as number);
      const got = await ds.read(e);
      expect(got.key).toBe(want.key);
      expect(Buffer.from(got.members.txt as Uint8Array).equals(Buffer.from(want.members.txt as Uint8Array))).toBe(true);
    }
    expect(i).toBe(13);
    await ds.close();
    const random = await derive({ dataset: src, out: path.join(tmpDir(), 'r'), passes: [], select: { mode: 'fraction', fraction: 0.5 }, seed: 3 });
    expect(random.manifest.totals.samples).toBe(23); // round(22.5)
    await source.close();
  });

  it('per-class refuses a dataset without cls, naming the sample and what to do', async () => {
    const src = await classDataset([3], false);
    await expect(derive({ dataset: src, out: path.join(tmpDir(), 'x'), passes: [], select: { mode: 'per-class', count: 1 } })).rejects.toMatchObject({
      code: ErrorCodes.INVALID_ARG,
      message: '--select per-class needs a cls member in every sample, and c0/0000 has none; tag the dataset first (derive --pass tag=dirname)',
    });
  });
});
