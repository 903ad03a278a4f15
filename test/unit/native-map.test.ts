/**
 * The memory-mapped read path (src/native): a closed map throws instead of touching freed memory, LRU closes of
 * shard handles unmap, a shard truncated under a live map is a TRUNCATED error (in a child process: a SIGBUS that
 * escaped would kill it, not the test runner), and SHARDKIT_NATIVE=0 / native: false read the same bytes with pread.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes } from '../../formats/errors.js';
import { FileSource } from '../../src/io/file-source.js';
import { IoStats } from '../../src/io/io-stats.js';
import { COPY_MANY_ROW, nativeAddon, nativeAvailable } from '../../src/native/native.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const SAMPLES = 60;
let dir: string;
const contents = new Map<string, Uint8Array>();
const keyOf = (i: number): string => `k/${String(i).padStart(4, '0')}`;

beforeAll(async () => {
  dir = path.join(tmpDir(), 'ds');
  const w = new DatasetWriter({ dir, shardBytes: 64 * 1024 });
  for (let i = 0; i < SAMPLES; i++) {
    const bytes = randomBytes(500 + ((i * 7919) % 9000));
    contents.set(keyOf(i), bytes);
    w.add({ key: keyOf(i), members: { bin: bytes } });
  }
  await w.finish();
});

const savedEnv = process.env.SHARDKIT_NATIVE;
afterEach(() => {
  if (savedEnv === undefined) delete process.env.SHARDKIT_NATIVE;
  else process.env.SHARDKIT_NATIVE = savedEnv;
});

describe.skipIf(!nativeAvailable())('memory-mapped reads', () => {
  it('a closed FileSource throws CLOSED; the raw addon refuses closed maps and bad ranges without crashing', () => {
    const file = path.join(tmpDir(), 'f.bin');
    fs.writeFileSync(file, randomBytes(10_000));
    const src = FileSource.openSync(file, { mmap: true });
    expect(src.readSync(0, 10).length).toBe(10);
    expect(src.mapped).toBe(true);
    src.closeSync();
    expect(() => src.readSync(0, 10)).toThrow(expect.objectContaining({ code: ErrorCodes.CLOSED }));

    const addon = nativeAddon()!;
    const fd = fs.openSync(file, 'r');
    try {
      const map = addon.map(fd, 10_000);
      const target = new Uint8Array(100);
      expect(() => addon.copy(map, 9_950, 100, target, 0)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_RANGE' }));
      expect(() => addon.copy(map, 0, 100, target, 1)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      expect(() => addon.copy({} as never, 0, 1, target, 0)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      // numbers travel through a shared parameter block: fractions, NaN and bad checksum ranges are refused in C
      expect(() => addon.copy(map, 0.5, 1, target, 0)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      expect(() => addon.copy(map, Number.NaN, 1, target, 0)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      expect(() => addon.copy(map, 0, 10, target, 0, 5, 6)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      expect(() => addon.copy(map, 0, 10, target, 0, 0, -1)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      expect(() => addon.copy(map, -1, 10, target, 0)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      addon.copy(map, 9_900, 100, target, 0);
      addon.unmap(map);
      addon.unmap(map);
      expect(() => addon.copy(map, 0, 1, target, 0)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_CLOSED' }));
    } finally {
      fs.closeSync(fd);
    }
  });

  it('copyMany: every row copies (and checksums) as copy() does; a bad row throws, the rows before it done', () => {
    const file = path.join(tmpDir(), 'many.bin');
    const data = randomBytes(20_000);
    fs.writeFileSync(file, data);
    const addon = nativeAddon()!;
    const fd = fs.openSync(file, 'r');
    const map = addon.map(fd, data.length);
    try {
      const row = fc.record({ offset: fc.nat({ max: data.length }), length: fc.nat({ max: 3000 }), crcFrom: fc.nat({ max: 50 }), crc: fc.boolean() });
      fc.assert(
        fc.property(fc.array(row, { minLength: 1, maxLength: 20 }), fc.nat({ max: 7 }), (rows, gap) => {
          const spec = new Float64Array(rows.length * COPY_MANY_ROW).fill(-7); // stale numbers must not leak through
          let at = gap;
          const placed = rows.map((r) => {
            const length = Math.min(r.length, data.length - r.offset);
            const crcStart = Math.min(r.crcFrom, length);
            const p = { offset: r.offset, length, at, crcStart, crcLength: r.crc ? length - crcStart : -1 };
            at += length + gap;
            return p;
          });
          placed.forEach((p, i) => spec.set([p.offset, p.length, p.at, p.crcStart, p.crcLength], i * COPY_MANY_ROW));
          const target = new Uint8Array(at);
          addon.copyMany(map, target, spec, rows.length);
          placed.forEach((p, i) => {
            expect(Buffer.from(target.subarray(p.at, p.at + p.length)).equals(data.subarray(p.offset, p.offset + p.length))).toBe(true);
            if (p.crcLength >= 0) expect(spec[i * COPY_MANY_ROW + 5]).toBe(crc32c(data.subarray(p.offset + p.crcStart, p.offset + p.crcStart + p.crcLength)));
          });
        }),
        { numRuns: 200 },
      );
      const spec = new Float64Array([0, 10, 0, 0, 10, 0, 19_995, 10, 10, 0, -1, 0, 100, 10, 20, 0, -1, 0]);
      const target = new Uint8Array(30);
      expect(() => addon.copyMany(map, target, spec, 3)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_RANGE' }));
      expect(Buffer.from(target.subarray(0, 10)).equals(data.subarray(0, 10))).toBe(true); // row 0 done
      expect(target.subarray(20).every((b) => b === 0)).toBe(true); // row 2 not reached
      expect(() => addon.copyMany(map, target, spec, 4)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      expect(() => addon.copyMany(map, target, new Float32Array(6) as never, 1)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      expect(() => addon.copyMany(map, target, new Float64Array([0, 10, 25, 0, -1, 0]), 1)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_ARG' }));
      addon.unmap(map);
      expect(() => addon.copyMany(map, target, spec, 1)).toThrow(expect.objectContaining({ code: 'ERR_SHARDKIT_NATIVE_CLOSED' }));
    } finally {
      addon.unmap(map);
      fs.closeSync(fd);
    }
  });

  it("the loader copies a batch's lone samples out of the maps in one call per slab: the bytes of atSync, one mapped read each", async () => {
    const io = new IoStats();
    const ds = await openDataset(dir, { ioStats: io, checkShards: 'size' }); // no fingerprint reads on open
    const before = io.mappedReads;
    const got = new Map<string, Uint8Array>();
    // maxReadBytes 0: no sample shares a read, so every one takes the lone path
    for await (const batch of ds.loader({ batchSize: 16, shuffle: 'full', seed: 9, maxReadBytes: 0 })) for (const s of batch) got.set(s.key, s.members.bin!);
    expect(io.mappedReads - before).toBe(SAMPLES);
    expect(got.size).toBe(SAMPLES);
    for (const [key, bytes] of got) expect(Buffer.from(bytes).equals(Buffer.from(contents.get(key)!)), key).toBe(true);
    await ds.close();
  });

  it('reads every sample right through LRU closes of shard maps (maxOpenShards 1), then CLOSED after close()', async () => {
    const io = new IoStats();
    const ds = await openDataset(dir, { maxOpenShards: 1, ioStats: io });
    expect(ds.native).toBe(true);
    expect(ds.shards.length).toBeGreaterThan(3);
    for (let round = 0; round < 3; round++) {
      for (let i = SAMPLES - 1 - round; i >= 0; i -= 3) {
        const key = keyOf(i);
        expect(Buffer.from(ds.getSync(key).members.bin!).equals(Buffer.from(contents.get(key)!))).toBe(true);
        expect(Buffer.from(ds.atViewSync(i).members.bin!).equals(Buffer.from(contents.get(key)!))).toBe(true);
      }
    }
    expect(ds.stats().shardHandles.evictions).toBeGreaterThan(10);
    expect(io.mappedReads).toBeGreaterThan(0);
    await ds.close();
    expect(() => ds.atSync(0)).toThrow(expect.objectContaining({ code: ErrorCodes.CLOSED }));
  });

  it('a flipped byte is a CHECKSUM error on every read path, with the native checksum and without', async () => {
    const copy = path.join(tmpDir(), 'ds');
    fs.cpSync(dir, copy, { recursive: true });
    const probe = await openDataset(copy);
    const entry = probe.index.atSync(5);
    await probe.close();
    const shard = path.join(copy, probe.shardName(entry.shard));
    const member = entry.members[0]!;
    const fd = fs.openSync(shard, 'r+');
    const at = entry.offset + member.offset + 17;
    const one = Buffer.alloc(1);
    fs.readSync(fd, one, 0, 1, at);
    one[0] = one[0]! ^ 0x40;
    fs.writeSync(fd, one, 0, 1, at);
    fs.closeSync(fd);
    for (const native of [true, false]) {
      const ds = await openDataset(copy, { native });
      try {
        expect(ds.native).toBe(native);
        expect(() => ds.atSync(5)).toThrow(expect.objectContaining({ code: ErrorCodes.CHECKSUM, key: entry.key }));
        expect(() => ds.atViewSync(5)).toThrow(expect.objectContaining({ code: ErrorCodes.CHECKSUM }));
        await expect(ds.at(5)).rejects.toMatchObject({ code: ErrorCodes.CHECKSUM });
        const epoch = async (): Promise<number> => {
          let n = 0;
          for await (const batch of ds.loader({ batchSize: 8, shuffle: 'full', seed: 1, maxReadBytes: 0 })) n += batch.length;
          return n;
        };
        await expect(epoch()).rejects.toMatchObject({ code: ErrorCodes.CHECKSUM, key: entry.key });
        expect(ds.atSync(4).key).toBe(keyOf(4)); // neighbours are intact
      } finally {
        await ds.close();
      }
    }
  });

  it('a shard truncated under a live map: the next read throws TRUNCATED naming the shard, the process lives on', async () => {
    const built = fileURLToPath(new URL('../../dist/src/read/dataset.js', import.meta.url));
    expect(fs.existsSync(built), 'needs the build in dist/ (npm run build)').toBe(true);
    const copy = path.join(tmpDir(), 'ds');
    fs.cpSync(dir, copy, { recursive: true });
    const shard = path.join(copy, 'shard-000000.tar');
    const script = `
      import { openDataset } from ${JSON.stringify(built)};
      const ds = await openDataset(${JSON.stringify(copy)}, { checkShards: 'size', verify: false });
      let last = 0;
      for (let i = 0; i < ds.size; i++) if (ds.index.atSync(i).shard === 0) last = i;
      ds.atSync(0); // maps shard 0
      process.stdout.write('mapped ' + last + '\\n');
      process.stdin.once('data', async () => {
        try {
          ds.atSync(last);
          process.stdout.write(JSON.stringify({ ok: true }) + '\\n');
        } catch (err) {
          // the guard is left cleanly: the same map still serves the bytes that remain, twice over
          const again = ds.atSync(0).key === ds.atSync(0).key;
          // the loader's one-call copy of a batch fails too, and the sample it concerns is read alone to say so
          let loader = 'no error';
          try {
            for await (const batch of ds.loader({ batchSize: 64, verify: true, maxReadBytes: 0 })) void batch;
          } catch (e) {
            loader = e.code + ' ' + e.file;
          }
          process.stdout.write(JSON.stringify({ code: err.code, message: err.message, file: err.file, mapped: ds.stats().io.mappedReads, again, loader }) + '\\n');
        }
        process.exit(0);
      });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve();
      });
      child.on('exit', () => reject(new Error(`child ended before mapping: ${err}`)));
    });
    fs.truncateSync(shard, 4096); // the last sample of shard 0 now lies pages past the end
    child.stdin.write('go\n');
    const { code, signal } = await exit;
    expect(signal, err).toBeNull();
    expect(code, err).toBe(0);
    const result = JSON.parse(out.trim().split('\n').pop()!) as { code: string; message: string; file: string; mapped: number; again: boolean; loader: string };
    expect(result.code).toBe(ErrorCodes.TRUNCATED);
    expect(result.message).toContain('shrank while open'); // the SIGBUS path, not a pread past the end
    expect(result.again).toBe(true);
    expect(result.file).toBe(shard);
    expect(result.message).toContain('shard-000000.tar');
    expect(result.mapped).toBeGreaterThan(0);
    expect(result.loader).toBe(`${ErrorCodes.TRUNCATED} ${shard}`);
  });
  it('worker threads read through maps of their own with their own parameter block, concurrently with this thread', async () => {
    const built = fileURLToPath(new URL('../../dist/src/read/dataset.js', import.meta.url));
    expect(fs.existsSync(built), 'needs the build in dist/ (npm run build)').toBe(true);
    const script = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.built).then(async ({ openDataset }) => {
        const ds = await openDataset(workerData.dir, { checkShards: 'size' });
        const sums = [];
        for (let round = 0; round < 20; round++) for (let i = ds.size - 1; i >= 0; i--) sums.push(ds.atSync(i).members.bin.reduce((a, b) => (a + b) | 0, 0));
        parentPort.postMessage({ native: ds.native, sums: sums.slice(0, ds.size) });
        await ds.close();
      });`;
    const { Worker } = await import('node:worker_threads');
    const workers = [0, 1].map(() => new Worker(script, { eval: true, workerData: { built: pathToFileURL(built).href, dir } }));
    const results = workers.map((w) => new Promise<{ native: boolean; sums: number[] }>((resolve, reject) => w.once('message', resolve).once('error', reject)));
    // meanwhile this thread copies with other numbers through its own block
    const ds = await openDataset(dir, { checkShards: 'size' });
    let same = 0;
    for (let round = 0; round < 20; round++) for (let i = 0; i < ds.size; i++) if (Buffer.from(ds.atSync(i).members.bin!).equals(contents.get(keyOf(i))!)) same++;
    expect(same).toBe(20 * SAMPLES);
    await ds.close();
    const want = Array.from({ length: SAMPLES }, (_, i) => contents.get(keyOf(SAMPLES - 1 - i))!.reduce((a, b) => (a + b) | 0, 0));
    for (const r of await Promise.all(results)) {
      expect(r.native).toBe(true);
      expect(r.sums).toEqual(want);
    }
    await Promise.all(workers.map((w) => w.terminate()));
  });

  it('the parameter block cannot be detached under the addon: copies stay right, or fail with ERR_SHARDKIT_NATIVE_ARG', () => {
    // in a child process: a detach would be for good in that process
    const native = fileURLToPath(new URL('../../dist/src/native/native.js', import.meta.url));
    const shard = path.join(dir, 'shard-000000.tar');
    const script = `
      import fs from 'node:fs';
      import { createRequire } from 'node:module';
      import { nativeAddon } from ${JSON.stringify(native)};
      const addon = nativeAddon();
      const fd = fs.openSync(${JSON.stringify(shard)}, 'r');
      const map = addon.map(fd, fs.fstatSync(fd).size);
      const want = Buffer.alloc(16);
      fs.readSync(fd, want, 0, 16, 2000);
      const t = new Uint8Array(16);
      addon.copy(map, 100, 16, t, 0, 0, 16); // numbers for offset 100 now sit in the block
      const raw = createRequire(import.meta.url)(${JSON.stringify(path.resolve('src/native/build/Release/shardkit.node'))});
      const outcomes = [];
      const attempt = () => {
        try {
          t.fill(0);
          addon.copy(map, 2000, 16, t, 0, 0, 16);
          outcomes.push(Buffer.from(t).equals(want) ? 'right' : 'wrong');
        } catch (err) {
          outcomes.push(err.code);
        }
      };
      structuredClone(raw.copyParams.buffer, { transfer: [raw.copyParams.buffer] });
      attempt();
      new MessageChannel().port1.postMessage(raw.copyParams.buffer, [raw.copyParams.buffer]);
      globalThis.gc();
      attempt();
      process.stdout.write(JSON.stringify(outcomes));`;
    const res = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(res.status, res.stderr).toBe(0);
    const outcomes = JSON.parse(res.stdout) as string[];
    expect(outcomes).toHaveLength(2);
    for (const o of outcomes) expect(['right', 'ERR_SHARDKIT_NATIVE_ARG']).toContain(o);
  });

  it('a SIGBUS that is not a mapped read (here: sent with kill) still gets the default action', async () => {
    const addonFile = fileURLToPath(new URL('../../src/native/build/Release/shardkit.node', import.meta.url));
    const script = `
      const fs = require('node:fs');
      const addon = require(${JSON.stringify(addonFile)});
      const fd = fs.openSync(${JSON.stringify(fileURLToPath(import.meta.url))}, 'r');
      addon.copyParams.set([0, 8, 0, 0, -1]); // offset, length, target offset, no checksum
      addon.copyWithParams(addon.map(fd, 64), new Uint8Array(8)); // handler installed, guard used once
      process.kill(process.pid, 'SIGBUS');
      setTimeout(() => process.stdout.write('survived'), 500);`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
    expect(signal).toBe('SIGBUS');
    expect(out).toBe('');
  });
});

describe('portable fallback', () => {
  it('native: false and SHARDKIT_NATIVE=0 read the same bytes with pread and no map', async () => {
    for (const how of ['option', 'env'] as const) {
      if (how === 'env') process.env.SHARDKIT_NATIVE = '0';
      const io = new IoStats();
      const ds = await openDataset(dir, how === 'option' ? { native: false, ioStats: io } : { ioStats: io });
      try {
        expect(ds.native).toBe(false);
        for (let i = 0; i < SAMPLES; i++) expect(Buffer.from(ds.atSync(i).members.bin!).equals(Buffer.from(contents.get(keyOf(i))!))).toBe(true);
        expect(io.mappedReads).toBe(0);
        expect(io.reads).toBeGreaterThanOrEqual(SAMPLES);
      } finally {
        await ds.close();
      }
    }
    expect(nativeAvailable()).toBe(false); // SHARDKIT_NATIVE=0 is still set here
  });

  it('rejects a non-boolean native option', async () => {
    await expect(openDataset(dir, { native: 'yes' as never })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
  });
});
