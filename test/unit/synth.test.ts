import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { isShardkitError } from '../../formats/errors.js';
import { splitKey } from '../../formats/sample.js';
import { MIXED_LARGE_EVERY, synthDataset, synthWnid } from '../../src/bench/synth.js';
import type { SynthOptions } from '../../src/bench/synth.js';
import { JPEG_MAX_BYTES, JPEG_MIN_BYTES, IMAGENET_DIMENSIONS } from '../../src/bench/synth-image.js';
import { LARGE_ARRAY_SHAPE } from '../../src/bench/synth-members.js';
import { tmpDir } from '../helpers/tmp.js';

/** Every file under `dir` as relative path -> sha256, plus sizes. */
function snapshot(dir: string): Map<string, { sha: string; size: number }> {
  const out = new Map<string, { sha: string; size: number }>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const bytes = readFileSync(p);
        out.set(relative(dir, p).split('\\').join('/'), { sha: createHash('sha256').update(bytes).digest('hex'), size: bytes.length });
      }
    }
  };
  walk(dir);
  return out;
}

const run = (options: Omit<SynthOptions, 'dir'>): Promise<{ dir: string; summary: Awaited<ReturnType<typeof synthDataset>> }> => {
  const dir = join(tmpDir(), 'synth');
  return synthDataset({ dir, ...options }).then((summary) => ({ dir, summary }));
};

