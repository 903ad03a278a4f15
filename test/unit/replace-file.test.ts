/** replaceFile writes aside and renames: the final name never holds a cut-short file, and no temporary is left. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { TEMP_PREFIX, replaceFile } from '../../src/pack/replace-file.js';
import { tmpDir } from '../helpers/tmp.js';

const enc = new TextEncoder();

describe('replaceFile', () => {
  it('writes a new file and leaves nothing else in the directory', () => {
    const dir = tmpDir();
    replaceFile(path.join(dir, 'a.txt'), enc.encode('hello'));
    expect(fs.readdirSync(dir)).toEqual(['a.txt']);
    expect(fs.readFileSync(path.join(dir, 'a.txt'), 'utf8')).toBe('hello');
  });

  it('replaces a hard link or a symbolic link instead of writing through it', () => {
    const dir = tmpDir();
    const elsewhere = path.join(tmpDir(), 'keep.txt');
    fs.writeFileSync(elsewhere, 'keep');
    fs.linkSync(elsewhere, path.join(dir, 'hard.txt'));
    fs.symlinkSync(elsewhere, path.join(dir, 'soft.txt'));
    replaceFile(path.join(dir, 'hard.txt'), enc.encode('new'));
    replaceFile(path.join(dir, 'soft.txt'), enc.encode('new'));
    expect(fs.readFileSync(elsewhere, 'utf8')).toBe('keep');
    expect(fs.lstatSync(path.join(dir, 'soft.txt')).isFile()).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'hard.txt'), 'utf8')).toBe('new');
  });

  it('a failure after the write (rename onto a directory) removes the temporary and reports IO naming the file', () => {
    const dir = tmpDir();
    fs.mkdirSync(path.join(dir, 'taken'));
    fs.writeFileSync(path.join(dir, 'taken', 'x'), 'x');
    expect(() => replaceFile(path.join(dir, 'taken'), enc.encode('bytes'))).toThrow(
      expect.objectContaining({ code: ErrorCodes.IO, file: path.join(dir, 'taken') }),
    );
    expect(fs.readdirSync(dir)).toEqual(['taken']);
  });

  it('a missing directory is IO naming the file; keepMode sets exact permission bits', () => {
    const dir = tmpDir();
    const missing = path.join(dir, 'no', 'a.txt');
    expect(() => replaceFile(missing, enc.encode('x'))).toThrow(expect.objectContaining({ code: ErrorCodes.IO, file: missing }));
    replaceFile(path.join(dir, 'private.txt'), enc.encode('x'), { keepMode: 0o600 });
    expect(fs.statSync(path.join(dir, 'private.txt')).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir).some((n) => n.startsWith(TEMP_PREFIX))).toBe(false);
  });
});
