import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { append } from '../../src/pack/append.js';
import { updateExemplarBuffer } from '../../src/pack/exemplar-buffer.js';
import { pack } from '../../src/pack/pack.js';
import { tagDirnamePass } from '../../src/passes/tag-dirname.js';
import { openDataset } from '../../src/read/dataset.js';
import { taskShards } from '../../src/read/dataset-subset.js';
import { openRehearsal } from '../../src/read/rehearsal.js';
import { writeTree } from '../helpers/source-tree.js';
import { tmpDir } from '../helpers/tmp.js';

/** A dataset grown over `tasks` tasks, task t bringing `perTask` samples in each of classes `k<t>a` and `k<t>b`. */
async function grown(tasks: number, perTask: number): Promise<string> {
  const out = path.join(tmpDir(), 'cl.shards');
  for (let t = 0; t < tasks; t++) {
    const files: Record<string, string> = {};
    for (const c of ['a', 'b']) for (let i = 0; i < perTask; i++) files[`k${t}${c}/${String(i).padStart(3, '0')}.txt`] = `${t}${c}${i}`;
    const src = tmpDir();
    await writeTree(src, files);
    if (t === 0) await pack({ source: src, out, passes: [tagDirnamePass()], readThreads: 0 });
    else await append({ dataset: out, source: src, readThreads: 0 });
  }
  return out;
}

async function keysOf(dir: string): Promise<string[]> {
  const ds = await openDataset(dir);
  const keys: string[] = [];
  for await (const k of ds.keys()) keys.push(k);
  await ds.close();
  return keys;
}

describe('updateExemplarBuffer', () => {
  it('random replacement keeps min(size, seen) samples, a reservoir over every task, deterministically', async () => {
    const ds = await grown(3, 15);
    let previous: string | undefined;
    const sizes: number[] = [];
    for (let task = 0; task < 3; task++) {
      const out = path.join(tmpDir(), `b${task}`);
      const r = await updateExemplarBuffer({ dataset: ds, task, ...(previous === undefined ? {} : { previous }), out, size: 40, policy: 'random', seed: 5 });
      sizes.push(r.samples);
      expect(r.manifest.extra.exemplars).toMatchObject({ policy: 'random', size: 40, task, seen: 30 * (task + 1) });
      // the same inputs give the same buffer, byte for byte
      const again = path.join(tmpDir(), 'again');
      await updateExemplarBuffer({ dataset: ds, task, ...(previous === undefined ? {} : { previous }), out: again, size: 40, policy: 'random', seed: 5 });
      for (const f of fs.readdirSync(out).filter((n) => n !== 'pack-report.json')) expect(fs.readFileSync(path.join(again, f)).equals(fs.readFileSync(path.join(out, f))), f).toBe(true);
      previous = out;
    }
    expect(sizes).toEqual([30, 40, 40]);
    const keys = await keysOf(previous as string);
    expect(new Set(keys).size).toBe(40);
    // by task 2, samples of every task are in it (a reservoir keeps a uniform sample of all 90)
    expect(new Set(keys.map((k) => k[1])).size).toBe(3);
  });

  it('class-balanced gives every class seen floor(size / K) places, and keeps the class list and cls of the dataset', async () => {
    const ds = await grown(2, 12);
    const b0 = path.join(tmpDir(), 'b0');
    const r0 = await updateExemplarBuffer({ dataset: ds, task: 0, out: b0, size: 10, policy: 'class-balanced', seed: 1 });
    expect(r0.manifest.extra.exemplars).toMatchObject({ perClass: { 0: 5, 1: 5 } });
    const b1 = path.join(tmpDir(), 'b1');
    const r1 = await updateExemplarBuffer({ dataset: ds, task: 1, previous: b0, out: b1, size: 10, policy: 'class-balanced', seed: 1 });
    expect(r1.manifest.extra.exemplars).toMatchObject({ perClass: { 0: 3, 1: 3, 2: 2, 3: 2 }, seen: 48 });
    expect(r1.fromTask).toBe(4);
    // old classes only lose exemplars: what stays of class 0 was in the previous buffer
    const before = new Set(await keysOf(b0));
    for (const k of (await keysOf(b1)).filter((k) => k.startsWith('k0'))) expect(before.has(k)).toBe(true);
    const buffer = await openDataset(b1);
    expect(buffer.manifest.extra.classes).toEqual(['k0a', 'k0b', 'k1a', 'k1b']);
    expect(new TextDecoder().decode((await buffer.get((await keysOf(b1)).find((k) => k.startsWith('k1b')) as string)).members.cls)).toBe('3');
    await buffer.close();
  });

  it('refuses a previous buffer of another policy or size, and bad sizes', async () => {
    const ds = await grown(2, 3);
    const b0 = path.join(tmpDir(), 'b0');
    await updateExemplarBuffer({ dataset: ds, task: 0, out: b0, size: 4, policy: 'random' });
    await expect(updateExemplarBuffer({ dataset: ds, task: 1, previous: b0, out: path.join(tmpDir(), 'x'), size: 4, policy: 'class-balanced' })).rejects.toMatchObject({
      code: ErrorCodes.INVALID_ARG,
      message: expect.stringMatching(/is a random buffer of 4, not class-balanced of 4; keep one policy and size over the tasks$/),
    });
    await expect(updateExemplarBuffer({ dataset: ds, task: 1, previous: ds, out: path.join(tmpDir(), 'x'), size: 4, policy: 'random' })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/is not an exemplar buffer/) });
    await expect(updateExemplarBuffer({ dataset: ds, task: 0, out: path.join(tmpDir(), 'x'), size: 0, policy: 'random' })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
  });
});

describe('openRehearsal', () => {
  it('reads only the samples of the task it names, and refuses a ratio outside [0, 1) or a task the dataset lacks', async () => {
    const ds = await grown(3, 4);
    const opened = await openDataset(ds);
    const m = opened.manifest;
    await opened.close();
    expect(taskShards(m, 0)).toEqual([0, 1]);
    expect(taskShards(m, 2)).toEqual(m.appends?.[1]?.shards);
    const b = path.join(tmpDir(), 'b');
    await updateExemplarBuffer({ dataset: ds, task: 0, out: b, size: 4, policy: 'random' });
    const r = await openRehearsal({ task: { dataset: ds, task: 2 }, exemplars: { dataset: b }, ratio: 0.5 });
    expect(r.taskSize).toBe(8);
    const keys = new Set<string>();
    for await (const batch of r.loader({ batchSize: 4, seed: 2 })) for (const s of batch) if (s.source === 0) keys.add(s.key);
    expect([...keys].every((k) => k.startsWith('k2'))).toBe(true);
    expect(keys.size).toBe(8);
    expect(() => r.loader({ batchSize: 1 })).toThrow(expect.objectContaining({ code: ErrorCodes.INVALID_ARG, message: 'a batch of 1 at rehearsal ratio 0.5 holds no task sample; use a larger batchSize' }));
    await r.close();
    for (const ratio of [1, -0.1, Number.NaN, 2]) {
      await expect(openRehearsal({ task: { dataset: ds }, exemplars: { dataset: b }, ratio })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/^Expected a number in \[0, 1\) for rehearsal\.ratio/) });
    }
    await expect(openRehearsal({ task: { dataset: ds, task: 3 }, exemplars: { dataset: b }, ratio: 0.2 })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: 'Expected a task between 0 and 2 (the pack, then one per append) but received 3' });
  });
});
