/**
 * Runs the README's "Continual learning" example exactly as printed (its import lines aside: the names come from
 * the package's public entry, src/index.ts, and node:fs), in an empty directory: a 5-task class-incremental sequence
 * on synth data, each task appended to one dataset, an exemplar buffer updated after each task, and a training-loop
 * stub reading mixed batches, resumed mid-task.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as shardkit from '../../src/index.js';
import { tmpDir } from '../helpers/tmp.js';

/** The README snippet, byte for byte. Keep the two in sync. */
export const README_CONTINUAL_EXAMPLE = `import { synthDataset, pack, append, tagDirnamePass, updateExemplarBuffer, openRehearsal } from 'shardkit';
import fs from 'node:fs';

// five tasks of two new classes each, from synthetic ImageNet-style folders
await synthDataset({ dir: 'raw', samples: 400, classes: 10, sizes: 'tiny', seed: 1 });
const wnids = fs.readdirSync('raw/train').sort();
for (let t = 0; t < 5; t++) {
  for (const wnid of wnids.slice(2 * t, 2 * t + 2)) {
    fs.mkdirSync(\`task\${t}/train\`, { recursive: true });
    fs.renameSync(\`raw/train/\${wnid}\`, \`task\${t}/train/\${wnid}\`);
  }
}

let buffer; // the exemplar buffer after the previous task
for (let t = 0; t < 5; t++) {
  // task t joins one growing dataset; tag=dirname numbers new classes after the old ones
  if (t === 0) await pack({ source: 'task0', out: 'cl.shards', passes: [tagDirnamePass()] });
  else await append({ dataset: 'cl.shards', source: \`task\${t}\` });

  if (buffer !== undefined) {
    // train on task t with exemplars of earlier tasks: 4 of every 16 samples
    const r = await openRehearsal({ task: { dataset: 'cl.shards', task: t }, exemplars: { dataset: buffer }, ratio: 0.25 });
    const options = { batchSize: 16, seed: 7, epoch: 0 };
    const loader = r.loader(options);
    let checkpoint;
    const after = [];
    for await (const batch of loader) {
      const exemplars = batch.filter((s) => s.source === 1).length; // the training step goes here
      console.log('task', t, 'batch', exemplars, 'exemplars of', batch.length);
      if (loader.stats().batches === 2) checkpoint = JSON.stringify(loader.state()); // save it with the model
      else if (checkpoint !== undefined) after.push(batch.map((s) => s.key).join());
    }
    // resumed mid-task (another process, say): the same batches as after the checkpoint
    let same = 0;
    for await (const batch of r.loader({ ...options, resumeFrom: JSON.parse(checkpoint) })) {
      if (batch.map((s) => s.key).join() === after[same]) same++;
    }
    console.log('task', t, 'resumed', same, 'of', after.length, 'batches the same');
    await r.close();
  }

  // keep at most 40 exemplars, the same number of each class seen so far (iCaRL's rule)
  const next = \`buffer-\${t}\`;
  const b = await updateExemplarBuffer({ dataset: 'cl.shards', task: t, previous: buffer, out: next, size: 40, policy: 'class-balanced', seed: 7 });
  console.log('task', t, 'buffer', b.samples, JSON.stringify(b.manifest.extra.exemplars.perClass));
  buffer = next;
}
`;

const IMPORT_LINES = "import { synthDataset, pack, append, tagDirnamePass, updateExemplarBuffer, openRehearsal } from 'shardkit';\nimport fs from 'node:fs';\n";

describe('README "Continual learning"', () => {
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
