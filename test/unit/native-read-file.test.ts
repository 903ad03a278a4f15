/**
 * The native source read of pack (src/native/read-file.c): the same bytes as fs.readFileSync, the same errors as
 * the fs path (vanished, permission denied, not a regular file), and "no room" without reading.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { nativeAddon, nativeAvailable, nativeLoadError } from '../../src/native/native.js';
import { readSourceFile, readSourceFileInto } from '../../src/pack/read-source.js';
import { tmpDir } from '../helpers/tmp.js';

const compilerHere = spawnSync('sh', ['-c', 'command -v cc && command -v make && command -v python3'], { encoding: 'utf8' }).status === 0;

describe('native addon build', () => {
  it.runIf(compilerHere && process.platform === 'linux')('is built wherever a C compiler is installed (else the native tests would skip silently)', () => {
    expect(nativeAvailable(), String(nativeLoadError())).toBe(true);
  });
});

describe.skipIf(!nativeAvailable())('native readFile', () => {
  const entry = (absPath: string) => ({ relPath: path.basename(absPath), absPath, size: -1, mtimeMs: -1 });

  it('reads any file into any free room, byte for byte, or says how much room it needs', () => {
    const dir = tmpDir();
    const readFile = nativeAddon()!.readFile;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 80_000 }), (size, offset, room) => {
        const file = path.join(dir, 'f.bin');
        const bytes = randomBytes(size);
        fs.writeFileSync(file, bytes);
        const target = new Uint8Array(offset + room + 3).fill(0xa5);
        const n = readFile(file, target, offset, room);
        if (size <= room) {
          expect(n).toBe(size);
          expect(Buffer.from(target.subarray(offset, offset + size)).equals(bytes)).toBe(true);
          expect(target[offset + room]).toBe(0xa5);
        } else {
          expect(n).toBe(-(size + 1));
          expect(target.every((b) => b === 0xa5)).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('through readSourceFileInto: reads in place when the file fits, elsewhere when it does not', () => {
    const dir = tmpDir();
    const small = path.join(dir, 'small.bin');
    const big = path.join(dir, 'big.bin');
    fs.writeFileSync(small, randomBytes(100));
    fs.writeFileSync(big, randomBytes(5000));
    const arena = new Uint8Array(1000);
    let used = 0;
    const place = (n: number): Uint8Array => (used + n <= arena.length ? arena.subarray(used, (used += n)) : new Uint8Array(n));
    const a = readSourceFileInto(entry(small), place, () => arena.subarray(used));
    expect(a.buffer).toBe(arena.buffer);
    expect(Buffer.from(a).equals(fs.readFileSync(small))).toBe(true);
    const b = readSourceFileInto(entry(big), place, () => arena.subarray(used));
    expect(b.buffer).not.toBe(arena.buffer);
    expect(Buffer.from(b).equals(fs.readFileSync(big))).toBe(true);
  });

  it('gives the errors of the fs path: vanished, not a regular file, and never blocks on a FIFO', () => {
    const dir = tmpDir();
    expect(() => readSourceFile(entry(path.join(dir, 'gone.bin')))).toThrow(expect.objectContaining({ code: ErrorCodes.INPUT_CHANGED, message: expect.stringMatching(/gone\.bin vanished while it was being packed/) }));
    expect(() => readSourceFile(entry(dir))).toThrow(expect.objectContaining({ code: ErrorCodes.INPUT_CHANGED, message: expect.stringMatching(/is no longer a regular file/) }));
    // a FIFO put where a file was listed: refused at once, not a pack blocked waiting for a writer
    const fifo = path.join(dir, 'fifo.bin');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    expect(() => readSourceFile(entry(fifo))).toThrow(expect.objectContaining({ code: ErrorCodes.INPUT_CHANGED, message: expect.stringMatching(/is no longer a regular file/) }));
  });

  it('refuses a path too long for the kernel as fs does, never a shorter path that exists (multi-byte characters at the cut)', () => {
    const readFile = nativeAddon()!.readFile;
    let dir = tmpDir();
    while (dir.length < 3800) dir += `/${'d'.repeat(200)}`;
    fs.mkdirSync(dir, { recursive: true });
    // an existing file whose path is 4093 bytes, and the path asked for: that one and two 3-byte characters more
    const shorter = `${dir}/${'f'.repeat(4093 - dir.length - 1)}`;
    fs.writeFileSync(shorter, 'another file');
    const asked = `${shorter}\u20ac\u20ac.jpg`;
    expect(() => fs.readFileSync(asked)).toThrow(expect.objectContaining({ code: 'ENAMETOOLONG' }));
    expect(() => readFile(asked, new Uint8Array(100), 0, 100)).toThrow(expect.objectContaining({ code: 'ENAMETOOLONG' }));
    // the longest path the kernel takes, 4095 bytes, is read
    const longest = `${dir}/${'g'.repeat(4095 - dir.length - 1)}`;
    fs.writeFileSync(longest, 'longest');
    expect(readFile(longest, new Uint8Array(100), 0, 100)).toBe(7);
  });
});
