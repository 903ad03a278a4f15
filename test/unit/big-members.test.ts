/**
 * Issue 26, item 3 (family: sizes past 2^31 and 2^32 everywhere). Spans too long to hold are checked as they
 * stream (the threshold lowered here with SHARDKIT_TEST_MAX_SPAN_BYTES, so that small shards take that path);
 * pack streams a file larger than a buffer into its shard (the limit lowered with SHARDKIT_TEST_MAX_MEMBER_BYTES),
 * and refuses it with TOO_LARGE, which --on-error skip leaves out, where a pass needs it whole (a real sparse 5 GiB
 * file: refused at its fstat, never read).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes } from '../../formats/errors.js';
import { Codec, type IndexEntry } from '../../formats/index-entry.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { pack } from '../../src/pack/pack.js';
import { customPass } from '../../src/passes/pass.js';
import { MemberStream } from '../../src/verify/member-stream.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { extractDataset } from '../../src/verify/extract.js';
import { openDataset } from '../../src/read/dataset.js';
import { writeMember } from '../../src/read/inspect.js';
import { flipBits } from '../helpers/checked.js';
import { tmpDir } from '../helpers/tmp.js';
import { hasTool, run } from '../helpers/tools.js';
import { closeStreamedSample, openStreamedSample } from '../../src/pack/streamed-sample.js';
import { tarPadding } from '../../formats/tar-header.js';

afterEach(() => {
  delete process.env.SHARDKIT_TEST_MAX_SPAN_BYTES;
  delete process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES;
});

function noise(seed: number, n: number): Buffer {
  let x = seed + 1;
  return Buffer.from(Uint8Array.from({ length: n }, () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24));
}

describe('MemberStream', () => {
  it('property: any chunking of a span gives the verdicts of the whole, and a flipped byte blames its member', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 4 }), fc.array(fc.integer({ min: 1, max: 997 }), { minLength: 1, maxLength: 20 }), fc.nat(), (sizes, cuts, flipAt) => {
        const datas = sizes.map((n, i) => noise(i, n));
        let off = 0;
        const members = datas.map((d, i) => {
          const m = { ext: `e${i}`, offset: off, size: d.length, storedSize: d.length, codec: Codec.none, crc32c: crc32c(d) };
          off += d.length + 7; // a gap, as tar headers and padding make
          return m;
        });
        const span = Buffer.alloc(off);
        datas.forEach((d, i) => d.copy(span, members[i]!.offset));
        const entry: IndexEntry = { key: 'k', shard: 0, offset: 1000, length: span.length, members };
        const run = (bytes: Buffer): (string | undefined)[] => {
          const s = new MemberStream(entry, 'shard');
          let at = 0;
          for (let c = 0; at < bytes.length; c++) {
            const n = Math.min(cuts[c % cuts.length]!, bytes.length - at);
            s.push(bytes.subarray(at, at + n), entry.offset + at);
            at += n;
          }
          return s.finish().map((v) => v.problem);
        };
        expect(run(span).every((p) => p === undefined)).toBe(true);
        const total = datas.reduce((n, d) => n + d.length, 0);
        if (total === 0) return;
        // flip a byte of some member's data
        let k = flipAt % total;
        const victim = datas.findIndex((d) => (k < d.length ? true : ((k -= d.length), false)));
        const bad = Buffer.from(span);
        flipBits(bad, members[victim]!.offset + k, 0xff);
        expect(run(bad).map((p) => p !== undefined)).toEqual(datas.map((_, i) => i === victim));
      }),
    );
  });
});

describe('verify streams the spans it cannot hold', () => {
  for (const compress of ['none', 'lz4'] as const) {
    it(`verify_of_spans_past_the_limit (${compress}): clean is ok; a damaged byte is named by key`, async () => {
      const dir = path.join(tmpDir(), 'ds');
      const w = new DatasetWriter({ dir, compress, shardBytes: 1 << 20 });
      for (let i = 0; i < 30; i++) w.add({ key: `k${String(i).padStart(2, '0')}`, members: { bin: noise(i, 20_000 + i * 1000), txt: Buffer.from(`t${i}`.repeat(300)) } });
      await w.finish();
      // spans over 4 KiB stream; 10 KiB reads cut most spans across reads
      process.env.SHARDKIT_TEST_MAX_SPAN_BYTES = '4096';
      process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES = '10000';
      expect((await verifyDataset(dir)).ok).toBe(true);
      // damage one byte in the middle of k17's bin member
      const shard = path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith('.tar'))!);
      const bytes = fs.readFileSync(shard);
      const at = bytes.indexOf(noise(17, 20_000 + 17_000).subarray(5000, 5064));
      if (compress === 'none') expect(at).toBeGreaterThan(0);
      const where = at > 0 ? at : bytes.indexOf(Buffer.from('k17.bin')) + 2000;
      flipBits(bytes, where, 0xff);
      fs.writeFileSync(shard, bytes);
      const r = await verifyDataset(dir);
      expect(r.ok).toBe(false);
      expect(r.damaged.map((d) => d.key)).toContain('k17');
    });
  }
});

describe('pack streams a member larger than a buffer', () => {
  it('pack_of_a_5GiB_sparse_file_with_a_pass: TOO_LARGE naming it (a pass needs it whole); --on-error skip leaves it out', async () => {
    const src = tmpDir();
    fs.writeFileSync(path.join(src, 'a.txt'), 'small');
    fs.closeSync(fs.openSync(path.join(src, 'huge.bin'), 'w'));
    fs.truncateSync(path.join(src, 'huge.bin'), 5 * 2 ** 30); // sparse: no disk used, never read
    const base = { source: src, readThreads: 0, passes: [customPass('same', (s) => s)] };
    const err = (await pack({ ...base, out: path.join(tmpDir(), 'ds') }).catch((e: unknown) => e)) as { code: string; message: string };
    expect(err.code).toBe(ErrorCodes.TOO_LARGE);
    expect(err.message).toContain(path.join(src, 'huge.bin'));
    expect(err.message).toContain('--on-error skip');
    expect(err.message).toContain('without --pass');
    const r = await pack({ ...base, out: path.join(tmpDir(), 'ds'), onError: 'skip' });
    expect(r.manifest.totals.samples).toBe(1);
    expect(r.manifest.skipped.map((s) => s.path)).toEqual(['huge.bin']);
  });

  /** Files past the lowered limit (1 MiB) and past a batch chunk (4 MiB: the native reader lays those out itself). */
  function bigTree(): string {
    const src = tmpDir();
    fs.mkdirSync(path.join(src, 'd'));
    fs.writeFileSync(path.join(src, 'a.txt'), 'small');
    fs.writeFileSync(path.join(src, 'd/big.bin'), noise(1, (9 << 20) + 77)); // three pieces, the last short
    fs.writeFileSync(path.join(src, 'd/big.json'), '{"x":1}'); // a small member of the same sample
    fs.writeFileSync(path.join(src, 'd/zero.bin'), Buffer.alloc((4 << 20) + 512)); // compressible, block-aligned
    fs.writeFileSync(path.join(src, 'z.txt'), 'last');
    return src;
  }
  const streamed = { SHARDKIT_TEST_MAX_MEMBER_BYTES: String(1 << 20) };
  const withEnv = async <T>(env: Record<string, string>, f: () => Promise<T>): Promise<T> => {
    Object.assign(process.env, env);
    try {
      return await f();
    } finally {
      for (const k of Object.keys(env)) delete process.env[k];
    }
  };
  /** The dataset's shard and index files by name, as SHA-256 digests (a diff of megabytes would not help). */
  const shardBytesOf = (dir: string): Record<string, string> =>
    Object.fromEntries(
      fs
        .readdirSync(dir)
        .filter((f) => /\.(tar|pack|skidx)$/.test(f))
        .sort()
        .map((f) => [f, createHash('sha256').update(fs.readFileSync(path.join(dir, f))).digest('hex')]),
    );

  // reader threads need the built worker: test/e2e/big-members.test.ts packs with them through the CLI
  for (const layout of ['tar', 'packed'] as const) {
    it(`pack_streams_files_past_the_limit (${layout}): the bytes of the in-memory path, verified`, async () => {
      const src = bigTree();
      const ref = await pack({ source: src, out: path.join(tmpDir(), 'ref'), layout, readThreads: 0 });
      const r = await withEnv(streamed, () => pack({ source: src, out: path.join(tmpDir(), 'ds'), layout, readThreads: 0 }));
      expect(r.manifest.totals.samples).toBe(4);
      expect(r.sourceBytes).toBe(ref.sourceBytes);
      expect(shardBytesOf(r.out)).toEqual(shardBytesOf(ref.out));
      expect(r.manifest.shards).toEqual(ref.manifest.shards);
      const v = await verifyDataset(r.out);
      expect(v.ok).toBe(true);
    });
  }

  it('pack_streams_with_lz4: a streamed member is stored uncompressed (codec none), the others compressed; all read back', async () => {
    const src = bigTree();
    fs.writeFileSync(path.join(src, 'c.txt'), 'c'.repeat(5000));
    const r = await withEnv(streamed, () => pack({ source: src, out: path.join(tmpDir(), 'ds'), compress: 'lz4', readThreads: 0 }));
    const ds = await openDataset(r.out);
    const codecs: Record<string, number> = {};
    for await (const e of ds.entries()) for (const m of e.members) codecs[`${e.key}.${m.ext}`] = m.codec;
    expect(codecs).toEqual({ 'a.txt': Codec.none, 'c.txt': Codec.lz4, 'd/big.bin': Codec.none, 'd/big.json': Codec.none, 'd/zero.bin': Codec.none, 'z.txt': Codec.none });
    expect(Buffer.from((await ds.get('d/big')).members.bin!).equals(noise(1, (9 << 20) + 77))).toBe(true);
    await ds.close();
    expect((await verifyDataset(r.out)).ok).toBe(true);
  });

  it('pack_streams_with_lz4: a tar member named *.lz4 is TOO_LARGE (it would not be a frame), skippable', async () => {
    const src = tmpDir();
    fs.writeFileSync(path.join(src, 'a.txt'), 'small');
    fs.writeFileSync(path.join(src, 'b.lz4'), noise(2, (4 << 20) + 1));
    const err = (await withEnv(streamed, () => pack({ source: src, out: path.join(tmpDir(), 'ds'), compress: 'lz4', readThreads: 0 })).catch((e: unknown) => e)) as { code: string; message: string };
    expect(err.code).toBe(ErrorCodes.TOO_LARGE);
    expect(err.message).toContain(path.join(src, 'b.lz4'));
    expect(err.message).toContain('--compress none');
    const r = await withEnv(streamed, () => pack({ source: src, out: path.join(tmpDir(), 'ds'), compress: 'lz4', readThreads: 0, onError: 'skip' }));
    expect(r.manifest.skipped.map((s) => s.path)).toEqual(['b.lz4']);
    // the packed layout has no names: stored as it is
    const p = await withEnv(streamed, () => pack({ source: src, out: path.join(tmpDir(), 'ds'), compress: 'lz4', layout: 'packed', readThreads: 0 }));
    expect(p.manifest.totals.samples).toBe(2);
  });

  it('pack_streams_with_verify_source: a stable file passes the second read', async () => {
    const src = bigTree();
    const ref = await pack({ source: src, out: path.join(tmpDir(), 'ref'), readThreads: 0 });
    const r = await withEnv(streamed, () => pack({ source: src, out: path.join(tmpDir(), 'ds'), readThreads: 0, verifySource: true }));
    expect(shardBytesOf(r.out)).toEqual(shardBytesOf(ref.out));
  });

  /**
   * Grows `file` by one byte after the first piece of its streamed read (a read of a whole piece at offset 0 on its
   * descriptor): the writer is then past its header and first bytes.
   */
  function growDuringStream(file: string): { restore: () => void } {
    const ino = fs.statSync(file).ino;
    let done = false;
    const real = fs.readSync;
    const spy = vi.spyOn(fs, 'readSync').mockImplementation(((fd: number, buffer: NodeJS.ArrayBufferView, ...rest: unknown[]) => {
      const n = (real as (...a: unknown[]) => number)(fd, buffer, ...rest);
      if (!done && rest[2] === 0 && buffer.byteLength === 4 << 20 && fs.fstatSync(fd).ino === ino) {
        done = true;
        fs.appendFileSync(file, 'x');
      }
      return n;
    }) as typeof fs.readSync);
    return { restore: () => spy.mockRestore() };
  }

  it('pack_of_a_file_that_grows_while_streamed: INPUT_CHANGED naming it; with skip, no byte of it stays in the shard', async () => {
    const src = bigTree();
    const victim = path.join(src, 'd/big.bin');
    const grow = growDuringStream(victim);
    try {
      const err = (await withEnv(streamed, () => pack({ source: src, out: path.join(tmpDir(), 'ds'), readThreads: 0 })).catch((e: unknown) => e)) as { code: string; message: string };
      expect(err.code).toBe(ErrorCodes.INPUT_CHANGED);
      expect(err.message).toContain(victim);
    } finally {
      grow.restore();
    }
    fs.writeFileSync(victim, noise(1, (9 << 20) + 77));
    const again = growDuringStream(victim);
    let r;
    try {
      r = await withEnv(streamed, () => pack({ source: src, out: path.join(tmpDir(), 'ds'), readThreads: 0, onError: 'skip', shardBytes: 1 << 20 }));
    } finally {
      again.restore();
    }
    expect(r.manifest.skipped.map((s) => s.path)).toEqual(['d/big.bin']);
    expect(r.writer.samples).toBe(3);
    expect(r.writer.storedBytes).toBe(5 + (4 << 20) + 512 + 4);
    // counted once, for d/zero.bin: the failed sample took its count back
    expect(r.writer.oversizeSamples).toBe(1);
    // the same shards and index as a pack of the tree without that sample (one shard per sample: a.txt's was closed
    // for d/big, whose own shard went with it)
    fs.rmSync(victim);
    fs.rmSync(path.join(src, 'd/big.json'));
    const ref = await pack({ source: src, out: path.join(tmpDir(), 'ref'), readThreads: 0, shardBytes: 1 << 20 });
    expect(shardBytesOf(r.out)).toEqual(shardBytesOf(ref.out));
    expect((await verifyDataset(r.out)).ok).toBe(true);
  });

  it('resume_after_a_streamed_sample_failed: continues to the bytes of an uninterrupted pack', async () => {
    const src = bigTree();
    const victim = path.join(src, 'd/zero.bin');
    // one shard per sample: the first run finishes a.txt's and d/big's shards, then stops on d/zero
    const base = { source: src, out: path.join(tmpDir(), 'ds'), readThreads: 0, shardBytes: 1 << 20 };
    const grow = growDuringStream(victim);
    try {
      const err = (await withEnv(streamed, () => pack(base)).catch((e: unknown) => e)) as { code: string };
      expect(err.code).toBe(ErrorCodes.INPUT_CHANGED);
    } finally {
      grow.restore();
    }
    expect(fs.readdirSync(base.out).filter((f) => f.endsWith('.tar'))).toEqual(['shard-000000.tar', 'shard-000001.tar']);
    const r = await withEnv(streamed, () => pack({ ...base, resume: true }));
    expect(r.resumedSamples).toBe(2);
    const ref = await pack({ ...base, out: path.join(tmpDir(), 'ref') });
    expect(shardBytesOf(r.out)).toEqual(shardBytesOf(ref.out));
    expect(r.manifest.shards).toEqual(ref.manifest.shards);
  });
});

