/** realPathOf and isInside: how pack, merge and extract tell whether one directory lies in another. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isInside, realPathOf } from '../../src/pack/paths.js';
import { tmpDir } from '../helpers/tmp.js';

describe('isInside', () => {
  it('is strict, and takes .. only as a whole segment', () => {
    expect(isInside('/a/b', '/a')).toBe(true);
    expect(isInside('/a/b/c', '/a')).toBe(true);
    expect(isInside('/a', '/a')).toBe(false);
    expect(isInside('/a', '/a/b')).toBe(false);
    expect(isInside('/ab', '/a')).toBe(false);
    expect(isInside('/x/y', '/a')).toBe(false);
    expect(isInside('/a/..data', '/a')).toBe(true);
    expect(isInside('/a/..', '/a')).toBe(false);
  });
});

describe('realPathOf', () => {
  it('resolves a symlinked ancestor of a path that does not exist yet', () => {
    const real = fs.realpathSync(tmpDir());
    const link = path.join(tmpDir(), 'link');
    fs.symlinkSync(real, link);
    expect(realPathOf(path.join(link, 'not', 'yet'))).toBe(path.join(real, 'not', 'yet'));
  });
});
