/**
 * Runs src/README.md's continual-learning example exactly as printed (its import lines aside: the names come from
 * the package's public entry, src/index.ts, and node:fs), in an empty directory: a 5-task class-incremental sequence
 * on synth data, each task appended to one dataset, an exemplar buffer updated after each task, and a training-loop
 * stub reading mixed batches, resumed mid-task.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as shardkit from '../../src/index.js';
import { ROOT } from '../helpers/cli.js';
import { fencedBlocks } from '../helpers/markdown.js';
import { tmpDir } from '../helpers/tmp.js';

const README = fs.readFileSync(path.join(ROOT, 'src/README.md'), 'utf8');
const [README_CONTINUAL_EXAMPLE = ''] = fencedBlocks(README, '## Continual learning: exemplars and rehearsal', 'js');

const IMPORT_LINES = "import { synthDataset, pack, append, tagDirnamePass, updateExemplarBuffer, openRehearsal } from 'shardkit';\nimport fs from 'node:fs';\n";

describe('src/README.md "Continual learning"', () => {
  it('runs as printed: bounded buffer, every batch at the ratio, resume mid-task gives the same batches', async () => {
    const dir = tmpDir();
    expect(README_CONTINUAL_EXAMPLE.startsWith(IMPORT_LINES)).toBe(true);
    const body = README_CONTINUAL_EXAMPLE.slice(IMPORT_LINES.length);
    const lines: string[] = [];
    const consoleStub = { log: (...args: unknown[]) => lines.push(args.join(' ')) };
    const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;
    const names = ['synthDataset', 'pack', 'append', 'tagDirnamePass', 'updateExemplarBuffer', 'openRehearsal'] as const;
    const run = new AsyncFunction(...names, 'fs', 'console', body);
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      await run(...names.map((n) => shardkit[n]), fs, consoleStub);
    } finally {
      process.chdir(cwd);
    }

    // 40 samples per class; tasks 1-4 have 80 samples in batches of 12 task samples + 4 exemplars: 7 steps
    for (let t = 1; t < 5; t++) {
      const batches = lines.filter((l) => l.startsWith(`task ${t} batch `));
      expect(batches).toEqual(Array(7).fill(`task ${t} batch 4 exemplars of 16`));
      expect(lines).toContain(`task ${t} resumed 5 of 5 batches the same`);
    }
    const buffers = lines.filter((l) => / buffer /.test(l)).map((l) => l.split(' '));
    expect(buffers.map((b) => Number(b[3]))).toEqual([40, 40, 40, 40, 40]);
    const perClass = buffers.map((b) => Object.values(JSON.parse(b[4] as string) as Record<string, number>));
    expect(perClass).toEqual([Array(2).fill(20), Array(4).fill(10), [7, 7, 7, 7, 6, 6], Array(8).fill(5), Array(10).fill(4)]);
  });
});
