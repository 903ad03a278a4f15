/** Every temporary directory a test makes through the helpers is removed when its file finishes. */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/source-tree.js';
import { pendingTmpDirs, tmpDir } from '../helpers/tmp.js';

describe('test temporary directories', () => {
  it('tmpDir and makeTempDir both register their directory for removal after the file', async () => {
    const a = tmpDir();
    const b = await makeTempDir('shardkit-walk-');
    expect(fs.existsSync(a) && fs.existsSync(b)).toBe(true);
    expect(pendingTmpDirs()).toEqual(expect.arrayContaining([a, b]));
  });
});
