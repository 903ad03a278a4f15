import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import { openMixture, type Mixture } from '../../src/read/mixture.js';
import type { MixtureSample } from '../../src/read/mixture-loader.js';
import { nginxSkipReason, startNginx, type NginxServer } from '../helpers/nginx.js';
import { sameBytes, writeLoaderDataset } from '../helpers/loader-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

let root = '';
let big = '';
let small = '';
beforeAll(async () => {
  root = tmpDir();
  big = await writeLoaderDataset(path.join(root, 'big'), 200);
  small = await writeLoaderDataset(path.join(root, 'small'), 10);
});

async function all(mix: Mixture, options: Parameters<Mixture['loader']>[0] = {}): Promise<MixtureSample[]> {
  const out: MixtureSample[] = [];
  for await (const batch of mix.loader({ batchSize: 16, ...options })) out.push(...(batch as MixtureSample[]));
  return out;
}

describe('openMixture', () => {
  it('yields each source its share, with the bytes of the sample at its position and the source it came from', async () => {
    const mix = await openMixture([
      { dataset: big, weight: 1 },
      { dataset: small, weight: 1 },
    ]);
    // the epoch is the sources' total (210) split 1:1: big down-sampled to 105 distinct samples, small up-sampled 10x + 5
    expect(mix.counts).toEqual([105, 105]);
    const loader = mix.loader({ batchSize: 16, seed: 3 });
    const samples: MixtureSample[] = [];
    for await (const batch of loader) samples.push(...batch);
    expect(samples.length).toBe(210);
    const [bigDs, smallDs] = mix.datasets as [Dataset, Dataset];
    for (const [i, s] of samples.entries()) {
      const { source, position } = loader.sampleAt(i);
      expect(s.source).toBe(source);
      const expected = await (source === 0 ? bigDs : smallDs).at(position);
      expect(s.key).toBe(expected.key);
      expect(sameBytes(s.members.bin, expected.members.bin)).toBe(true);
    }
    const fromBig = samples.filter((s) => s.source === 0).map((s) => s.key);
    expect(new Set(fromBig).size).toBe(105); // without replacement
    const perSmallKey = new Map<string, number>();
    for (const s of samples.filter((x) => x.source === 1)) perSmallKey.set(s.key, (perSmallKey.get(s.key) ?? 0) + 1);
    expect([...perSmallKey.values()].sort()).toEqual([10, 10, 10, 10, 10, 11, 11, 11, 11, 11]);
    expect(loader.stats().perSource).toEqual([105, 105]);
    await mix.close();
  });

  it('has one order per (seed, epoch), another for another epoch', async () => {
    const mix = await openMixture([
      { dataset: big, samples: 50 },
      { dataset: small, weight: 2 },
    ]);
    const keys = async (seed: number, epoch: number): Promise<string[]> => (await all(mix, { seed, epoch })).map((s) => `${s.source}:${s.key}`);
    const a = await keys(1, 0);
    expect(await keys(1, 0)).toEqual(a);
    expect(await keys(1, 1)).not.toEqual(a);
    expect(await keys(2, 0)).not.toEqual(a);
    expect(a.length).toBe(60);
    await mix.close();
  });

  it('refuses zero, negative and missing weights before opening anything', async () => {
    const missing = path.join(root, 'nope');
    for (const weight of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(openMixture([{ dataset: missing, weight }])).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/^Expected a finite number above 0 for sources\[0\]\.weight but received .*; leave a source out rather than weigh it 0$/) });
    }
    await expect(openMixture([{ dataset: missing } as never])).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: 'source 0 needs exactly one of weight and samples' });
    await expect(openMixture([])).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
  });

  it('names the source that fails to open', async () => {
    await expect(
      openMixture([
        { dataset: big, weight: 1 },
        { dataset: path.join(root, 'nope'), weight: 1 },
      ]),
    ).rejects.toMatchObject({ code: ErrorCodes.NOT_A_DATASET, message: expect.stringMatching(/^mixture source 1: /) });
  });

  it('refuses a state saved with other weights, and options that do not apply', async () => {
    const a = await openMixture([
      { dataset: big, weight: 1 },
      { dataset: small, weight: 1 },
    ]);
    const b = await openMixture([
      { dataset: big, weight: 2 },
      { dataset: small, weight: 1 },
    ]);
    const loader = a.loader({ batchSize: 8 });
    await loader.next();
    expect(() => b.loader({ batchSize: 8, resumeFrom: loader.state() })).toThrow(expect.objectContaining({ code: ErrorCodes.BAD_STATE, message: expect.stringMatching(/saved on other sources or weights/) }));
    expect(() => a.loader({ shuffle: 'full' } as never)).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/^shuffle does not apply to a mixture/) }));
    await a.close();
    await b.close();
  });

  it('schedules as the dataset loader does (one read-ahead queue): none ahead for a tight consumer, ahead while it awaits, within prefetch', async () => {
    const mix = await openMixture([
      { dataset: big, weight: 1 },
      { dataset: small, weight: 1 },
    ]);
    const options = { batchSize: 8, seed: 5 };
    const tight = mix.loader(options);
    let tightAhead = 0;
    for await (const _batch of tight) {
      const s = tight.stats();
      tightAhead = Math.max(tightAhead, s.prefetchedBytes);
    }
    expect(tightAhead).toBe(0); // local batches are read synchronously, each by the next() that asks for it
    const idle = mix.loader({ ...options, prefetch: 1 << 20 });
    let idleAhead = 0;
    for await (const _batch of idle) {
      await new Promise((resolve) => setTimeout(resolve, 1)); // the event loop turns: read-ahead runs
      idleAhead = Math.max(idleAhead, idle.stats().prefetchedBytes);
    }
    expect(idleAhead).toBeGreaterThan(0);
    expect(idle.stats().peakPrefetchedBytes).toBeLessThanOrEqual((1 << 20) + 8 * 4096); // one batch beyond the bound at most
    expect(idle.stats().samples).toBe(210);
    await mix.close();
  });

  it('takes a Dataset already open and leaves it open', async () => {
    const ds = await openDataset(small);
    const mix = await openMixture([{ dataset: ds, samples: 25 }]);
    expect((await all(mix)).length).toBe(25);
    await mix.close();
    expect((await ds.at(0)).key).toBe('s/000000');
    await ds.close();
  });
});

describe.skipIf(nginxSkipReason !== undefined)('openMixture over http (real nginx on 127.0.0.1)', () => {
  let server: NginxServer | undefined;
  beforeAll(async () => {
    server = await startNginx(root);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('mixes a remote and a local dataset with the same samples as two local ones', async () => {
    const remote = await openMixture([
      { dataset: `${(server as NginxServer).url}/big`, weight: 3 },
      { dataset: small, weight: 1 },
    ]);
    const local = await openMixture([
      { dataset: big, weight: 3 },
      { dataset: small, weight: 1 },
    ]);
    const key = (s: MixtureSample): string => `${s.source}:${s.key}:${Buffer.from(s.members.bin as Uint8Array).toString('base64')}`;
    expect((await all(remote, { seed: 9 })).map(key)).toEqual((await all(local, { seed: 9 })).map(key));
    await remote.close();
    await local.close();
  });
});
