/**
 * The native source read of pack (src/native/read-file.c): the same bytes as fs.readFileSync, the same errors as
 * the fs path (vanished, permission denied, not a regular file), "no room" with nothing written outside the room,
 * and one fstat a file when the file last changed over a second before its read.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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
          // the room may hold part of the file now; nothing around it is written
          expect(target.subarray(0, offset).every((b) => b === 0xa5)).toBe(true);
          expect(target.subarray(offset + room).every((b) => b === 0xa5)).toBe(true);
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

  it('reads a file that last changed over a second ago in one go: any size, past the first read, or no room', async () => {
    const readFile = nativeAddon()!.readFile;
    const dir = tmpDir();
    const sizes = [0, 1, 4095, 4096, 100_000, (1 << 20) - 1, 1 << 20, (1 << 20) + 4097];
    const files = sizes.map((size, i) => {
      const file = path.join(dir, `f${i}.bin`);
      fs.writeFileSync(file, randomBytes(size));
      return file;
    });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    for (const [i, file] of files.entries()) {
      const bytes = fs.readFileSync(file);
      for (const room of [bytes.length, bytes.length + 100, 3 << 20, Math.max(0, bytes.length - 1)]) {
        const target = new Uint8Array(room + 8).fill(0xa5);
        const n = readFile(file, target, 4, room);
        if (bytes.length <= room) {
          expect(n, `size ${sizes[i]}, room ${room}`).toBe(bytes.length);
          expect(Buffer.from(target.subarray(4, 4 + n)).equals(bytes)).toBe(true);
        } else {
          expect(n).toBe(-(bytes.length + 1));
        }
        expect(target.subarray(0, 4).every((b) => b === 0xa5) && target.subarray(4 + room).every((b) => b === 0xa5)).toBe(true);
      }
    }
  });

  const straceHere = spawnSync('sh', ['-c', 'command -v strace'], { encoding: 'utf8' }).status === 0;
  it.runIf(straceHere)('makes one fstat a settled file, two (as GNU tar) a file changed in the last second', async () => {
    const dir = tmpDir();
    const files = Array.from({ length: 200 }, (_, i) => path.join(dir, `s${i}.bin`));
    for (const file of files) fs.writeFileSync(file, randomBytes(3000));
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const fresh = Array.from({ length: 200 }, (_, i) => path.join(dir, `n${i}.bin`));
    for (const file of fresh) fs.writeFileSync(file, randomBytes(3000));
    const native = fileURLToPath(new URL('../../dist/src/native/native.js', import.meta.url));
    // a child reads the listed files through the addon; strace counts its fstat-like calls
    const fstats = (list: string[]): number => {
      const script = `import { nativeAddon } from ${JSON.stringify(native)};
        const readFile = nativeAddon().readFile; const t = new Uint8Array(1 << 16);
        for (const f of ${JSON.stringify(list)}) if (readFile(f, t, 0, t.length) !== 3000) process.exit(3);`;
      const out = spawnSync('strace', ['-f', '-c', '-e', 'trace=fstat,newfstatat,statx', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' });
      expect(out.status, out.stderr).toBe(0);
      return [...out.stderr.matchAll(/^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)(?:\s+\d+)?\s+(?:fstat|newfstatat|statx)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    };
    const none = fstats([]);
    expect(fstats(files) - none).toBe(200);
    expect(fstats(fresh) - none).toBe(400);
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
