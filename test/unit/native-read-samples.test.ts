/**
 * The native readSamples (src/native/read-file.c): a run of samples read and laid out as shard bytes in one call.
 * The bytes must be exactly encodeSample's (tar and packed), a stop must roll its sample back at a sample boundary,
 * and every reason to stop (no room, a name that needs pax, a file that cannot be read) must say which member.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32c } from '../../formats/checksum.js';
import { Codec } from '../../formats/index-entry.js';
import type { Layout } from '../../formats/index-layout.js';
import { memberPath } from '../../formats/sample.js';
import { encodeSample } from '../../formats/sample-layout.js';
import { fileHeaderTemplate } from '../../formats/tar-header.js';
import { straceAvailable } from '../../src/bench/strace.js';
import { nativeAddon, nativeAvailable, NativeErrorCodes, ReadSamplesIo as IO, ReadSamplesStatus as STATUS } from '../../src/native/native.js';
import { tmpDir } from '../helpers/tmp.js';

interface Spec {
  key: string;
  members: { ext: string; bytes: Buffer }[];
}

/** A tmpfs on most Linux machines: a second file system for the one-fstat tests. */
const SHM = '/dev/shm';

/** Whether source-file.c trusts the ctime of files in `dir` (ext2/3/4, xfs, btrfs, tmpfs: see ctime_trusted). */
function trustedFs(dir: string): boolean {
  const type = spawnSync('stat', ['-f', '-c', '%t', dir], { encoding: 'utf8' });
  return type.status === 0 && ['ef53', '58465342', '9123683e', '1021994'].includes(type.stdout.trim());
}

/** readSamples' root for files under `dir`: the directory and a separator. */
const rootOf = (dir: string): Buffer => Buffer.from(`${dir}${path.sep}`);

/** Writes the samples' files under `dir`; returns readSamples' inputs for them. */
function inputs(dir: string, samples: Spec[]) {
  const names: string[] = [];
  for (const s of samples) {
    for (const m of s.members) {
      fs.writeFileSync(path.join(dir, memberPath(s.key, m.ext)), m.bytes);
      names.push(memberPath(s.key, m.ext));
    }
  }
  return {
    root: rootOf(dir),
    names: Buffer.from(`${names.join('\0')}\0`),
    counts: Uint32Array.from(samples.map((s) => s.members.length)),
    io: new Float64Array(IO.RESULTS + 2 * names.length),
  };
}

/** encodeSample's bytes for the samples, back to back. */
function expected(samples: Spec[], layout: Layout): Buffer {
  return Buffer.concat(samples.flatMap((s) => encodeSample({ key: s.key, members: Object.fromEntries(s.members.map((m) => [m.ext, m.bytes])) }, layout, Codec.none).parts));
}

const template = (layout: Layout) => (layout === 'tar' ? fileHeaderTemplate() : null);

// sizes around tar's 512-byte blocks; keys up to the 100 bytes a plain ustar name holds, some of them not ASCII
const sampleSpecs = fc.uniqueArray(
  fc.record({
    key: fc.stringMatching(/^[a-zé0-9_-]{1,40}$/),
    members: fc.uniqueArray(fc.record({ ext: fc.constantFrom('bin', 'cls', 'json', 'seg.png'), size: fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constantFrom(0, 511, 512, 513, 1024)) }), { minLength: 1, maxLength: 3, selector: (m) => m.ext }),
  }),
  { minLength: 1, maxLength: 12, selector: (s) => s.key },
);
const realize = (specs: { key: string; members: { ext: string; size: number }[] }[]): Spec[] =>
  specs.map((s) => ({ key: s.key, members: [...s.members].sort((a, b) => (a.ext < b.ext ? -1 : 1)).map((m) => ({ ext: m.ext, bytes: randomBytes(m.size) })) }));

