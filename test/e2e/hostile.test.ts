/**
 * Hostile input and faults against the BUILT CLI and library (run `npm run build` first): every user error is one
 * line `shardkit: CODE: message` with exit 1 or 2 and no stack; damage is found and named; limits hold; many
 * processes read one dataset correctly.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { compressFrameSync } from 'lz4-napi';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { lz4DecompressMember } from '../../formats/lz4.js';
import { DatasetWriter, INDEX_FILE } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { flipBits } from '../helpers/checked.js';
import { CLI } from '../helpers/cli.js';
import { tmpDir } from '../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const N = 200;
const keyOf = (i: number) => `c${i % 4}/${String(i).padStart(4, '0')}`;
function noise(seed: number, n: number): Buffer {
  let x = seed + 1;
  return Buffer.from(Uint8Array.from({ length: n }, () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24));
}
const sampleOf = (i: number) => ({ key: keyOf(i), members: { jpg: noise(i, 300 + (i % 31) * 40), cls: Buffer.from(String(i % 4)) } });

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** One line, the contract's shape, no stack trace. */
function expectOneLineError(r: { status: number | null; stderr: string }, code: string, status = 1): void {
  expect(r.stderr).toMatch(new RegExp(`^shardkit: ${code}: [^\\n]+\\n$`));
  expect(r.stderr).not.toMatch(/\n\s+at /);
  expect(r.status).toBe(status);
}

let clean: string;
function copy(): string {
  const dir = tmpDir();
  for (const f of fs.readdirSync(clean)) fs.copyFileSync(path.join(clean, f), path.join(dir, f));
  return dir;
}
function editManifest(dir: string, edit: (m: Record<string, any>) => void): void {
  const file = path.join(dir, 'manifest.json');
  const m = JSON.parse(fs.readFileSync(file, 'utf8'));
  edit(m);
  fs.writeFileSync(file, JSON.stringify(m, null, 2));
}

beforeAll(async () => {
  expect(fs.existsSync(CLI), 'run `npm run build` first').toBe(true);
  clean = tmpDir();
  const w = new DatasetWriter({ dir: clean, shardBytes: 32 * 1024, pageSize: 1024 });
  for (let i = 0; i < N; i++) w.add(sampleOf(i));
  await w.finish();
});