describe('synthDataset', () => {
  it('writes the same bytes for the same seed, whatever the concurrency, and other bytes for another seed', async () => {
    const a = await run({ samples: 24, classes: 3, sizes: 'mixed', seed: 42, concurrency: 1 });
    const b = await run({ samples: 24, classes: 3, sizes: 'mixed', seed: 42, concurrency: 8 });
    const c = await run({ samples: 24, classes: 3, sizes: 'mixed', seed: 43 });
    const sa = snapshot(a.dir);
    expect(sa.size).toBe(a.summary.files);
    expect(snapshot(b.dir)).toEqual(sa);
    const sc = snapshot(c.dir);
    expect([...sc.keys()]).toEqual([...sa.keys()]); // same layout...
    const changed = [...sa].filter(([path, v]) => sc.get(path)!.sha !== v.sha && path.endsWith('.JPEG'));
    expect(changed.length).toBe(24); // ...different images
  });

  it('imagenet: ImageNet layout, real JPEGs at ImageNet sizes, sizes spread around ~90 KB', async () => {
    const samples = 40;
    const classes = 4;
    const { dir, summary } = await run({ samples, classes, seed: 7 });
    const files = snapshot(dir);
    expect(summary).toMatchObject({ samples, classes, files: samples, sizes: 'imagenet', seed: 7 });
    expect(summary.bytes).toBe([...files.values()].reduce((s, f) => s + f.size, 0));
    expect(readdirSync(join(dir, 'train')).sort()).toEqual(Array.from({ length: classes }, (_, k) => synthWnid(k)).sort());
    const perClass = new Map<string, number>();
    const sizes: number[] = [];
    const dims = new Set(IMAGENET_DIMENSIONS.map(([[w, h]]) => `${w}x${h}`));
    for (const [path, f] of files) {
      const m = /^train\/(n0\d{7})\/(n0\d{7})_(\d+)\.JPEG$/.exec(path);
      expect(m, path).not.toBeNull();
      expect(m![1]).toBe(m![2]);
      expect(splitKey(path).ext).toBe('JPEG');
      perClass.set(m![1]!, (perClass.get(m![1]!) ?? 0) + 1);
      sizes.push(f.size);
      const meta = await sharp(join(dir, path)).metadata();
      expect(meta.format).toBe('jpeg');
      expect(dims.has(`${meta.width}x${meta.height}`), `${meta.width}x${meta.height}`).toBe(true);
    }
    expect([...perClass.values()]).toEqual(Array(classes).fill(samples / classes));
    sizes.sort((x, y) => x - y);
    // Targets lie in [10, 150] KiB; encodings land within ~25 % of them (some extra room at both ends).
    expect(sizes[0]).toBeGreaterThanOrEqual(JPEG_MIN_BYTES * 0.7);
    expect(sizes[sizes.length - 1]).toBeLessThanOrEqual(JPEG_MAX_BYTES * 1.3);
    const medianSize = sizes[sizes.length >> 1]!;
    expect(medianSize).toBeGreaterThan(60 * 1024);
    expect(medianSize).toBeLessThan(130 * 1024);
    expect(sizes[sizes.length - 1]! / sizes[0]!).toBeGreaterThan(1.5); // a spread, not one size
  });

  it('tiny: two sub-100-byte members per sample, hundreds per directory', async () => {
    const samples = 600;
    const { dir, summary } = await run({ samples, classes: 2, sizes: 'tiny', seed: 1 });
    const files = snapshot(dir);
    expect(summary.files).toBe(2 * samples);
    expect(files.size).toBe(2 * samples);
    for (const [path, f] of files) {
      expect(f.size, path).toBeLessThan(100);
      expect(f.size).toBeGreaterThan(0);
    }
    for (const wnid of [synthWnid(0), synthWnid(1)]) expect(readdirSync(join(dir, 'train', wnid))).toHaveLength(samples);
    // The label is the class index; the token file is [CLS] ids [SEP].
    const cls = readFileSync(join(dir, 'train', synthWnid(1), `${synthWnid(1)}_0.cls`), 'utf8');
    expect(cls).toBe('1\n');
    const txt = readFileSync(join(dir, 'train', synthWnid(0), `${synthWnid(0)}_3.txt`), 'utf8');
    expect(txt).toMatch(/^101( \d+)* 102\n$/);
  });

  it('mixed: JPEG + .cls + .json per sample, and a ~1 MiB .npy every 50th sample', async () => {
    const samples = 2 * MIXED_LARGE_EVERY;
    const classes = 5;
    const { dir, summary } = await run({ samples, classes, sizes: 'mixed', seed: 3 });
    const files = snapshot(dir);
    const byExt = new Map<string, number[]>();
    for (const [path, f] of files) {
      const { ext } = splitKey(path);
      byExt.set(ext, [...(byExt.get(ext) ?? []), f.size]);
    }
    expect(byExt.get('JPEG')).toHaveLength(samples);
    expect(byExt.get('cls')).toHaveLength(samples);
    expect(byExt.get('json')).toHaveLength(samples);
    expect(byExt.get('npy')).toHaveLength(samples / MIXED_LARGE_EVERY);
    expect(summary.files).toBe(files.size);
    for (const s of [...byExt.get('cls')!, ...byExt.get('json')!]) expect(s).toBeLessThan(100);
    const [rows, cols] = LARGE_ARRAY_SHAPE;
    for (const s of byExt.get('npy')!) expect(s).toBeGreaterThanOrEqual(rows * cols * 2);
    // Sample 49 is class 49 % 5 = 4, index 9; its .npy is a readable float16 array and its .json names it.
    const key = join(dir, 'train', synthWnid(4), `${synthWnid(4)}_9`);
    const npy = readFileSync(`${key}.npy`);
    expect(npy.subarray(0, 6).toString('latin1')).toBe('\x93NUMPY');
    const headerLength = npy.readUInt16LE(8);
    expect((10 + headerLength) % 64).toBe(0);
    expect(npy.subarray(10, 10 + headerLength).toString('latin1')).toContain(`'shape': (${rows}, ${cols})`);
    const data = npy.subarray(10 + headerLength);
    expect(data.length).toBe(rows * cols * 2);
    for (let i = 0; i < 64; i += 2) {
      const exponent = (data.readUInt16LE(i) >> 10) & 0x1f;
      expect(exponent === 14 || exponent === 15).toBe(true); // finite, |x| in [0.5, 2)
    }
    expect(JSON.parse(readFileSync(`${key}.json`, 'utf8'))).toMatchObject({ id: 49, label: 4, wnid: synthWnid(4) });
  });

  it('reports progress once per sample, ending at the totals', async () => {
    const seen: number[] = [];
    let last = { samplesDone: 0, samples: 0, files: 0, bytes: 0 };
    const { summary } = await run({ samples: 50, sizes: 'tiny', onProgress: (p) => { seen.push(p.samplesDone); last = p; } });
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(last).toEqual({ samplesDone: 50, samples: 50, files: summary.files, bytes: summary.bytes });
  });

  it('validates options with INVALID_ARG and refuses a non-empty directory', async () => {
    const bad = async (options: Partial<SynthOptions>, pattern: RegExp): Promise<void> => {
      const err = await synthDataset({ dir: join(tmpDir(), 'x'), samples: 10, ...options } as SynthOptions).catch((e: unknown) => e);
      expect(isShardkitError(err, 'SHARDKIT_ERR_INVALID_ARG'), String(err)).toBe(true);
      expect((err as Error).message).toMatch(pattern);
    };
    await bad({ samples: 0 }, /Expected integer between 1 and 100000000 for samples but received 0 of type number/);
    await bad({ samples: 2.5 }, /for samples but received 2.5/);
    await bad({ classes: 11 }, /Expected integer between 1 and 10 for classes/);
    await bad({ sizes: 'huge' as never }, /Expected one of imagenet, tiny, mixed for sizes but received 'huge'/);
    await bad({ seed: -1 }, /for seed/);
    await bad({ concurrency: 0 }, /for concurrency/);
    await bad({ dir: '' }, /for dir/);
    const dir = tmpDir();
    writeFileSync(join(dir, 'keep.txt'), 'x');
    const err = await synthDataset({ dir, samples: 20 }).catch((e: unknown) => e);
    expect(isShardkitError(err, 'SHARDKIT_ERR_OUTPUT_EXISTS')).toBe(true);
    expect(statSync(join(dir, 'keep.txt')).size).toBe(1);
  });
});