describe('the header of a streamed member of 8 GiB or more', () => {
  it('streamed_header_past_8GiB: GNU tar and Python tarfile read its pax size (a sparse tar around it)', () => {
    const src = tmpDir();
    const file = path.join(src, 'huge.bin');
    const size = 8 * 2 ** 30 + 1; // past ustar's 11 octal digits
    fs.closeSync(fs.openSync(file, 'w'));
    fs.truncateSync(file, size); // sparse: never read here
    const sample = openStreamedSample('d/huge', ['bin'], [file], 'tar', Codec.none);
    closeStreamedSample(sample.members);
    const header = sample.headers[0]!;
    expect(sample.bytes).toBe(header.length + size + tarPadding(size));
    // the header, then the data and padding as a hole, then the end of the archive
    const tar = path.join(tmpDir(), 'a.tar');
    fs.writeFileSync(tar, header);
    fs.truncateSync(tar, sample.bytes + 2 * 512);
    hasTool('tar');
    expect(run('tar', ['-tvf', tar]).trim().split(/\s+/).filter((_, i) => i === 2 || i === 5)).toEqual([String(size), 'd/huge.bin']);
    hasTool('python3');
    const listed = run('python3', ['-c', 'import sys, tarfile\nprint([(m.name, m.size) for m in tarfile.open(sys.argv[1])])', tar]).trim();
    expect(listed).toBe(`[('d/huge.bin', ${size})]`);
  });
});