describe.skipIf(!nativeAvailable())('native readSamples', () => {
  const readSamples = nativeAddon()!.readSamples;

  it("lays samples out exactly as encodeSample does (tar and packed), with each member's size and CRC32C", () => {
    fc.assert(
      fc.property(sampleSpecs, fc.constantFrom<Layout>('tar', 'packed'), fc.integer({ min: 0, max: 600 }), (specs, layout, at) => {
        const dir = tmpDir();
        const samples = realize(specs);
        const { root, names, counts, io } = inputs(dir, samples);
        const want = expected(samples, layout);
        const target = new Uint8Array(at + want.length + 7).fill(0xa5);
        io[IO.POS] = at;
        io[IO.END] = target.length;
        readSamples(root, names, counts, template(layout), target, io);
        expect(io[IO.STATUS]).toBe(STATUS.DONE);
        expect(io[IO.SAMPLE]).toBe(samples.length);
        expect(io[IO.POS]).toBe(at + want.length);
        expect(Buffer.from(target.subarray(at, at + want.length)).equals(want)).toBe(true);
        expect(target.subarray(0, at).every((b) => b === 0xa5) && target.subarray(at + want.length).every((b) => b === 0xa5)).toBe(true);
        samples.flatMap((s) => s.members).forEach((m, f) => {
          expect(io[IO.RESULTS + 2 * f]).toBe(m.bytes.length);
          expect(io[IO.RESULTS + 2 * f + 1]).toBe(crc32c(m.bytes));
        });
      }),
      { numRuns: 60 },
    );
  });

  it('stops at the first sample without room, rolled back to its start; calls with fresh room finish the rest', () => {
    fc.assert(
      fc.property(sampleSpecs, fc.constantFrom<Layout>('tar', 'packed'), fc.integer({ min: 0, max: 8000 }), (specs, layout, room) => {
        const dir = tmpDir();
        const samples = realize(specs);
        const { root, names, counts, io } = inputs(dir, samples);
        const sampleBytes = samples.map((s) => expected([s], layout).length);
        const chunks: Buffer[] = [];
        for (let calls = 0; io[IO.SAMPLE]! < samples.length; calls++) {
          const first = io[IO.SAMPLE]!;
          // the first call gets `room`; a sample that did not fit gets exactly its size
          const size = calls === 0 ? room : (sampleBytes[first] as number);
          const target = new Uint8Array(size);
          io[IO.POS] = 0;
          io[IO.END] = size;
          readSamples(root, names, counts, template(layout), target, io);
          const done = io[IO.SAMPLE]!;
          // whole samples only: as many as fit, in order
          let fit = first;
          for (let used = 0; fit < samples.length && used + (sampleBytes[fit] as number) <= size; fit++) used += sampleBytes[fit] as number;
          expect(done).toBe(fit);
          expect(io[IO.POS]).toBe(sampleBytes.slice(first, done).reduce((a, b) => a + b, 0));
          expect(io[IO.STATUS]).toBe(done === samples.length ? STATUS.DONE : STATUS.ROOM);
          chunks.push(Buffer.from(target.subarray(0, io[IO.POS])));
          expect(calls).toBeLessThan(samples.length + 1);
        }
        expect(Buffer.concat(chunks).equals(expected(samples, layout))).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it('stops at a tar name longer than a ustar name field, and passes over a sample the caller handled (skip)', () => {
    const dir = tmpDir();
    const samples: Spec[] = [
      { key: 'a', members: [{ ext: 'bin', bytes: randomBytes(10) }] },
      { key: 'x'.repeat(97), members: [{ ext: 'bin', bytes: randomBytes(10) }] }, // 101-byte name: pax
      { key: 'c', members: [{ ext: 'bin', bytes: randomBytes(600) }] },
    ];
    const { root, names, counts, io } = inputs(dir, samples);
    const target = new Uint8Array(1 << 16);
    io[IO.END] = target.length;
    readSamples(root, names, counts, fileHeaderTemplate(), target, io);
    expect([io[IO.STATUS], io[IO.SAMPLE], io[IO.MEMBER], io[IO.FILE]]).toEqual([STATUS.NAME, 1, 0, 1]);
    const firstBytes = io[IO.POS]!;
    expect(Buffer.from(target.subarray(0, firstBytes)).equals(expected([samples[0]!], 'tar'))).toBe(true);
    // packed has no names: the same sample is no reason to stop there
    const packed = inputs(dir, samples);
    packed.io[IO.END] = target.length;
    readSamples(packed.root, packed.names, packed.counts, null, new Uint8Array(1 << 16), packed.io);
    expect(packed.io[IO.STATUS]).toBe(STATUS.DONE);
    // skip: the long-named sample is the caller's; the call goes on with the next one, results in their places
    io[IO.SKIP] = 1;
    readSamples(root, names, counts, fileHeaderTemplate(), target, io);
    expect([io[IO.STATUS], io[IO.SAMPLE], io[IO.SKIP]]).toEqual([STATUS.DONE, 3, 0]);
    expect(Buffer.from(target.subarray(firstBytes, io[IO.POS])).equals(expected([samples[2]!], 'tar'))).toBe(true);
    expect([io[IO.RESULTS + 4], io[IO.RESULTS + 5]]).toEqual([600, crc32c(samples[2]!.members[0]!.bytes)]);
  });

  it('names the member that cannot be read: vanished (errno, open), not a regular file', () => {
    const dir = tmpDir();
    const samples: Spec[] = [
      { key: 'a', members: [{ ext: 'bin', bytes: randomBytes(10) }] },
      { key: 'b', members: [{ ext: 'bin', bytes: randomBytes(10) }, { ext: 'cls', bytes: randomBytes(3) }] },
      { key: 'c', members: [{ ext: 'bin', bytes: randomBytes(10) }] },
    ];
    const { root, names, counts, io } = inputs(dir, samples);
    fs.rmSync(path.join(dir, 'b.cls'));
    const target = new Uint8Array(1 << 16);
    io[IO.END] = target.length;
    readSamples(root, names, counts, fileHeaderTemplate(), target, io);
    expect([io[IO.STATUS], io[IO.SAMPLE], io[IO.MEMBER], io[IO.ERRNO], io[IO.SYSCALL]]).toEqual([STATUS.ERRNO, 1, 1, 2 /* ENOENT */, 1 /* open */]);
    expect(io[IO.POS]).toBe(expected([samples[0]!], 'tar').length);
    fs.mkdirSync(path.join(dir, 'b.cls'));
    readSamples(root, names, counts, fileHeaderTemplate(), target, io);
    expect([io[IO.STATUS], io[IO.SAMPLE], io[IO.MEMBER]]).toEqual([STATUS.NOT_FILE, 1, 1]);
  });

  it('opens each file in its own directory, whatever the directories before it (names repeat across them)', () => {
    // readSamples keeps the last directory open and opens files by name in it: the same name in another directory,
    // a directory whose name extends the previous one, a nested one, the root itself (absolute or relative), a
    // vanished directory
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('d', 'e', 'dx', 'd/e', 'f/g', '.'), fc.integer({ min: 0, max: 700 })), { minLength: 1, maxLength: 12 }), fc.boolean(), (files, relative) => {
        const dir = tmpDir();
        const bytes = files.map(([, size]) => randomBytes(size));
        const names = files.map(([sub], i) => {
          fs.mkdirSync(path.join(dir, sub), { recursive: true });
          return sub === '.' ? `s${i}.bin` : `${sub}/n${i % 3}.bin`;
        });
        // a name may come twice: both reads give what was written to it last
        const last = new Map<string, Buffer>();
        names.forEach((name, i) => {
          fs.writeFileSync(path.join(dir, name), bytes[i] as Buffer);
          last.set(name, bytes[i] as Buffer);
        });
        const io = new Float64Array(IO.RESULTS + 2 * names.length);
        const target = new Uint8Array(1 << 16);
        io[IO.END] = target.length;
        readSamples(rootOf(relative ? path.relative(process.cwd(), dir) : dir), Buffer.from(`${names.join('\0')}\0`), new Uint32Array(names.length).fill(1), null, target, io);
        expect(io[IO.STATUS]).toBe(STATUS.DONE);
        expect(Buffer.from(target.subarray(0, io[IO.POS])).equals(Buffer.concat(names.map((name) => last.get(name) as Buffer)))).toBe(true);
      }),
      { numRuns: 40 },
    );
    const dir = tmpDir();
    fs.mkdirSync(path.join(dir, 'a'));
    fs.writeFileSync(path.join(dir, 'a', 'x.bin'), 'x');
    const io = new Float64Array(IO.RESULTS + 4);
    io[IO.END] = 4096;
    readSamples(rootOf(dir), Buffer.from('a/x.bin\0gone/y.bin\0'), Uint32Array.of(1, 1), null, new Uint8Array(4096), io);
    expect([io[IO.STATUS], io[IO.SAMPLE], io[IO.ERRNO], io[IO.SYSCALL]]).toEqual([STATUS.ERRNO, 1, 2 /* ENOENT */, 1 /* open */]);
  });

  it('reads files that last changed seconds before (one fstat on a local file system) as it reads fresh ones', async () => {
    // sizes around the first read (128 KiB) of a file in a trusted directory, and a file larger than it
    const sizes = [0, 1, 4095, (128 << 10) - 1, 128 << 10, (128 << 10) + 1, (1 << 20) + 4097];
    const dirs = [tmpDir(), ...(trustedFs(SHM) ? [fs.mkdtempSync(path.join(SHM, 'shardkit-test-'))] : [])];
    const specs = dirs.map((dir) => {
      const samples: Spec[] = sizes.map((size, i) => ({ key: `s${i}`, members: [{ ext: 'bin', bytes: randomBytes(size) }] }));
      return { samples, ...inputs(dir, samples) };
    });
    await new Promise((resolve) => setTimeout(resolve, 2100));
    try {
      for (const { samples, root, names, counts, io } of specs) {
        for (const layout of ['tar', 'packed'] as const) {
          const want = expected(samples, layout);
          // all the room needed, then less: the last sample does not fit and is rolled back
          for (const room of [want.length, want.length - 1]) {
            const target = new Uint8Array(room + 9).fill(0xa5);
            io.fill(0);
            io[IO.POS] = 0;
            io[IO.END] = room;
            readSamples(root, names, counts, template(layout), target, io);
            const done = room === want.length ? samples.length : samples.length - 1;
            expect(io[IO.SAMPLE]).toBe(done);
            expect(io[IO.STATUS]).toBe(room === want.length ? STATUS.DONE : STATUS.ROOM);
            const laid = expected(samples.slice(0, done), layout);
            expect(io[IO.POS]).toBe(laid.length);
            expect(Buffer.from(target.subarray(0, laid.length)).equals(laid)).toBe(true);
            expect(target.subarray(room).every((b) => b === 0xa5)).toBe(true); // nothing past the room
            samples.slice(0, done).forEach((sample, f) => expect(io[IO.RESULTS + 2 * f + 1]).toBe(crc32c(sample.members[0]!.bytes)));
          }
        }
      }
    } finally {
      for (const dir of dirs.slice(1)) fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(straceAvailable())('makes one fstat a file that last changed seconds before on a local file system, two (as GNU tar) one not settled', async () => {
    const dirs = [tmpDir(), ...(trustedFs(SHM) ? [fs.mkdtempSync(path.join(SHM, 'shardkit-test-'))] : [])];
    const native = fileURLToPath(new URL('../../dist/src/native/native.js', import.meta.url));
    // A child reads the samples through readSamples; strace logs its fstat-like calls with each descriptor's path
    // (-y), and only those on the test directory count: Node's own start-up makes a varying number of others.
    const fstats = (root: Buffer, keys: string[]): number => {
      const script = `import { nativeAddon } from ${JSON.stringify(native)};
        const keys = ${JSON.stringify(keys)};
        const io = new Float64Array(16 + 2 * keys.length); io[4] = 1 << 22;
        nativeAddon().readSamples(Buffer.from(${JSON.stringify(root.toString())}), Buffer.from(keys.map((k) => k + '.bin\\0').join('')),
          new Uint32Array(keys.length).fill(1), null, new Uint8Array(1 << 22), io);
        if (io[6] !== 0 || io[0] !== keys.length) process.exit(3);`;
      const out = spawnSync('strace', ['-f', '-y', '-e', 'trace=fstat,newfstatat,statx', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', maxBuffer: 1 << 26 });
      expect(out.status, out.stderr).toBe(0);
      const dir = fs.realpathSync(root.toString());
      // `fstat(12</dir/old3.bin>, ...)`, `newfstatat(12</dir>, "", ...)`, `statx(12</dir/x.bin>, "", ...)`
      const onDir = new RegExp(`\\b(?:fstat|newfstatat|statx)\\(\\d+<${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:/[^>]*)?>`);
      return out.stderr.split('\n').filter((line) => onDir.test(line)).length;
    };
    try {
      const keys = (prefix: string) => Array.from({ length: 200 }, (_, i) => `${prefix}${i}`);
      for (const dir of dirs) for (const key of keys('old')) fs.writeFileSync(path.join(dir, `${key}.bin`), randomBytes(3000));
      await new Promise((resolve) => setTimeout(resolve, 2100));
      for (const dir of dirs) {
        // "Fresh" must not depend on how soon the read follows the write (a busy machine can take seconds): a
        // file whose mtime lies a day ahead is never settled, however long the read waits. The old files only
        // grow more settled with any delay.
        const ahead = new Date(Date.now() + 86_400_000);
        for (const key of keys('new')) {
          const file = path.join(dir, `${key}.bin`);
          fs.writeFileSync(file, randomBytes(3000));
          fs.utimesSync(file, ahead, ahead);
        }
        const root = rootOf(dir);
        // one fstat of the directory, then one or two per file
        expect(fstats(root, []), dir).toBe(0);
        expect(fstats(root, keys('old')), dir).toBe(1 + (trustedFs(dir) ? 200 : 400));
        expect(fstats(root, keys('new')), dir).toBe(1 + 400);
      }
    } finally {
      for (const dir of dirs.slice(1)) fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a root with a NUL or of 4096 bytes, and stops at a path of 4096 bytes or more (ENAMETOOLONG, open)', () => {
    const dir = tmpDir();
    const { names, counts, io } = inputs(dir, [{ key: 'a', members: [{ ext: 'bin', bytes: randomBytes(10) }] }]);
    io[IO.END] = 4096;
    expect(() => readSamples(Buffer.from(`${dir}\0/`), names, counts, null, new Uint8Array(4096), io.slice())).toThrow(expect.objectContaining({ code: NativeErrorCodes.ARG }));
    expect(() => readSamples(Buffer.from(`${dir}/${'x/'.repeat(2100)}`), names, counts, null, new Uint8Array(4096), io.slice())).toThrow(expect.objectContaining({ code: NativeErrorCodes.ARG }));
    // a root that fits, with a name that takes the path past 4095 bytes
    const long = Buffer.from(`${dir}/${'x/'.repeat(Math.floor((4094 - dir.length - 1) / 2))}`);
    expect(long.length).toBeGreaterThan(4090);
    readSamples(long, names, counts, null, new Uint8Array(4096), io);
    expect([io[IO.STATUS], io[IO.SAMPLE], io[IO.MEMBER], io[IO.ERRNO], io[IO.SYSCALL]]).toEqual([STATUS.ERRNO, 0, 0, 36 /* ENAMETOOLONG */, 1 /* open */]);
  });

  it('refuses a cursor, room or result array that does not fit its inputs (in C, before reading)', () => {
    const dir = tmpDir();
    const { root, names, counts, io } = inputs(dir, [{ key: 'a', members: [{ ext: 'bin', bytes: randomBytes(10) }] }]);
    const target = new Uint8Array(4096);
    const bad: [string, (io: Float64Array) => void][] = [
      ['sample past the counts', (x) => (x[IO.SAMPLE] = 2)],
      ['fractional position', (x) => (x[IO.POS] = 0.5)],
      ['end past the target', (x) => (x[IO.END] = 5000)],
      ['position past the end', (x) => ((x[IO.END] = 100), (x[IO.POS] = 200))],
      ['name offset past the names', (x) => (x[IO.NAME_AT] = 1e6)],
      ['NaN skip', (x) => (x[IO.SKIP] = Number.NaN)],
    ];
    for (const [what, set] of bad) {
      const x = io.slice();
      x[IO.END] = target.length;
      set(x);
      expect(() => readSamples(root, names, counts, fileHeaderTemplate(), target, x), what).toThrow(expect.objectContaining({ code: NativeErrorCodes.ARG }));
    }
    const ok = io.slice();
    ok[IO.END] = target.length;
    expect(() => readSamples(root, names, counts, fileHeaderTemplate(), target, ok.subarray(0, IO.RESULTS + 1))).toThrow(/no room for the results/);
    const roomy = new Float64Array(IO.RESULTS + 8);
    roomy[IO.END] = target.length;
    expect(() => readSamples(root, names, Uint32Array.of(2), fileHeaderTemplate(), target, roomy)).toThrow(/fewer names/);
    expect(() => readSamples(root, names, counts, new Uint8Array(100), target, ok)).toThrow(expect.objectContaining({ code: NativeErrorCodes.ARG }));
  });
});
