/** src/pack/run-passes.ts: what the passes leave for the dataset, and conflicts between them. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ErrorCodes, isShardkitError } from '../../formats/errors.js';
import { pack } from '../../src/pack/pack.js';
import { collectPassOutputs } from '../../src/pack/run-passes.js';
import { parsePassSpec } from '../../src/passes/parse-pass-spec.js';
import { customPass, type Pass } from '../../src/passes/pass.js';
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
});

