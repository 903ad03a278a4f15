import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32c } from '../../formats/checksum.js';
import { FINGERPRINT_BYTES } from '../../formats/index-layout.js';
import { ShardFile } from '../../src/pack/shard-file.js';
import { tmpDir } from '../helpers/tmp.js';

/** A write: a view of the shared arena (consecutive ones may be adjacent), bytes of their own, zeros, or a settle. */
const op = fc.oneof(
  fc.record({ kind: fc.constant('arena' as const), length: fc.integer({ min: 0, max: 150_000 }), skip: fc.constantFrom(0, 0, 0, 1, 7) }),
  fc.record({ kind: fc.constant('own' as const), length: fc.integer({ min: 0, max: 80_000 }) }),
  fc.record({ kind: fc.constant('zeros' as const), length: fc.integer({ min: 0, max: 1024 }) }),
  fc.record({ kind: fc.constant('settle' as const) }),
);

describe('ShardFile', () => {
  it('writes exactly the bytes given, in order, whether joined, written in place or copied; CRC and fingerprint of the whole', () => {
    const dir = tmpDir();
    let n = 0;
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), fc.integer({ min: 0, max: 255 }), (ops, seed) => {
        const arena = new Uint8Array(4 << 20).map((_, i) => (i * 31 + seed) & 255);
        const file = path.join(dir, `s${n++}`);
        const shard = new ShardFile(`${file}.tmp`, file);
        const expected: Uint8Array[] = [];
        let at = 0;
        for (const o of ops) {
          if (o.kind === 'settle') {
            shard.settle();
            continue;
          }
          let bytes: Uint8Array;
          if (o.kind === 'arena') {
            at += o.skip;
            if (at + o.length > arena.length) at = 0;
            bytes = arena.subarray(at, at + o.length);
            at += o.length;
          } else if (o.kind === 'own') bytes = new Uint8Array(o.length).fill(o.length & 255);
          else bytes = new Uint8Array(o.length);
          if (o.kind === 'zeros') shard.zeros(o.length);
          else shard.write(bytes);
          expected.push(bytes.slice());
        }
        // the writer's caller may reuse its memory once it has settled
        shard.settle();
        arena.fill(0xee);
        const { crc32c: crc, fingerprint } = shard.commit(false);
        const want = Buffer.concat(expected);
        const got = fs.readFileSync(file);
        expect(got.equals(want)).toBe(true);
        expect(shard.bytes).toBe(want.length);
        expect(crc).toBe(crc32c(want));
        expect(fingerprint).toBe(crc32c(want.subarray(0, FINGERPRINT_BYTES)));
        fs.rmSync(file);
      }),
      { numRuns: 60 },
    );
  });
});
