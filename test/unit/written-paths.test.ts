/** WrittenPaths refuses a second member on a path already written, exactly or as a case-insensitive volume sees it. */
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { WrittenPaths } from '../../src/verify/written-paths.js';

describe('WrittenPaths', () => {
  it('takes distinct paths and refuses a repeated one, naming both keys', () => {
    const w = new WrittenPaths();
    w.claim('a/b', 'jpg');
    w.claim('a/b', 'seg.png');
    w.claim('a/bb', 'jpg');
    expect(() => w.claim('a/b.seg', 'png')).toThrow(
      expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH, key: 'a/b.seg', message: expect.stringContaining('key "a/b" (ext "seg.png") already wrote that path') }),
    );
  });

  it('folds case and Unicode normalization, as case-insensitive file systems do', () => {
    const w = new WrittenPaths();
    w.claim('Photo', 'JPG');
    expect(() => w.claim('photo', 'jpg')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSAFE_PATH }));
    w.claim('caf\u00e9', 'txt'); // NFC
    expect(() => w.claim('cafe\u0301', 'txt')).toThrow(expect.objectContaining({ message: expect.stringContaining('the same file on a case-insensitive file system') }));
  });
});
