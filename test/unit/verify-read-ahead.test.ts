/**
 * verify's ReadAhead reads a source front to back into two buffers that take turns: every read returns the
 * source's bytes at its offset (valid until the next read), a local file reads into those two buffers and no
 * more, and a source that returns new memory instead (http) gives the same bytes.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ByteSource } from '../../src/io/byte-source.js';
import { FileSource } from '../../src/io/file-source.js';
import { ReadAhead } from '../../src/verify/read-ahead.js';
import { tmpDir } from '../helpers/tmp.js';

const BYTES = randomBytes(600_000);

describe('verify ReadAhead', () => {
  const file = path.join(tmpDir(), 'data');
  fs.writeFileSync(file, BYTES);

  it('FileSource.read into a given buffer returns a view of it holding the bytes; too short a buffer is not used', async () => {
    const src = await FileSource.open(file, { syncReadMaxBytes: 0 });
    try {
      const into = new Uint8Array(100_000).fill(7);
      const got = await src.read(1000, 90_000, into);
      expect(got.buffer).toBe(into.buffer);
      expect(got.byteOffset).toBe(0);
      expect(Buffer.from(got).equals(BYTES.subarray(1000, 91_000))).toBe(true);
      expect(into[90_000]).toBe(7); // not one byte past
      const fresh = await src.read(0, 200_000, into);
      expect(fresh.buffer).not.toBe(into.buffer);
      expect(Buffer.from(fresh).equals(BYTES.subarray(0, 200_000))).toBe(true);
    } finally {
      await src.close();
    }
  });

  for (const kind of ['local file', 'source that returns new memory'] as const) {
    it(`returns the source's bytes for any sequence of chunk sizes, in sequence or not (${kind}; property)`, async () => {
      const local = await FileSource.open(file, { syncReadMaxBytes: 65_536 });
      const source: ByteSource = kind === 'local file' ? local : { name: local.name, size: () => local.size(), read: (o, n) => local.read(o, n), close: () => local.close() };
      try {
        await fc.assert(
          fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 1, max: 150_000 }), fc.boolean()), { minLength: 1, maxLength: 12 }), async (steps) => {
            const reader = new ReadAhead(source);
            let at = 0;
            for (const [k, [length, jump]] of steps.entries()) {
              // a jump reads elsewhere than the read in flight (it is dropped); else the next chunk in sequence
              const offset = jump ? (length * 7919) % (BYTES.length - length) : Math.min(at, BYTES.length - length);
              const next = steps[k + 1]?.[0] ?? 0;
              const got = await reader.read(offset, length, Math.min(next, BYTES.length - offset - length));
              expect(Buffer.from(got).equals(BYTES.subarray(offset, offset + length))).toBe(true);
              at = offset + length;
            }
            await reader.stop();
          }),
          { numRuns: 60 },
        );
      } finally {
        await local.close();
      }
    });
  }

  it('a local file read in equal chunks goes through two buffers only', async () => {
    const src = await FileSource.open(file);
    try {
      const reader = new ReadAhead(src);
      const buffers = new Set<ArrayBufferLike>();
      for (let at = 0; at < 500_000; at += 100_000) {
        const got = await reader.read(at, 100_000, at + 100_000 < 500_000 ? 100_000 : 0);
        expect(Buffer.from(got).equals(BYTES.subarray(at, at + 100_000))).toBe(true);
        buffers.add(got.buffer);
      }
      expect(buffers.size).toBe(2);
    } finally {
      await src.close();
    }
  });
});