describe('faults are detected, each with its own code, in one line', () => {
  it('not a dataset, bad usage', () => {
    expectOneLineError(cli(['info', tmpDir()]), ErrorCodes.NOT_A_DATASET);
    expectOneLineError(cli(['ls', clean, '--limit', '-3']), ErrorCodes.INVALID_ARG, 2);
    // commander's own parse errors: the first line has the contract's shape (main.ts adds a usage hint line)
    const usage = cli(['info']);
    expect(usage.stderr.split('\n')[0]).toMatch(/^shardkit: SHARDKIT_ERR_INVALID_ARG: /);
    expect(usage.status).toBe(2);
  });

  it('an http(s) URL where a command needs a local path: exit 2, one line, no credentials, nothing created', () => {
    const url = 'https://user:secret@127.0.0.1:9/data?X-Amz-Signature=token';
    const cwd = tmpDir();
    const src = tmpDir();
    fs.writeFileSync(path.join(src, 'a.txt'), 'a');
    const tar = path.join(clean, fs.readdirSync(clean).find((f) => f.endsWith('.tar')) as string);
    const runs: string[][] = [
      ['pack', url],
      ['pack', src, '--out', url],
      ['merge', clean, '--out', url],
      ['derive', clean, '--out', url, '--pass', 'tag=dirname'],
      ['index', tar, '--out', url],
      ['extract', clean, url],
      ['synth', url, '--samples', '1', '--classes', '1'],
      ['reindex', url],
      ['bench', src, url],
      ['bench', src, clean, '--out', url],
      ['pack', src, '--out', path.join(tmpDir(), 'ds'), '--pass-module', url],
      ['pack', src, '--out', path.join(tmpDir(), 'ds'), '--pass', `tag=${url}`],
      ['info', clean, '-H', `@${url}`],
      ['merge', url, '--out', path.join(tmpDir(), 'merged')],
      ['index', url, '--out', path.join(tmpDir(), 'indexed')],
      ['get', clean, keyOf(0), '--ext', 'cls', '--out', url],
    ];
    for (const args of runs) {
      const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', cwd });
      expectOneLineError(r, ErrorCodes.INVALID_ARG, 2);
      expect(r.stderr, args.join(' ')).toMatch(/must be a local path, not the URL https:\/\/127\.0\.0\.1:9\/data\?\.\.\./);
      expect(r.stdout).toBe('');
      expect(r.stderr).not.toMatch(/secret|token/);
    }
    // taken as a relative path, the URL had become a directory named after it
    expect(fs.readdirSync(cwd)).toEqual([]);
  });

  it('at open: truncated index, missing index, index of another dataset, hand-edited manifest, future versions', async () => {
    const truncated = copy();
    const idx = path.join(truncated, INDEX_FILE);
    fs.truncateSync(idx, fs.statSync(idx).size - 10);
    expectOneLineError(cli(['info', truncated]), ErrorCodes.TRUNCATED);

    const missing = copy();
    fs.rmSync(path.join(missing, INDEX_FILE));
    expectOneLineError(cli(['info', missing]), ErrorCodes.TRUNCATED);

    const other = tmpDir();
    const w = new DatasetWriter({ dir: other, shardBytes: 32 * 1024, pageSize: 1024 });
    for (let i = 0; i < N; i++) w.add({ ...sampleOf(i), members: { ...sampleOf(i).members, cls: Buffer.from('x') } });
    await w.finish();
    const swapped = copy();
    fs.copyFileSync(path.join(other, INDEX_FILE), path.join(swapped, INDEX_FILE));
    expectOneLineError(cli(['info', swapped]), ErrorCodes.INDEX_MISMATCH);

    const edited = copy();
    editManifest(edited, (m) => (m.shards[0].samples += 1));
    expectOneLineError(cli(['info', edited]), ErrorCodes.BAD_MANIFEST);
    const edited2 = copy();
    editManifest(edited2, (m) => (m.shards[0].crc32c = '00000000'));
    expectOneLineError(cli(['info', edited2]), ErrorCodes.INDEX_MISMATCH);
    for (const pageSize of [0, 3000, 512, 1 << 17]) {
      const badPage = copy();
      editManifest(badPage, (m) => (m.index.pageSize = pageSize));
      expectOneLineError(cli(['info', badPage]), ErrorCodes.BAD_MANIFEST);
    }
    for (const part of [{ index: 3, count: 3 }, { index: -1, count: 2 }, { index: 0 }, 'a']) {
      const badPart = copy();
      editManifest(badPart, (m) => (m.part = part));
      expectOneLineError(cli(['info', badPart]), ErrorCodes.BAD_MANIFEST);
    }
    // a name for two files: merge or reindex would write one over the other
    for (const edit of [(m: any) => (m.files = [INDEX_FILE]), (m: any) => (m.files = ['manifest.json']), (m: any) => (m.files = [m.shards[0].file]), (m: any) => (m.files = ['a', 'a'])]) {
      const twoInOne = copy();
      editManifest(twoInOne, edit);
      expectOneLineError(cli(['info', twoInOne]), ErrorCodes.BAD_MANIFEST);
    }
    const notJson = copy();
    fs.writeFileSync(path.join(notJson, 'manifest.json'), '{"format": ');
    expectOneLineError(cli(['ls', notJson]), ErrorCodes.BAD_MANIFEST);

    const future = copy();
    editManifest(future, (m) => (m.formatVersion = 99));
    expectOneLineError(cli(['info', future]), ErrorCodes.UNSUPPORTED_VERSION);
    const futureIndex = copy();
    const bytes = fs.readFileSync(path.join(futureIndex, INDEX_FILE));
    bytes[8] = 7; // header version field
    fs.writeFileSync(path.join(futureIndex, INDEX_FILE), bytes);
    expectOneLineError(cli(['info', futureIndex]), ErrorCodes.UNSUPPORTED_VERSION);
  });

  it('at first access of that shard: missing shard, truncated shard, replaced shard', async () => {
    const key = keyOf(0);
    const missing = copy();
    fs.rmSync(path.join(missing, 'shard-000000.tar'));
    expect(cli(['info', missing]).status).toBe(0); // opening reads no shard
    expectOneLineError(cli(['get', missing, key, '--ext', 'cls']), ErrorCodes.SHARD_MISSING);

    const truncated = copy();
    fs.truncateSync(path.join(truncated, 'shard-000000.tar'), 5000);
    expectOneLineError(cli(['get', truncated, key, '--ext', 'cls']), ErrorCodes.TRUNCATED);

    const replaced = copy();
    const b = fs.readFileSync(path.join(replaced, 'shard-000000.tar'));
    flipBits(b, 100, 1);
    fs.writeFileSync(path.join(replaced, 'shard-000000.tar'), b);
    expectOneLineError(cli(['get', replaced, key, '--ext', 'cls']), ErrorCodes.SHARD_MISMATCH);

    // a FIFO or a directory where a shard or the manifest should be: refused at once (an open would wait forever for
    // a FIFO's writer)
    for (const [name, make] of [['shard-000000.tar', 'fifo'], ['manifest.json', 'fifo'], ['shard-000000.tar', 'dir']] as const) {
      const odd = copy();
      fs.rmSync(path.join(odd, name));
      if (make === 'fifo') expect(spawnSync('mkfifo', [path.join(odd, name)]).status).toBe(0);
      else fs.mkdirSync(path.join(odd, name));
      const args = name === 'manifest.json' ? ['info', odd] : ['get', odd, key, '--ext', 'cls'];
      const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 20_000 });
      expectOneLineError({ status: r.status, stderr: r.stderr }, ErrorCodes.UNSAFE_PATH);
    }
  });

  it('a flipped member byte: the reader raises CHECKSUM (never wrong bytes) and verify exits 1 naming the sample', async () => {
    const dir = copy();
    const ds = await openDataset(dir);
    const entry = await ds.locate(keyOf(7));
    const jpg = entry.members.find((m) => m.ext === 'jpg')!;
    const shard = path.join(dir, ds.shardName(entry.shard));
    await ds.close();
    const b = fs.readFileSync(shard);
    flipBits(b, entry.offset + jpg.offset + 150, 0x40);
    fs.writeFileSync(shard, b);
    const ds2 = await openDataset(dir, { checkShards: 'size' });
    await expect(ds2.get(keyOf(7))).rejects.toMatchObject({ code: ErrorCodes.CHECKSUM, key: keyOf(7) });
    await ds2.close();
    const got = cli(['get', dir, keyOf(7), '--ext', 'jpg']);
    expectOneLineError(got, ErrorCodes.CHECKSUM);
    const v = cli(['verify', dir, '--json']);
    expect(v.status).toBe(1);
    const report = JSON.parse(v.stdout);
    expect(report.damaged.map((d: { key: string }) => d.key)).toEqual([keyOf(7)]);
    expect(cli(['verify', clean]).status).toBe(0);
  });

  it('verify reports a shard it cannot read and goes on to the others, in text and --json', async () => {
    const dir = copy();
    const ds = await openDataset(dir);
    const entry = (await ds.locate(keyOf(150)))!;
    const jpg = entry.members.find((m) => m.ext === 'jpg')!;
    const shard = ds.shardName(entry.shard);
    await ds.close();
    expect(shard).not.toBe('shard-000000.tar');
    const b = fs.readFileSync(path.join(dir, shard));
    flipBits(b, entry.offset + jpg.offset + 10, 0x01);
    fs.writeFileSync(path.join(dir, shard), b);
    // a directory where shard 0 should be: refused when it is opened (UNSAFE_PATH); the unit test fails the reads of a
    // regular file
    fs.rmSync(path.join(dir, 'shard-000000.tar'));
    fs.mkdirSync(path.join(dir, 'shard-000000.tar'));
    const v = cli(['verify', dir, '--json']);
    expect(v.status).toBe(1);
    expect(v.stderr).toBe('');
    const report = JSON.parse(v.stdout);
    expect(report.problems).toContainEqual({ file: 'shard-000000.tar', what: expect.any(String) });
    expect(report.damaged).toEqual([expect.objectContaining({ key: keyOf(150), shard })]);
    const text = cli(['verify', dir]);
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(/^problem  shard-000000\.tar: /m);
    expect(text.stdout).toContain(`damaged  ${keyOf(150)}  (${shard} @ `);
  });
});

