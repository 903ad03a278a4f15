import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { crc32c } from '../../formats/checksum.js';
import { FINGERPRINT_BYTES } from '../../formats/index-layout.js';
import { ShardFile, type ShardMark } from '../../src/pack/shard-file.js';
import { tmpDir } from '../helpers/tmp.js';

describe('ShardFile', () => {
  it('writes a run longer than one write(2) may take in pieces, with the same bytes and checksum', () => {
    // fs.writeSync refuses more than 2^31 - 1 bytes a call; a 64 KiB limit stands in for the real 1 GiB one
    const limit = 64 << 10;
    const dir = tmpDir();
    const data = new Uint8Array(5 * limit + 123).map((_, i) => (i * 7) & 0xff);
    const write = vi.spyOn(fs, 'writeSync');
    try {
      const file = new ShardFile(path.join(dir, 'a.tmp'), path.join(dir, 'a.tar'), limit);
      file.write(data.subarray(0, 10));
      file.write(data.subarray(10));
      const sums = file.commit(false);
      // writeSync(fd, buffer, offset, length, position): the length is the fourth argument
      const lengths = write.mock.calls.map((c) => {
        const length: unknown = c[3];
        if (typeof length !== 'number') throw new TypeError(`expected writeSync's fourth argument to be a length, got ${String(length)}`);
        return length;
      });
      expect(Math.max(...lengths)).toBeLessThanOrEqual(limit);
      expect(lengths.reduce((a, b) => a + b, 0)).toBe(data.length);
      expect(sums.crc32c).toBe(crc32c(data));
    } finally {
      write.mockRestore();
    }
    expect(fs.readFileSync(path.join(dir, 'a.tar')).equals(Buffer.from(data))).toBe(true);
  });

  it('property: a rewind to a mark gives the file, checksum and fingerprint of the writes before it', () => {
    const dir = tmpDir();
    // writes of any size (long ones go out directly, short ones through the buffer), some views of one buffer
    // (adjacent ones join), marks, and rewinds to the last mark
    const op = fc.oneof(
      fc.record({ write: fc.integer({ min: 0, max: 200_000 }), seed: fc.nat(255) }),
      fc.constant({ mark: true as const }),
      fc.constant({ rewind: true as const }),
    );
    let n = 0;
    fc.assert(
      fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
        const file = new ShardFile(path.join(dir, `${n}.tmp`), path.join(dir, `${n++}.tar`), 100_000);
        let kept: Uint8Array[] = [];
        let mark: { at: ShardMark; kept: Uint8Array[] } | undefined;
        for (const o of ops) {
          if ('write' in o) {
            const data = new Uint8Array(o.write).map((_, i) => (i * 31 + o.seed) & 0xff);
            file.write(data.subarray(0, o.write >> 1));
            file.write(data.subarray(o.write >> 1));
            kept.push(data);
          } else if ('mark' in o) mark = { at: file.mark(), kept: [...kept] };
          else if (mark !== undefined) {
            file.rewind(mark.at);
            kept = [...mark.kept];
          }
        }
        const expected = Buffer.concat(kept);
        const sums = file.commit(false);
        const written = fs.readFileSync(file.finalPath);
        expect(written.equals(expected)).toBe(true);
        expect(sums.crc32c).toBe(crc32c(expected));
        expect(sums.fingerprint).toBe(crc32c(expected.subarray(0, FINGERPRINT_BYTES)));
        fs.rmSync(file.finalPath);
      }),
      { numRuns: 60 },
    );
  });
});
