/**
 * Progress of a pack: the totals behind the ETA (counted without a stat per file, and only what a resume has left),
 * and the ETA text of the terminal bar.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatEta } from '../../cli/progress.js';
import { pack, type PackProgress } from '../../src/pack/pack.js';
import { customPass } from '../../src/passes/pass.js';
import { tagDirnamePass } from '../../src/passes/tag-dirname.js';
import { tmpDir } from '../helpers/tmp.js';

function tree(n: number): string {
  const dir = tmpDir();
  for (let i = 0; i < n; i++) {
    const sub = path.join(dir, `c${i % 3}`);
    fs.mkdirSync(sub, { recursive: true });
    fs.writeFileSync(path.join(sub, `s${String(i).padStart(4, '0')}.bin`), Buffer.alloc(300 + i, i & 255));
    if (i % 2 === 0) fs.writeFileSync(path.join(sub, `s${String(i).padStart(4, '0')}.txt`), String(i));
  }
  return dir;
}

describe('pack progress', () => {
  it('counts the samples for the ETA (passes with prepare() count them on their walk), only what a resume has left', async () => {
    const src = tree(600);
    const out = path.join(tmpDir(), 'ds');
    // the first pack stops partway (a bug in a pass, not bad input, ends any pack), leaving finished shards
    let n = 0;
    const crash = customPass('crash', (sample) => {
      if (++n === 450) throw new Error('pass bug');
      return sample;
    });
    await expect(pack({ source: src, out, shardBytes: 32 << 10, passes: [tagDirnamePass(), crash], concurrency: 1, readThreads: 0 })).rejects.toThrow('pass bug');
    const seen: PackProgress[] = [];
    const passes = [tagDirnamePass(), customPass('crash', (sample) => sample)];
    const resumed = await pack({ source: src, out, shardBytes: 32 << 10, passes, concurrency: 1, readThreads: 0, resume: true, onProgress: (p) => seen.push(p) });
    expect(resumed.resumedSamples).toBeGreaterThan(0);
    expect(resumed.manifest.totals.samples).toBe(600);
    // every report of the resumed run knows the total, and it is what this run had left
    expect(seen.length).toBeGreaterThan(0);
    for (const p of seen) expect(p.totalSamples).toBe(600 - resumed.resumedSamples);
    expect(seen.at(-1)?.samples).toBe(600 - resumed.resumedSamples);
  });

  it('counts the samples beside the pack (prescan): the pack starts at once, the total arrives while it runs', async () => {
    const src = tree(300);
    const seen: PackProgress[] = [];
    // a slow pass (2 ms a sample) keeps the pack going well past the count's walk
    const slow = customPass('slow', async (sample) => {
      await new Promise((resolve) => setTimeout(resolve, 2));
      return sample;
    });
    const r = await pack({ source: src, out: path.join(tmpDir(), 'ds'), prescan: true, passes: [slow], concurrency: 1, readThreads: 0, onProgress: (p) => seen.push(p) });
    expect(r.manifest.totals.samples).toBe(300);
    expect(seen.at(-1)).toMatchObject({ samples: 300, totalSamples: 300 });
    for (const p of seen) if (p.totalSamples !== undefined) expect(p.totalSamples).toBe(300);
  });

  it('formats what is left as seconds, minutes or hours', () => {
    expect(formatEta(0)).toBe('0s');
    expect(formatEta(0.2)).toBe('1s');
    expect(formatEta(59.5)).toBe('1m00s');
    expect(formatEta(61)).toBe('1m01s');
    expect(formatEta(3599)).toBe('59m59s');
    expect(formatEta(3600 * 2 + 60 * 3 + 5)).toBe('2h03m');
  });
});