describe('limits', () => {
  it('an LZ4 frame claiming more blocks than its size needs is refused before decompressing', () => {
    const data = Buffer.alloc(9 << 20, 0x61); // three 4 MiB blocks that compress to almost nothing
    const frame = compressFrameSync(data);
    expect(lz4DecompressMember(frame, data.length, 'ok').length).toBe(data.length);
    expect(() => lz4DecompressMember(frame, 10, 'bomb')).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_SHARD, message: expect.stringMatching(/more blocks/) }));
  });

  it('maxMemberBytes refuses an oversized member with TOO_LARGE', async () => {
    const ds = await openDataset(clean, { maxMemberBytes: 100 });
    await expect(ds.get(keyOf(3))).rejects.toMatchObject({ code: ErrorCodes.TOO_LARGE });
    expect(Object.keys((await openDataset(clean)).getSync(keyOf(3)).members)).toEqual(['cls', 'jpg']);
    await ds.close();
  });
});

describe('member names', () => {
  it('a member named "__proto__" is an own member on every read path, alone or next to another', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir });
    const alone = { key: 'a', members: Object.defineProperty({}, '__proto__', { value: Buffer.from('x1'), enumerable: true }) as Record<string, Uint8Array> };
    const pair = { key: 'b', members: Object.defineProperty({ txt: Buffer.from('t') }, '__proto__', { value: Buffer.from('y22'), enumerable: true }) as Record<string, Uint8Array> };
    w.add(alone);
    w.add(pair);
    await w.finish();
    for (const native of [true, false]) {
      const ds = await openDataset(dir, { native });
      const loaded = [...(await ds.loader({ batchSize: 2 }).next()).value!, ...(await ds.loader({ batchSize: 2, maxReadBytes: 0 }).next()).value!];
      const reads = [await ds.get('a'), ds.getSync('a'), ds.atViewSync(0), await ds.get('b'), ds.getSync('b'), ds.atSync(1), ...loaded];
      for (const sample of reads) {
        expect(Object.getPrototypeOf(sample.members)).toBe(Object.prototype);
        expect(Object.keys(sample.members)).toContain('__proto__');
        const want = sample.key === 'a' ? 'x1' : 'y22';
        expect(Buffer.from(Object.getOwnPropertyDescriptor(sample.members, '__proto__')!.value as Uint8Array).toString()).toBe(want);
      }
      await ds.close();
    }
  });
});

