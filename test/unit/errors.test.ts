import { describe, expect, it } from 'vitest';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';

describe('ShardkitError', () => {
  it('is recognised by instanceof and isShardkitError, a look-alike Error is not', () => {
    const err = new ShardkitError(ErrorCodes.INPUT, 'bad file', { file: 'a.bin' });
    expect(err instanceof ShardkitError).toBe(true);
    expect(err instanceof Error).toBe(true);
    expect(isShardkitError(err, ErrorCodes.INPUT)).toBe(true);
    expect(isShardkitError(err, ErrorCodes.IO)).toBe(false);
    const lookAlike = Object.assign(new Error('bad file'), { name: 'ShardkitError', code: ErrorCodes.INPUT });
    expect(lookAlike instanceof ShardkitError).toBe(false);
    expect(isShardkitError(lookAlike)).toBe(false);
    for (const v of [null, undefined, 'SHARDKIT_ERR_INPUT', 42, {}]) expect(isShardkitError(v)).toBe(false);
  });

  it('an error from a second copy of the module (the CLI bundle against the package) is one too', async () => {
    // vite loads a module again for a new query; TypeScript knows no file by that name, so the specifier is a plain string
    const secondCopy: string = '../../formats/errors.js?second-copy';
    const copy = (await (import(secondCopy) as Promise<unknown>)) as typeof import('../../formats/errors.js');
    expect(copy.ShardkitError).not.toBe(ShardkitError); // really another class
    const other = new copy.ShardkitError(ErrorCodes.INPUT, 'from the other copy');
    expect(other instanceof ShardkitError).toBe(true);
    expect(isShardkitError(other, ErrorCodes.INPUT)).toBe(true);
    expect(new ShardkitError(ErrorCodes.IO, 'x') instanceof copy.ShardkitError).toBe(true);
  });

  it('a subclass keeps the ordinary instanceof', () => {
    class Special extends ShardkitError {}
    expect(new Special(ErrorCodes.IO, 'x') instanceof Special).toBe(true);
    expect(new Special(ErrorCodes.IO, 'x') instanceof ShardkitError).toBe(true);
    expect(new ShardkitError(ErrorCodes.IO, 'x') instanceof Special).toBe(false);
  });
});