describe('get --out and extract stream the members they cannot hold', () => {
  async function bigDataset(compress: 'none' | 'lz4'): Promise<string> {
    const dir = path.join(tmpDir(), 'ds');
    const w = new DatasetWriter({ dir, compress });
    for (let i = 0; i < 6; i++) w.add({ key: `d/k${i}`, members: { bin: noise(i, 30_000 + i * 5000), txt: Buffer.from(`t${i}`.repeat(200)) } });
    await w.finish();
    return dir;
  }
  const streamed = (): void => {
    process.env.SHARDKIT_TEST_MAX_SPAN_BYTES = '4096';
    process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES = '7000';
  };

  for (const compress of ['none', 'lz4'] as const) {
    it(`get_out_of_a_streamed_member (${compress}): the same bytes; a damaged one is CHECKSUM and leaves no file`, async () => {
      const dir = await bigDataset(compress);
      streamed();
      const ds = await openDataset(dir);
      const out = path.join(tmpDir(), 'm.bin');
      await writeMember(ds, 'd/k3', 'bin', { file: out });
      expect(fs.readFileSync(out).equals(noise(3, 45_000))).toBe(true);
      const pieces: Buffer[] = [];
      await writeMember(ds, 'd/k3', 'bin', { write: async (p) => void pieces.push(Buffer.from(p)) });
      expect(Buffer.concat(pieces).equals(noise(3, 45_000))).toBe(true);
      await ds.close();
      if (compress === 'lz4') return;
      // one byte of k4's bin flipped in the shard
      const shard = path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith('.tar'))!);
      const bytes = fs.readFileSync(shard);
      const k4Bytes = bytes.indexOf(noise(4, 50_000).subarray(40_000, 40_064));
      expect(k4Bytes).toBeGreaterThanOrEqual(0);
      flipBits(bytes, k4Bytes + 10, 0xff);
      fs.writeFileSync(shard, bytes);
      const damaged = await openDataset(dir, { checkShards: 'size' });
      const target = path.join(tmpDir(), 'bad.bin');
      const err = (await writeMember(damaged, 'd/k4', 'bin', { file: target }).catch((e: unknown) => e)) as { code: string };
      expect(err.code).toBe(ErrorCodes.CHECKSUM);
      expect(fs.readdirSync(path.dirname(target))).toEqual([]);
      await damaged.close();
    });

    it(`extract_of_streamed_samples (${compress}): every file as packed`, async () => {
      const dir = await bigDataset(compress);
      streamed();
      const target = path.join(tmpDir(), 'x');
      const r = await extractDataset(dir, target);
      expect(r.files).toBe(12);
      for (let i = 0; i < 6; i++) {
        expect(fs.readFileSync(path.join(target, 'd', `k${i}.bin`)).equals(noise(i, 30_000 + i * 5000))).toBe(true);
        expect(fs.readFileSync(path.join(target, 'd', `k${i}.txt`), 'utf8')).toBe(`t${i}`.repeat(200));
      }
    });
  }
});