describe('concurrency', () => {
  it('four processes reading every sample at once get the right bytes', async () => {
    const script = path.join(tmpDir(), 'reader.mjs');
    fs.writeFileSync(
      script,
      `import { createHash } from 'node:crypto';
import { openDataset } from ${JSON.stringify(path.join(ROOT, 'dist/src/read/dataset.js'))};
const ds = await openDataset(process.argv[2]);
const order = [...Array(ds.size).keys()].sort((a, b) => ((a * 7919 + Number(process.argv[3])) % 211) - ((b * 7919 + Number(process.argv[3])) % 211));
const byKey = new Map();
for (const i of order) byKey.set(i, await ds.at(i));
const h = createHash('sha256');
const keys = [...byKey.values()].map((s) => s.key).sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1));
const samples = new Map([...byKey.values()].map((s) => [s.key, s]));
for (const k of keys) { const s = samples.get(k); h.update(s.key).update(s.members.cls).update(s.members.jpg); }
await ds.close();
process.stdout.write(h.digest('hex'));
`,
    );
    const run = promisify(execFile);
    const results = await Promise.all([0, 1, 2, 3].map((seed) => run(process.execPath, [script, clean, String(seed)])));
    // keys in byte order, as the index keeps them
    const digest = sortedWantDigest();
    for (const r of results) expect(r.stdout).toBe(digest);
  });
});

function sortedWantDigest(): string {
  const h = createHash('sha256');
  for (const i of [...Array(N).keys()].sort((a, b) => (Buffer.from(keyOf(a)) < Buffer.from(keyOf(b)) ? -1 : 1))) {
    const s = sampleOf(i);
    h.update(s.key).update(s.members.cls).update(s.members.jpg);
  }
  return h.digest('hex');
}
