/**
 * Issue 26, item 9 (family: one writer per output directory). Two extracts into one directory both reported
 * success while the tree mixed the files of two datasets.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { LOCK_FILE, WriteLock } from '../../src/pack/write-lock.js';
import { extractDataset } from '../../src/verify/extract.js';
import { errorOf } from '../helpers/error-of.js';
import { tmpDir } from '../helpers/tmp.js';

async function dataset(keys: string[], ext = 'txt'): Promise<string> {
  const dir = path.join(tmpDir(), 'ds');
  const w = new DatasetWriter({ dir, layout: 'packed' });
  for (const key of keys) w.add({ key, members: { [ext]: Buffer.from(key) } });
  await w.finish();
  return dir;
}

describe('extract takes its target directory alone', () => {
  it('two_extracts_into_one_directory: the second is refused with OUTPUT_EXISTS and writes nothing', async () => {
    const a = await dataset(['a/0', 'a/1']);
    const b = await dataset(['b/0', 'b/1']);
    const target = tmpDir();
    const first = WriteLock.acquire(target, 'extract'); // an extract of `a` in progress (this process: alive)
    const err = (await errorOf(extractDataset(b, target))) as { code: string; message: string };
    expect(err.code).toBe(ErrorCodes.OUTPUT_EXISTS);
    expect(err.message).toContain('being written by another shardkit extract');
    expect(fs.readdirSync(target)).toEqual([LOCK_FILE]);
    first.release();
    await extractDataset(a, target);
    expect(fs.readdirSync(target).sort()).toEqual(['a']);
    // and the lock is gone once it is done: the next one runs
    await extractDataset(b, target);
    expect(fs.readdirSync(target).sort()).toEqual(['a', 'b']);
  });

  it('extract_of_a_member_named_like_the_lock: refused before anything is written', async () => {
    const ds = await dataset(['.shardkit-lock', 'ok'], ''); // members without extension: files named as their key
    const target = path.join(tmpDir(), 'x');
    const err = (await errorOf(extractDataset(ds, target))) as { code: string };
    expect(err.code).toBe(ErrorCodes.UNSAFE_PATH);
    expect(fs.existsSync(target)).toBe(false);
  });
});
