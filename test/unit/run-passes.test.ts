/** src/pack/run-passes.ts: what the passes leave for the dataset, and conflicts between them. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { pack } from '../../src/pack/pack.js';
import { collectPassOutputs } from '../../src/pack/run-passes.js';
import { parsePassSpec } from '../../src/passes/parse-pass-spec.js';
import { customPass, type Pass } from '../../src/passes/pass.js';
import { tagDirnamePass } from '../../src/passes/tag-dirname.js';
import { IMAGE_FIXTURES } from '../helpers/fixture-samples.js';
import { tmpDir } from '../helpers/tmp.js';

const spec = (text: string): Pass => parsePassSpec(text, { cwd: IMAGE_FIXTURES });

describe('pass outputs', () => {
  it('two tag passes writing classes.txt are refused before packing starts, each named by place and source', async () => {
    const passes = [spec('resize=8x8'), spec('tag=dirname'), spec('tag=labels.csv')];
    const run = vi.spyOn(passes[0] as Pass, 'run');
    const out = path.join(tmpDir(), 'out');
    const err = await pack({ source: IMAGE_FIXTURES, out, passes }).catch((e: unknown) => e);
    expect(isShardkitError(err, ErrorCodes.INVALID_ARG) && err.message).toBe('pass 2 (tag=dirname) and pass 3 (tag=labels.csv) both write the file classes.txt; keep one of them');
    expect(run).not.toHaveBeenCalled();
    expect(fs.existsSync(out)).toBe(false);
  });

  it('undeclared outputs that collide are still refused when collected, naming both passes', () => {
    const notes = (name: string): Pass => ({ ...customPass(name, (s) => s), outputs: () => ({ files: { 'notes.txt': new Uint8Array(1) } }) });
    expect(() => collectPassOutputs([notes('a'), notes('b')])).toThrow('pass 1 (a) and pass 2 (b) both write the file notes.txt; keep one of them');
  });

  it("a pass cannot write the manifest field 'adopted' (reindex would read the dataset as foreign tars), declared or not", async () => {
    const adopted = { rules: 1, inputs: [] };
    const sneaky: Pass = { ...customPass('sneaky', (s) => s), outputs: () => ({ manifest: { adopted } }) };
    expect(() => collectPassOutputs([sneaky])).toThrow("pass 1 (sneaky) writes the manifest field adopted, which shardkit keeps for datasets made by `shardkit index`; name it otherwise");
    const declared: Pass = { ...sneaky, declares: { manifest: ['adopted'] } };
    const out = path.join(tmpDir(), 'out');
    const err = await pack({ source: IMAGE_FIXTURES, out, passes: [declared] }).catch((e: unknown) => e);
    expect(isShardkitError(err, ErrorCodes.INVALID_ARG)).toBe(true);
    expect(fs.existsSync(out)).toBe(false);
  });
});


describe('resume after prepare()', () => {
  it('refuses (INPUT_CHANGED) a resume whose input gives tag=dirname another class list; the same list resumes', async () => {
    const interrupted = async (): Promise<{ src: string; out: string; passes: () => Pass[] }> => {
      const src = path.join(tmpDir(), 'src');
      for (let i = 0; i < 40; i++) {
        const dir = path.join(src, 'a', i % 2 ? 'cat' : 'dog');
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, `${String(i).padStart(3, '0')}.txt`), 'x'.repeat(100));
      }
      let stop = true;
      const passes = (): Pass[] => [
        tagDirnamePass(),
        customPass('stop', (s) => {
          if (stop && s.key === 'a/dog/030') throw new Error('interrupted');
          return s;
        }),
      ];
      const out = path.join(tmpDir(), 'out');
      await expect(pack({ source: src, out, shardBytes: 4096, passes: passes() })).rejects.toThrow(/interrupted/);
      stop = false;
      return { src, out, passes };
    };
    const changed = await interrupted();
    // a class whose name sorts first, and whose keys sort after every sample written: cat and dog would move up one
    fs.mkdirSync(path.join(changed.src, 'b', 'ant'), { recursive: true });
    fs.writeFileSync(path.join(changed.src, 'b', 'ant', '000.txt'), 'ant');
    const err = await pack({ source: changed.src, out: changed.out, shardBytes: 4096, passes: changed.passes(), resume: true }).catch((e: unknown) => e);
    expect(isShardkitError(err, ErrorCodes.INPUT_CHANGED) && err.message).toMatch(/what the passes prepared from the input \(such as tag=dirname's class list\) changed/);

    const same = await interrupted();
    const r = await pack({ source: same.src, out: same.out, shardBytes: 4096, passes: same.passes(), resume: true });
    expect(r.resumedSamples).toBeGreaterThan(0);
    expect(r.manifest.extra.classes).toEqual(['cat', 'dog']);
  });
});
