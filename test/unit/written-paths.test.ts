/** WrittenPaths refuses a second member on a path already written, exactly or as a folding file system sees it. */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { WrittenPaths } from '../../src/verify/written-paths.js';

describe('WrittenPaths', () => {
  it('takes distinct paths and refuses a repeated one, naming both keys', () => {
    const w = new WrittenPaths({ caseInsensitive: false, normalizationInsensitive: false });
    w.claim('a/b', 'jpg');
    w.claim('a/b', 'seg.png');
    w.claim('a/bb', 'jpg');
    expect(() => w.claim('a/b.seg', 'png')).toThrow(
      expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH, key: 'a/b.seg', message: expect.stringContaining('key "a/b" (ext "seg.png") already wrote that path') }),
    );
  });

  it('refuses a path that is a file for one key and a directory for another, in either order', () => {
    const exact = { caseInsensitive: false, normalizationInsensitive: false };
    const fileFirst = new WrittenPaths(exact);
    fileFirst.claim('x/a', '');
    expect(() => fileFirst.claim('x/a/b', 'txt')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH, message: expect.stringContaining('it needs "x/a" as a directory, and key "x/a" writes a file there') }));
    const dirFirst = new WrittenPaths(exact);
    dirFirst.claim('x/a/b', 'txt');
    dirFirst.claim('x/a', 'jpg'); // x/a.jpg: a file beside the directory, no clash
    expect(() => dirFirst.claim('x/a', '')).toThrow(expect.objectContaining({ message: expect.stringContaining('key "x/a/b" needs that path as a directory') }));
    const folding = new WrittenPaths({ caseInsensitive: true, normalizationInsensitive: true });
    folding.claim('X/A', '');
    expect(() => folding.claim('x/a/b', 'txt')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH }));
  });

  it('folds case and Unicode normalization where the file system does, and only there', () => {
    const exact = new WrittenPaths({ caseInsensitive: false, normalizationInsensitive: false });
    exact.claim('Photo', 'JPG');
    exact.claim('photo', 'jpg');
    exact.claim('caf\u00e9', 'txt');
    exact.claim('cafe\u0301', 'txt');
    const folding = new WrittenPaths({ caseInsensitive: true, normalizationInsensitive: true });
    folding.claim('Photo', 'JPG');
    expect(() => folding.claim('photo', 'jpg')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH, message: expect.stringContaining('it folds case') }));
    folding.claim('caf\u00e9', 'txt'); // NFC
    expect(() => folding.claim('cafe\u0301', 'txt')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH }));
    // the message names the folding that made the two one: on macOS both apply
    expect(() => folding.claim('CAFE\u0301', 'txt')).toThrow(expect.objectContaining({ message: expect.stringContaining('it folds case') }));
    const both = new WrittenPaths({ caseInsensitive: true, normalizationInsensitive: true });
    both.claim('caf\u00e9', 'txt');
    expect(() => both.claim('cafe\u0301', 'txt')).toThrow(expect.objectContaining({ message: expect.stringContaining('it folds Unicode normalization') }));
    const nfdOnly = new WrittenPaths({ caseInsensitive: false, normalizationInsensitive: true });
    nfdOnly.claim('caf\u00e9', 'txt');
    nfdOnly.claim('CAF\u00c9', 'txt');
    expect(() => nfdOnly.claim('cafe\u0301', 'txt')).toThrow(expect.objectContaining({ message: expect.stringContaining('it folds Unicode normalization') }));
  });
});
