/**
 * Issue 26, item 2 (family: a resume proves that everything already written still matches its source, or refuses).
 * A resume once compared only the key at the resume position: deleting a written sample and adding another let
 * it finish with a dataset that returned the deleted file and lacked the new one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { pack, type PackOptions } from '../../src/pack/pack.js';
import { customPass } from '../../src/passes/pass.js';
import { openDataset } from '../../src/read/dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const N = 120;
const name = (i: number): string => `a${String(i).padStart(2, '0')}`;

function tree(): string {
  const dir = tmpDir();
  for (let i = 0; i < N; i++) {
    const sub = path.join(dir, i < 60 ? 'a' : 'b');
    fs.mkdirSync(sub, { recursive: true });
    fs.writeFileSync(path.join(sub, `${name(i)}.bin`), Buffer.alloc(400, i));
    fs.writeFileSync(path.join(sub, `${name(i)}.txt`), `sample ${i}`);
  }
  return dir;
}

/** Two ways to interrupt a pack late: a pass that crashes (the pipeline), a key too long for the index (no passes). */
const WAYS: Record<string, { interrupt: (src: string) => Partial<PackOptions>; resume: (src: string) => Partial<PackOptions> }> = {
  pipeline: {
    interrupt: () => {
      let n = 0;
      return { passes: [customPass('crash', (s) => { if (++n === N - 5) throw new Error('pass bug'); return s; })] };
    },
    resume: () => ({ passes: [customPass('crash', (s) => s)] }),
  },
  batches: {
    interrupt: (src) => {
      // a key longer than 1 KiB index pages hold: TOO_LARGE stops the pack when it comes last
      const deep = path.join(src, 'z', 'k'.repeat(200), 'k'.repeat(200));
      fs.mkdirSync(deep, { recursive: true });
      fs.writeFileSync(path.join(deep, `${'k'.repeat(200)}.bin`), 'long');
      return {};
    },
    resume: (src) => {
      fs.rmSync(path.join(src, 'z'), { recursive: true });
      return {};
    },
  },
};

async function interrupted(way: string): Promise<{ src: string; out: string; resume: () => Promise<unknown> }> {
  const w = WAYS[way]!;
  const src = tree();
  const out = path.join(tmpDir(), 'ds');
  const base = { source: src, out, shardBytes: 8 << 10, pageSize: 1024, concurrency: 1, readThreads: 0 };
  await expect(pack({ ...base, ...w.interrupt(src) })).rejects.toThrow();
  expect(fs.existsSync(path.join(out, 'manifest.json'))).toBe(false);
  return { src, out, resume: () => pack({ ...base, ...w.resume(src), resume: true }) };
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  const err = (await p.then(() => undefined, (e: unknown) => e)) as { code: string; message: string } | undefined;
  expect(err).toBeDefined();
  return err!;
}

describe('--resume proves the written part of the source unchanged', () => {
  for (const way of Object.keys(WAYS)) {
    it(`resume_after_deleting_a01_and_adding_a01x (${way}): INPUT_CHANGED naming the samples`, async () => {
      const { src, resume } = await interrupted(way);
      fs.rmSync(path.join(src, 'a', 'a01.bin'));
      fs.rmSync(path.join(src, 'a', 'a01.txt'));
      fs.writeFileSync(path.join(src, 'a', 'a01x.bin'), 'new');
      const err = await refusal(resume());
      expect(err.code).toBe(ErrorCodes.INPUT_CHANGED);
      expect(err.message).toContain('a/a0');
      expect(err.message).toContain('--force');
    });

    it(`resume_after_rewriting_a_written_file_same_size (${way}): INPUT_CHANGED naming the file`, async () => {
      const { src, resume } = await interrupted(way);
      const file = path.join(src, 'a', 'a03.bin');
      const st = fs.statSync(file);
      fs.writeFileSync(file, Buffer.alloc(400, 0xee));
      fs.utimesSync(file, st.atime, st.mtime); // size and mtime as they were: only ctime tells
      const err = await refusal(resume());
      expect(err.code).toBe(ErrorCodes.INPUT_CHANGED);
      expect(err.message).toContain(file);
    });

    it(`resume_after_removing_a_member_of_a_written_sample (${way}): INPUT_CHANGED`, async () => {
      const { src, resume } = await interrupted(way);
      fs.rmSync(path.join(src, 'a', 'a05.txt'));
      expect((await refusal(resume())).code).toBe(ErrorCodes.INPUT_CHANGED);
    });

    it(`resume_of_an_unchanged_source (${way}): finishes, every sample as in the source`, async () => {
      const { out, resume } = await interrupted(way);
      await resume();
      const ds = await openDataset(out);
      expect(ds.size).toBe(N);
      for (const i of [0, 1, 59, 60, N - 1]) {
        const s = await ds.get(`${i < 60 ? 'a' : 'b'}/${name(i)}`);
        expect(Buffer.from(s.members.txt!).toString()).toBe(`sample ${i}`);
      }
      await ds.close();
    });
  }
});
