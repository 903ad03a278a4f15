import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { Codec } from '../../formats/index-entry.js';
import { checkPackedHeader, encodePackedHeader } from '../../formats/packed-layout.js';
import { encodeSample } from '../../formats/sample-layout.js';

describe('packed layout', () => {
  it('starts a shard with a 16-byte header, byte for byte', () => {
    expect(Buffer.from(encodePackedHeader()).toString('hex')).toBe('89534b50414b0d0a' + '01000000' + '00000000');
    expect(() => checkPackedHeader(encodePackedHeader(), 'p')).not.toThrow();
    const header = (hex: string) => Buffer.from(hex, 'hex');
    expect(() => checkPackedHeader(header('89534b50414b0d0a' + '02000000' + '00000000'), 'p')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSUPPORTED_VERSION }));
    expect(() => checkPackedHeader(header('89534b50414b0d0a' + '00000000' + '00000000'), 'p')).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_SHARD }));
    expect(() => checkPackedHeader(header('89534b50414b0d0a' + '01000000' + '00000100'), 'p')).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_SHARD }));
    expect(() => checkPackedHeader(header('89534b50414b0d0b' + '01000000' + '00000000'), 'p')).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_SHARD }));
  });

  it('concatenates members with no header or padding, in extension order', () => {
    const enc = encodeSample({ key: 'k', members: { txt: Uint8Array.of(1, 2, 3), cls: Uint8Array.of(9) } }, 'packed', Codec.none);
    expect(Buffer.concat(enc.parts).toString('hex')).toBe('09010203');
    expect(enc.spanStart).toBe(0);
    expect(enc.members.map((m) => [m.ext, m.offset, m.size])).toEqual([
      ['cls', 0, 1],
      ['txt', 1, 3],
    ]);
  });

  it('stores 100-byte samples with no per-sample overhead in the shard', () => {
    const enc = encodeSample({ key: 'k', members: { bin: new Uint8Array(100) } }, 'packed', Codec.none);
    expect(enc.bytes).toBe(100);
    const tar = encodeSample({ key: 'k', members: { bin: new Uint8Array(100) } }, 'tar', Codec.none);
    expect(tar.bytes).toBe(1024); // 512-byte header + 100 bytes padded to 512
  });

  it('refuses keys that could escape a directory', () => {
    for (const key of ['../x', 'a//b', '/abs', 'a/./b', 'a\\b', '', 'a\ud800']) {
      expect(() => encodeSample({ key, members: { b: new Uint8Array(1) } }, 'tar', Codec.none), key).toThrow();
    }
  });
});
