/**
 * Issue 26, item 4 (family: path resolution under a hostile local writer). A directory of the extract target
 * swapped for a symlink (renameat2 RENAME_EXCHANGE in the report) once sent files outside it. TargetDirs creates
 * files through the descriptor of the directory it checked, so the swap is never followed. The swap is made here
 * between two creates, deterministically.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { replaceFile } from '../../src/pack/replace-file.js';
import { TargetDirs } from '../../src/verify/target-dirs.js';
import { tmpDir } from '../helpers/tmp.js';

describe('TargetDirs', () => {
  it('extract_under_a_directory_swapped_for_a_symlink: files land in the directory checked, never outside', () => {
    const base = tmpDir();
    const root = path.join(base, 'target');
    const outside = path.join(base, 'outside');
    fs.mkdirSync(root);
    fs.mkdirSync(outside);
    const dirs = TargetDirs.open(root);
    // no /proc: extract falls back to checks by path (a documented limit); Linux always has it
    expect(dirs !== undefined || process.platform !== 'linux').toBe(true);
    if (dirs === undefined) return;
    try {
      const first = dirs.fileFor('a/b/0.txt');
      replaceFile(first.file, Buffer.from('zero'));
      expect(first.shown).toBe(path.join(root, 'a/b/0.txt'));
      // the attacker moves a/b away and puts a symlink to `outside` in its place
      fs.renameSync(path.join(root, 'a/b'), path.join(root, 'a/moved'));
      fs.symlinkSync(outside, path.join(root, 'a/b'));
      replaceFile(dirs.fileFor('a/b/1.txt').file, Buffer.from('one'));
      expect(fs.readdirSync(outside)).toEqual([]);
      expect(fs.readdirSync(path.join(root, 'a/moved')).sort()).toEqual(['0.txt', '1.txt']);
      // a fresh walk meets the symlink and refuses it
      expect(() => dirs.fileFor('a/c/2.txt')).not.toThrow();
      expect(() => dirs.fileFor('a/b/3.txt')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH, message: expect.stringContaining('is a symbolic link') }));
      expect(fs.readdirSync(outside)).toEqual([]);
    } finally {
      dirs.close();
    }
  });

  it('a file where a directory must be is UNSAFE_PATH naming it', () => {
    const root = tmpDir();
    fs.writeFileSync(path.join(root, 'a'), 'file');
    const dirs = TargetDirs.open(root);
    if (dirs === undefined) return;
    try {
      expect(() => dirs.fileFor('a/x.txt')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH, message: `${path.join(root, 'a')} exists and is not a directory` }));
    } finally {
      dirs.close();
    }
  });
});
