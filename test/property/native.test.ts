/**
 * The native addon against the portable code it replaces: hardware and table CRC32C equal formats/checksum.ts
 * crc32c for any length, seed and alignment; copies out of a memory map equal pread for any span. Skipped when the
 * addon is not built (the portable path is what every other test then exercises).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32cReference as crc32c } from '../../formats/checksum.js';
import { FileSource } from '../../src/io/file-source.js';
import { IoStats } from '../../src/io/io-stats.js';
import { nativeAddon, nativeAvailable } from '../../src/native/native.js';
import { tmpDir } from '../helpers/tmp.js';

const POOL = randomBytes(128 * 1024);

describe.skipIf(!nativeAvailable())('native addon (property)', () => {
  it('crc32c equals formats/checksum.ts for random lengths 0..100k, seeds and alignments, by every kernel this CPU has', () => {
    const addon = nativeAddon()!;
    const kernels = addon.crc32cKernels;
    expect(kernels[0]).toBe('table');
    // every x86-64 CPU since 2008 has SSE4.2 (and every ARMv8.1 one the CRC extension): the test machines do
    if (process.arch === 'x64') expect(kernels[1]).toBe('sse4.2');
    if (process.arch === 'arm64') expect(kernels[1]).toBe('armv8-crc');
    // lengths near the folding kernels' group sizes (128 and 256 bytes) and the crc32 lanes' (768 and 12288)
    const edges = [0, 1, 7, 8, 127, 128, 129, 255, 256, 257, 383, 384, 511, 512, 513, 767, 768, 769, 12_287, 12_288, 12_289];
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.constantFrom(...edges)),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.integer({ min: 0, max: 15 }),
        fc.integer({ min: 0, max: 12_000 }),
        fc.integer({ min: 0, max: 63 }),
        (length, seed, align, start, targetAt) => {
          // `align` moves the view's start off an 8-byte boundary; `start` varies the bytes
          const from = (start & ~15) + align;
          const bytes = new Uint8Array(POOL.buffer, POOL.byteOffset + from, length);
          const want = crc32c(bytes, seed);
          expect(addon.crc32c(bytes, seed)).toBe(want);
          if (seed === 0) expect(addon.crc32c(bytes)).toBe(want);
          for (const kernel of kernels) {
            expect(addon.crc32cWith(kernel, bytes, seed)).toBe(want);
            // the copy in the same pass: every byte, at any target alignment, and not one past the end
            const target = new Uint8Array(targetAt + length + 1).fill(0xaa);
            expect(addon.crc32cWith(kernel, bytes, seed, target.subarray(targetAt, targetAt + length))).toBe(want);
            expect(Buffer.from(target.buffer, targetAt, length).equals(bytes)).toBe(true);
            expect(target[targetAt + length]).toBe(0xaa);
          }
        },
      ),
      { numRuns: 300 },
    );
    const refused = expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' });
    expect(() => addon.crc32cWith('no-such-kernel', POOL)).toThrow(refused);
    expect(() => addon.crc32cWith('table\0junk', POOL)).toThrow(refused);
    const bytes = POOL.subarray(0, 1000);
    expect(addon.crc32cWith('table', bytes, 7, undefined)).toBe(crc32c(bytes, 7));
    // a target overlapping the bytes would checksum what the copy already overwrote
    expect(() => addon.crc32cWith('table', bytes, 0, POOL.subarray(999, 1999))).toThrow(refused);
    expect(() => addon.crc32cWith('table', POOL.subarray(64, 1064), 0, POOL.subarray(0, 1000))).toThrow(refused);
    expect(() => addon.crc32cWith('table', bytes, 0, new Uint8Array(999))).toThrow(refused);
  });

  it('crc32c continues across chunks exactly like one call', () => {
    const addon = nativeAddon()!;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 0, max: 70_000 }), (a, b) => {
        const [cut, end] = a <= b ? [a, b] : [b, a];
        const whole = POOL.subarray(0, end);
        expect(addon.crc32c(POOL.subarray(cut, end), addon.crc32c(POOL.subarray(0, cut)))).toBe(crc32c(whole));
      }),
      { numRuns: 100 },
    );
  });

  it('a mapped FileSource returns what pread returns for random spans and targets, and counts mapped reads', () => {
    const dir = tmpDir();
    const file = path.join(dir, 'shard.bin');
    const content = randomBytes(300_001); // not a page multiple: the last page is partial
    fs.writeFileSync(file, content);
    const stats = new IoStats();
    const mapped = FileSource.openSync(file, { mmap: true, stats });
    const plain = FileSource.openSync(file);
    try {
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: content.length }).chain((offset) => fc.tuple(fc.constant(offset), fc.integer({ min: 0, max: content.length - offset }))),
          fc.integer({ min: 0, max: 64 }),
          ([offset, length], at) => {
            const a = new Uint8Array(length + at + 8).fill(0xaa);
            const b = new Uint8Array(length + at + 8).fill(0xaa);
            mapped.readIntoSync(a, at, length, offset);
            plain.readIntoSync(b, at, length, offset);
            expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
            expect(Buffer.from(mapped.readSync(offset, length)).equals(content.subarray(offset, offset + length))).toBe(true);
          },
        ),
        { numRuns: 300 },
      );
      // the copy that checksums a sub-range in the same pass: same bytes, and the CRC32C of exactly that range
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: content.length }).chain((offset) => fc.tuple(fc.constant(offset), fc.integer({ min: 0, max: Math.min(40_000, content.length - offset) }))),
          fc.integer({ min: 0, max: 15 }),
          fc.nat(),
          fc.nat(),
          ([offset, length], at, x, y) => {
            const [crcStart, crcEnd] = [x % (length + 1), y % (length + 1)].sort((p, q) => p - q) as [number, number];
            const target = new Uint8Array(length + at + 8).fill(0xaa);
            const crc = mapped.readIntoSyncCrc32c(target, at, length, offset, crcStart, crcEnd - crcStart);
            expect(Buffer.from(target.subarray(at, at + length)).equals(content.subarray(offset, offset + length))).toBe(true);
            expect(target[at + length]).toBe(0xaa);
            expect(crc).toBe(crc32c(content.subarray(offset + crcStart, offset + crcEnd)));
          },
        ),
        { numRuns: 300 },
      );
      expect(mapped.mapped).toBe(true);
      expect(stats.mappedReads).toBe(stats.reads);
      expect(stats.reads).toBeGreaterThanOrEqual(600);
      // past the end: TRUNCATED like pread, never a crash
      expect(() => mapped.readSync(content.length - 10, 20)).toThrow(expect.objectContaining({ code: 'SHARDKIT_ERR_TRUNCATED' }));
    } finally {
      mapped.closeSync();
      plain.closeSync();
    }
  });
});
