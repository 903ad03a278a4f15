import { describe, expect, it } from 'vitest';
import { httpHeaders } from '../../src/io/http-headers.js';
import { ErrorCodes } from '../../formats/errors.js';

const files: Record<string, string> = { h: '# comment\n\n  Authorization:  Bearer abc  \r\nX-Empty:\n' };
const read = (file: string): string => {
  const text = files[file];
  if (text === undefined) throw new Error('ENOENT');
  return text;
};

describe('httpHeaders (--header values)', () => {
  it('parse "Name: value" and @FILE lines, later values winning', () => {
    expect(httpHeaders(undefined, read)).toEqual({});
    expect(httpHeaders(['Accept: */*', 'x-a:1:2', '@h', 'X-Empty: set'], read)).toEqual({ Accept: '*/*', 'x-a': '1:2', Authorization: 'Bearer abc', 'X-Empty': 'set' });
  });

  it('refuse a missing name, a bad name, control characters and an unreadable file, without quoting the value', () => {
    for (const bad of ['no colon s3cr3t', ': s3cr3t', 'Bad Name: s3cr3t', 'X: s3cr3t\r\nInjected: b', 'X: s3cr3t\u0000b', '@missing']) {
      let err: unknown;
      try {
        httpHeaders([bad], read);
      } catch (e) {
        err = e;
      }
      expect(err, bad).toMatchObject({ code: ErrorCodes.INVALID_ARG });
      expect((err as Error).message).not.toContain('s3cr3t');
    }
  });
});
