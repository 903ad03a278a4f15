/**
 * `index` adopts tars made by other tools (GNU tar, Python's tarfile, tar-stream) without rewriting them, and
 * applies the SPEC's rules to hostile entries: links, devices, `..`, absolute paths, duplicates, non-UTF-8 names,
 * keys that come back after another key.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import tarStream from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { adoptTars } from '../../src/adopt/adopt-tars.js';
import { reindexDataset } from '../../src/adopt/reindex.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { flipBits } from '../helpers/checked.js';
import { hasTool, run } from '../helpers/tools.js';
import { tmpDir } from '../helpers/tmp.js';

const content = (name: string): Buffer => Buffer.from(createHash('sha256').update(name).digest('hex').repeat(1 + (name.length % 40)));

function writeTree(root: string, names: string[]): void {
  for (const n of names) {
    fs.mkdirSync(path.dirname(path.join(root, n)), { recursive: true });
    fs.writeFileSync(path.join(root, n), content(n));
  }
}

async function samplesOf(dir: string): Promise<Map<string, Record<string, string>>> {
  const ds = await openDataset(dir);
  const out = new Map<string, Record<string, string>>();
  for await (const key of ds.keys()) {
    const s = await ds.get(key);
    out.set(key, Object.fromEntries(Object.entries(s.members).map(([ext, b]) => [ext, Buffer.from(b).toString()])));
  }
  await ds.close();
  return out;
}

function tarStreamTar(file: string, entries: (Parameters<tarStream.Pack['entry']>[0] & { body: Buffer })[]): Promise<void> {
  const pack = tarStream.pack();
  const out = fs.createWriteStream(file);
  pack.pipe(out);
  for (const { body, ...h } of entries) pack.entry(h, body);
  pack.finalize();
  return new Promise((resolve, reject) => {
    out.on('finish', resolve);
    out.on('error', reject);
  });
}

const NAMES = ['a/0001.jpg', 'a/0001.cls', 'a/0002.jpg', 'a/0002.seg.png', 'a/0002.cls', 'b/0003.json', `${'long/'.repeat(30)}0004.bin`, `b/${'n'.repeat(150)}.txt`];

describe('adoptTars', () => {
  it('indexes a GNU tar (long names) without rewriting it; every member reads back', async () => {
    hasTool('tar');
    const src = tmpDir();
    writeTree(src, NAMES);
    const tarFile = path.join(tmpDir(), 'gnu.tar');
    run('tar', ['--format=gnu', '-C', src, '-cf', tarFile, ...NAMES]);
    const before = fs.readFileSync(tarFile);
    const out = path.join(tmpDir(), 'ds');
    const r = await adoptTars([tarFile], { out });
    expect(r.shards).toEqual([{ input: tarFile, file: 'gnu.tar', how: 'hardlink' }]);
    expect(fs.readFileSync(tarFile).equals(before)).toBe(true);
    expect(fs.statSync(path.join(out, 'gnu.tar')).ino).toBe(fs.statSync(tarFile).ino);
    const got = await samplesOf(out);
    expect(got.get('a/0002')).toEqual({ jpg: content('a/0002.jpg').toString(), 'seg.png': content('a/0002.seg.png').toString(), cls: content('a/0002.cls').toString() });
    expect(got.get(`${'long/'.repeat(30)}0004`)).toEqual({ bin: content(`${'long/'.repeat(30)}0004.bin`).toString() });
    expect(got.size).toBe(5);
    expect((await verifyDataset(out)).ok).toBe(true);
  });

  it('indexes pax tars from Python tarfile, tar from ./ and applies the rules to hostile entries', async () => {
    hasTool('python3');
    const dir = tmpDir();
    const tarFile = path.join(dir, 'py.tar');
    const script = `
import tarfile, io, sys
def add(t, name, data=b'x', type=tarfile.REGTYPE, link=''):
    i = tarfile.TarInfo(name); i.type = type; i.linkname = link; i.size = len(data) if type == tarfile.REGTYPE else 0
    t.addfile(i, io.BytesIO(data) if type == tarfile.REGTYPE else None)
with tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT) as t:
    add(t, './k/1.jpg', b'one-jpg')
    add(t, './k/1.txt', b'one-txt')
    add(t, 'k/1.txt', b'dup')                       # duplicate member
    add(t, 'k/link.jpg', type=tarfile.SYMTYPE, link='/etc/passwd')
    add(t, 'k/hard.jpg', type=tarfile.LNKTYPE, link='k/1.jpg')
    add(t, 'k/dev.bin', type=tarfile.CHRTYPE)
    add(t, 'k/fifo.bin', type=tarfile.FIFOTYPE)
    add(t, 'k/dir', type=tarfile.DIRTYPE)
    add(t, '../evil.jpg', b'evil')
    add(t, '/abs/evil.jpg', b'evil')
    add(t, 'k/2.jpg', b'two')
    add(t, 'k/noext', b'noext')
    add(t, 'k/3.jpg', b'three')
    add(t, 'k/2.cls', b'two-again')                 # key k/2 comes back after k/3
    add(t, 'unicode/日本.txt', 'ü'.encode())
`;
    run('python3', ['-c', script, tarFile]);
    // a non-UTF-8 name, written raw by tar-stream into a second tar
    const raw = path.join(dir, 'raw.tar');
    await tarStreamTar(raw, [{ name: 'r/1.jpg', body: Buffer.from('r1') }]);
    const rawBytes = fs.readFileSync(raw);
    rawBytes[0] = 0xff; // name "\xff/1.jpg"; fix the header checksum
    rawBytes.fill(0x20, 148, 156);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += rawBytes[i]!;
    rawBytes.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    fs.writeFileSync(raw, rawBytes);

    const out = path.join(tmpDir(), 'ds');
    const r = await adoptTars([tarFile, raw], { out });
    const got = await samplesOf(out);
    expect([...got.keys()]).toEqual(['k/1', 'k/2', 'k/3', 'unicode/日本']);
    expect(got.get('k/1')).toEqual({ jpg: 'one-jpg', txt: 'one-txt' });
    expect(got.get('k/2')).toEqual({ jpg: 'two' });
    const reasons = Object.fromEntries(r.manifest.skipped.map((s) => [s.path, s.reason]));
    expect(reasons['py.tar:k/1.txt']).toMatch(/duplicate member/);
    expect(reasons['py.tar:k/link.jpg']).toMatch(/symbolic link/);
    expect(reasons['py.tar:k/hard.jpg']).toMatch(/hard link/);
    expect(reasons['py.tar:k/dev.bin']).toMatch(/character device/);
    expect(reasons['py.tar:k/fifo.bin']).toMatch(/fifo/);
    expect(reasons['py.tar:k/dir/']).toMatch(/directory/);
    expect(reasons['py.tar:../evil.jpg']).toMatch(/\.\./);
    expect(reasons['py.tar:/abs/evil.jpg']).toMatch(/absolute/);
    expect(reasons['py.tar:k/noext']).toMatch(/no extension/);
    expect(reasons['py.tar:k/2']).toMatch(/must be adjacent/);
    expect(reasons['raw.tar:\u00ff/1.jpg']).toMatch(/UTF-8/);
    expect(fs.existsSync(path.join(out, '..', 'evil.jpg'))).toBe(false);
    const v = await verifyDataset(out);
    expect(v.problems).toEqual([]);
    expect(v.ok).toBe(true);
    // reindex of an adopted dataset follows the same rules and gives the same bytes
    const index = fs.readFileSync(path.join(out, 'index.skidx'));
    fs.rmSync(path.join(out, 'index.skidx'));
    await reindexDataset(out);
    expect(fs.readFileSync(path.join(out, 'index.skidx')).equals(index)).toBe(true);
  });

  it('handles tar-stream pax headers, big members and two inputs with one basename', async () => {
    const one = path.join(tmpDir(), 'data.tar');
    const two = path.join(tmpDir(), 'data.tar');
    const big = Buffer.alloc(3 * 1024 * 1024 + 7, 0x61);
    await tarStreamTar(one, [
      { name: `x/${'é'.repeat(80)}.bin`, body: Buffer.from('pax name') },
      { name: 'x/big.raw', body: big },
      { name: 'x/big.cls', body: Buffer.from('7') },
    ]);
    await tarStreamTar(two, [{ name: 'y/1.txt', body: Buffer.from('second') }]);
    const out = path.join(tmpDir(), 'ds');
    const r = await adoptTars([one, two], { out });
    expect(r.shards.map((s) => s.file)).toEqual(['data.tar', 'data-1.tar']);
    const ds = await openDataset(out);
    expect(Buffer.from((await ds.get(`x/${'é'.repeat(80)}`)).members.bin!).toString()).toBe('pax name');
    const s = await ds.get('x/big');
    expect(Buffer.from(s.members.raw!).equals(big)).toBe(true);
    expect(new TextDecoder().decode((await ds.get('y/1')).members.txt)).toBe('second');
    await ds.close();
    await expect(adoptTars([one], { out })).rejects.toMatchObject({ code: ErrorCodes.OUTPUT_EXISTS });
    const again = await adoptTars([one, two], { out, force: true });
    expect(again.shards.map((x) => x.file)).toEqual(['data.tar', 'data-1.tar']);
    // a --force run that fails on a bad tar leaves the dataset there as it was
    const before = await samplesOf(out);
    const bad = path.join(tmpDir(), 'bad.tar');
    fs.writeFileSync(bad, Buffer.alloc(4096, 0x41));
    await expect(adoptTars([one, bad], { out, force: true })).rejects.toMatchObject({ code: ErrorCodes.CORRUPT_SHARD });
    expect(await samplesOf(out)).toEqual(before);
  });

  it('falls back to symlinks when asked (or across filesystems) and indexes tars already in place', async () => {
    const src = path.join(tmpDir(), 's.tar');
    await tarStreamTar(src, [{ name: 'a/1.txt', body: Buffer.from('1') }]);
    const out = path.join(tmpDir(), 'ds');
    const r = await adoptTars([src], { out, link: 'symlink' });
    expect(r.shards[0]!.how).toBe('symlink');
    expect(fs.lstatSync(path.join(out, 's.tar')).isSymbolicLink()).toBe(true);
    const inPlace = tmpDir();
    fs.copyFileSync(src, path.join(inPlace, 'p.tar'));
    const r2 = await adoptTars([path.join(inPlace, 'p.tar')], { out: inPlace });
    expect(r2.shards[0]!.how).toBe('in-place');
    expect((await verifyDataset(inPlace)).ok).toBe(true);
  });

  it('--out: refuses a non-empty directory that holds no dataset, --force or not, and overwrites nothing there', async () => {
    const t = path.join(tmpDir(), 't.tar');
    await tarStreamTar(t, [{ name: 'a/1.txt', body: Buffer.from('1') }]);
    const out = tmpDir();
    fs.writeFileSync(path.join(out, 'index.skidx'), 'MY OWN INDEX');
    fs.writeFileSync(path.join(out, 'notes.txt'), 'my notes');
    for (const force of [false, true]) {
      await expect(adoptTars([t], { out, force })).rejects.toMatchObject({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringMatching(/is not empty and holds no shardkit dataset \(index\.skidx, notes\.txt\)/) });
    }
    expect(fs.readdirSync(out).sort()).toEqual(['index.skidx', 'notes.txt']);
    expect(fs.readFileSync(path.join(out, 'index.skidx'), 'utf8')).toBe('MY OWN INDEX');
  });

  it('--out the directory of its own tars: indexes them in place, deletes none, and --force re-indexes', async () => {
    const dir = tmpDir();
    const tars = ['s-0.tar', 's-1.tar'].map((n) => path.join(dir, n));
    await tarStreamTar(tars[0]!, [{ name: 'a/1.txt', body: Buffer.from('one') }]);
    await tarStreamTar(tars[1]!, [{ name: 'b/2.txt', body: Buffer.from('two') }]);
    const bytes = tars.map((t) => fs.readFileSync(t));
    const r = await adoptTars(tars, { out: dir });
    expect(r.shards.map((x) => x.how)).toEqual(['in-place', 'in-place']);
    expect(fs.readdirSync(dir).sort()).toEqual(['index.skidx', 'manifest.json', 's-0.tar', 's-1.tar', 'shardindex.json']);
    // a third tar added: --force replaces the index and manifest, the tars stay as they were
    const third = path.join(dir, 's-2.tar');
    await tarStreamTar(third, [{ name: 'c/3.txt', body: Buffer.from('three') }]);
    await expect(adoptTars([...tars, third], { out: dir })).rejects.toMatchObject({ code: ErrorCodes.OUTPUT_EXISTS });
    await adoptTars([...tars, third], { out: dir, force: true });
    expect(tars.map((t) => fs.readFileSync(t))).toEqual(bytes);
    expect([...(await samplesOf(dir)).keys()]).toEqual(['a/1', 'b/2', 'c/3']);
    expect((await verifyDataset(dir)).ok).toBe(true);
    // without a manifest, a file that is not one of the tars to index makes the directory someone else's
    fs.rmSync(path.join(dir, 'manifest.json'));
    fs.writeFileSync(path.join(dir, 'README'), 'mine');
    await expect(adoptTars(tars, { out: dir })).rejects.toMatchObject({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringContaining('s-2.tar') });
    fs.rmSync(path.join(dir, 'README'));
    fs.rmSync(third);
    // what an interrupted index leaves (its index file, its work directory) does not
    fs.mkdirSync(path.join(dir, '.shardkit-index-work'));
    await adoptTars(tars, { out: dir });
    expect([...(await samplesOf(dir)).keys()]).toEqual(['a/1', 'b/2']);
  });

  it('--force killed between moving the old manifest aside and committing: the next index is refused, --force finishes', async () => {
    const src = tmpDir();
    const old = ['o-0.tar', 'o-1.tar'].map((n) => path.join(src, n));
    await tarStreamTar(old[0]!, [{ name: 'a/1.txt', body: Buffer.from('one') }]);
    await tarStreamTar(old[1]!, [{ name: 'b/2.txt', body: Buffer.from('two') }]);
    const fresh = path.join(src, 'n-0.tar');
    await tarStreamTar(fresh, [{ name: 'c/3.txt', body: Buffer.from('three') }]);
    const out = tmpDir();
    await adoptTars(old, { out });
    // the state such a kill leaves: no manifest (moved aside), the old links, maybe part of a new index
    fs.renameSync(path.join(out, 'manifest.json'), path.join(out, '.shardkit-replaced-manifest.json'));
    fs.rmSync(path.join(out, 'index.skidx'));
    await expect(adoptTars([fresh], { out })).rejects.toMatchObject({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringContaining('a killed index --force was replacing it') });
    await adoptTars([fresh], { out, force: true });
    expect(fs.existsSync(path.join(out, '.shardkit-replaced-manifest.json'))).toBe(false);
    expect([...(await samplesOf(out)).keys()]).toEqual(['c/3']);
    expect((await verifyDataset(out)).ok).toBe(true);
  });

  it('--force does not replace a dataset that pack wrote (its shards would stay), and leaves it whole', async () => {
    const t = path.join(tmpDir(), 't.tar');
    await tarStreamTar(t, [{ name: 'a/1.txt', body: Buffer.from('1') }]);
    const out = tmpDir();
    const w = new DatasetWriter({ dir: out });
    w.add({ key: 'k/1', members: { txt: Buffer.from('packed') } });
    await w.finish();
    const before = fs.readdirSync(out).sort();
    await expect(adoptTars([t], { out, force: true })).rejects.toMatchObject({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringMatching(/pack, merge or derive wrote/) });
    expect(fs.readdirSync(out).sort()).toEqual(before);
    expect((await verifyDataset(out)).ok).toBe(true);
  });

  it('fails with clear codes on a damaged header, a truncated tar, and bad arguments', async () => {
    const t = path.join(tmpDir(), 't.tar');
    await tarStreamTar(t, [{ name: 'a/1.txt', body: Buffer.alloc(2000, 1) }]);
    const bytes = fs.readFileSync(t);
    fs.writeFileSync(t, bytes.subarray(0, 1200));
    await expect(adoptTars([t], { out: path.join(tmpDir(), 'o') })).rejects.toMatchObject({ code: ErrorCodes.TRUNCATED });
    const bad = Buffer.from(bytes);
    flipBits(bad, 10, 1);
    fs.writeFileSync(t, bad);
    await expect(adoptTars([t], { out: path.join(tmpDir(), 'o') })).rejects.toMatchObject({ code: ErrorCodes.CORRUPT_SHARD });
    await expect(adoptTars([], { out: tmpDir() })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
    await expect(adoptTars(['/no/such.tar'], { out: tmpDir() })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
  });
});
