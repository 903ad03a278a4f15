/** The walk side of a pack: which samples become tasks. */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { sourceTasks } from '../../src/pack/source-tasks.js';
import type { SourceBatchOptions } from '../../src/pack/source-batches.js';
import { makeTempDir, writeTree } from '../helpers/source-tree.js';

async function taskKeys(options: SourceBatchOptions): Promise<string[]> {
  const keys: string[] = [];
  for await (const task of sourceTasks(options, () => undefined)) keys.push(...task.keys.split('\0'));
  return keys;
}

describe('sourceTasks', () => {
  it('leaves out exactly the paths in excludePaths (pack output inside its source), nothing else of that name', async () => {
    const root = await makeTempDir();
    await writeTree(root, { 'a/1.txt': '1', 'a/out/x.txt': 'x', 'b/out': 'f', 'out/shard-000000.tar': 't', 'out/pack-report.json': '{}' });
    const base: SourceBatchOptions = { root, followSymlinks: false, includeHidden: false, skip: 0 };
    expect(await taskKeys(base)).toEqual(['a/1', 'a/out/x', 'b/out', 'out/pack-report', 'out/shard-000000']);
    expect(await taskKeys({ ...base, excludePaths: ['out'] })).toEqual(['a/1', 'a/out/x', 'b/out']);
  });

  it('on resume, skips the samples written already only where the source still has the last of them', async () => {
    const root = await makeTempDir();
    await writeTree(root, { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c', 'd.txt': 'd' });
    const base: SourceBatchOptions = { root, followSymlinks: false, includeHidden: false, skip: 2 };
    // the interrupted pack wrote a and b: the walk goes on with c
    expect(await taskKeys({ ...base, skipCheck: { key: 'b', at: 1 } })).toEqual(['c', 'd']);
    // a file removed or added before that point moves b: refused, not packed from the wrong place
    await expect(taskKeys({ ...base, skipCheck: { key: 'a', at: 1 } })).rejects.toMatchObject({ code: ErrorCodes.INPUT_CHANGED, message: expect.stringContaining('sample 2 is now "b"') });
    // fewer samples than were written
    await expect(taskKeys({ ...base, skip: 6 })).rejects.toMatchObject({ code: ErrorCodes.INPUT_CHANGED, message: expect.stringContaining('it has 4 samples') });
  });
});
