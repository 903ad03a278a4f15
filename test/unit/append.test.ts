import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { parseManifest } from '../../formats/manifest.js';
import { append } from '../../src/pack/append.js';
import { mergeParts } from '../../src/pack/merge.js';
import { pack } from '../../src/pack/pack.js';
import { tagDirnamePass } from '../../src/passes/tag-dirname.js';
import { resizePass } from '../../src/passes/resize.js';
import { openDataset, type Dataset } from '../../src/read/dataset.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { WriteLock } from '../../src/pack/write-lock.js';
import { errorOf } from '../helpers/error-of.js';
import { writeTree } from '../helpers/source-tree.js';
import { tmpDir } from '../helpers/tmp.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

async function tree(files: Record<string, string>): Promise<string> {
  const dir = tmpDir();
  await writeTree(dir, files);
  return dir;
}

async function contents(ds: Dataset): Promise<Record<string, Record<string, string>>> {
  const out: Record<string, Record<string, string>> = {};
  for await (const e of ds.entries()) {
    const s = await ds.read(e);
    out[s.key] = Object.fromEntries(Object.entries(s.members).map(([ext, b]) => [ext, new TextDecoder().decode(b)]));
  }
  return out;
}

/** Every file of a directory tree, by relative path, with its bytes (for "byte for byte" checks). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    const p = path.join(dir, name);
    if (fs.statSync(p).isFile()) out[name] = fs.readFileSync(p).toString('base64');
  }
  return out;
}

async function packed(files: Record<string, string>, options: Partial<Parameters<typeof pack>[0]> = {}): Promise<string> {
  const out = path.join(tmpDir(), 'ds');
  await pack({ source: await tree(files), out, readThreads: 0, ...options });
  return out;
}

describe('append', () => {
  it('adds new shards numbered after the old ones, a new index over all samples, and records the append', async () => {
    const out = await packed({ 'a/1.txt': 'a1', 'c/3.txt': 'c3' }, { shardBytes: 4096 });
    const before = parseManifest(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'), 'm');
    const oldShardBytes = fs.readFileSync(path.join(out, 'shard-000000.tar'));
    const r = await append({ dataset: out, source: await tree({ 'b/2.txt': 'b2', 'd/4.txt': 'd4', 'd/4.json': '{}' }), shardBytes: 4096, readThreads: 0 });
    expect(r.samples).toBe(2);
    expect(r.oldEntriesRead).toBe(2);
    expect(r.shards).toEqual([before.shards.length, before.shards.length + r.manifest.shards.length - before.shards.length]);
    expect(r.manifest.index.file).toBe('index-1.skidx');
    expect(r.manifest.shards.slice(0, before.shards.length)).toEqual(before.shards);
    expect(r.manifest.shards[before.shards.length]?.file).toBe(`shard-${String(before.shards.length).padStart(6, '0')}.tar`);
    expect(r.manifest.appends).toEqual([{ samples: 2, shards: r.shards, passes: [] }]);
    expect(fs.readFileSync(path.join(out, 'shard-000000.tar')).equals(oldShardBytes)).toBe(true);
    const ds = await openDataset(out);
    expect(await contents(ds)).toEqual({ 'a/1': { txt: 'a1' }, 'b/2': { txt: 'b2' }, 'c/3': { txt: 'c3' }, 'd/4': { json: '{}', txt: 'd4' } });
    expect((await ds.at(1)).key).toBe('b/2');
    await ds.close();
    const report = await verifyDataset(out);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(fs.existsSync(path.join(out, '.shardkit-append'))).toBe(false);
  });

  it('keeps the previous index file for readers of the old version until the next append, then removes it', async () => {
    const out = await packed({ 'k/0.txt': '0' });
    const reader = await openDataset(out); // opened before: reads the old version to the end
    await append({ dataset: out, source: await tree({ 'k/1.txt': '1' }), readThreads: 0 });
    expect(fs.existsSync(path.join(out, 'index.skidx'))).toBe(true);
    expect(reader.size).toBe(1);
    expect(await contents(reader)).toEqual({ 'k/0': { txt: '0' } });
    await reader.close();
    await append({ dataset: out, source: await tree({ 'k/2.txt': '2' }), readThreads: 0 });
    expect(fs.readdirSync(out).filter((n) => n.endsWith('.skidx')).sort()).toEqual(['index-1.skidx', 'index-2.skidx']);
    await append({ dataset: out, source: await tree({ 'k/3.txt': '3' }), readThreads: 0 });
    expect(fs.readdirSync(out).filter((n) => n.endsWith('.skidx')).sort()).toEqual(['index-2.skidx', 'index-3.skidx']);
    const ds = await openDataset(out);
    expect(ds.size).toBe(4);
    expect(ds.manifest.appends?.map((a) => a.shards)).toEqual([
      [1, 2],
      [2, 3],
      [3, 4],
    ]);
    await ds.close();
    expect((await verifyDataset(out)).ok).toBe(true);
  });

  it('grows the tag=dirname class list without renumbering old classes', async () => {
    const out = await packed({ 'dog/1.txt': 'd', 'eel/2.txt': 'e' }, { passes: [tagDirnamePass()] });
    await append({ dataset: out, source: await tree({ 'cat/3.txt': 'c', 'dog/4.txt': 'd2', 'ant/5.txt': 'a' }), readThreads: 0 });
    const ds = await openDataset(out);
    expect(ds.manifest.extra.classes).toEqual(['dog', 'eel', 'ant', 'cat']);
    expect(fs.readFileSync(path.join(out, 'classes.txt'), 'utf8')).toBe('dog\neel\nant\ncat\n');
    const cls = Object.fromEntries(Object.entries(await contents(ds)).map(([k, m]) => [k, m.cls]));
    expect(cls).toEqual({ 'dog/1': '0', 'eel/2': '1', 'cat/3': '3', 'dog/4': '0', 'ant/5': '2' });
    expect(ds.manifest.appends?.[0]?.passes).toEqual([{ name: 'tag', params: { source: 'dirname' } }]);
    await ds.close();
  });

  it('writes the packed layout with lz4 as the dataset has it', async () => {
    const out = await packed({ 'x/1.bin': 'one'.repeat(50) }, { layout: 'packed', compress: 'lz4' });
    await append({ dataset: out, source: await tree({ 'x/2.bin': 'two'.repeat(50) }), readThreads: 0 });
    const ds = await openDataset(out);
    expect(ds.manifest.shards.map((s) => s.file)).toEqual(['shard-000000.pack', 'shard-000001.pack']);
    expect(new TextDecoder().decode((await ds.get('x/2')).members.bin)).toBe('two'.repeat(50));
    await ds.close();
    expect((await verifyDataset(out)).ok).toBe(true);
  });

  it('refuses a key the dataset has, naming it, and leaves the dataset byte for byte', async () => {
    const out = await packed({ 'a/1.txt': 'a1', 'b/2.txt': 'b2' });
    const before = snapshot(out);
    const err = await errorOf(append({ dataset: out, source: await tree({ 'a/0.txt': 'new', 'b/2.txt': 'again' }), readThreads: 0 }));
    expect(err).toMatchObject({ code: ErrorCodes.DUPLICATE_KEY, key: 'b/2' });
    expect((err as Error).message).toMatch(/^key "b\/2" is already in dataset .*--on-error skip$/);
    expect(snapshot(out)).toEqual(before);
  });

  it('with onError skip, leaves out and lists the keys the dataset has, and no shard holds their bytes', async () => {
    const out = await packed({ 'a/1.txt': 'a1', 'b/2.txt': 'b2' });
    const r = await append({ dataset: out, source: await tree({ 'a/0.txt': 'new', 'b/2.txt': 'again', 'c/3.txt': 'c3' }), onError: 'skip', readThreads: 0 });
    expect(r.duplicates).toEqual(['b/2']);
    expect(r.samples).toBe(2);
    expect(r.manifest.skipped).toEqual([{ path: 'b/2', reason: 'SHARDKIT_ERR_DUPLICATE_KEY: the dataset already has a sample with key "b/2"' }]);
    const ds = await openDataset(out);
    expect(await contents(ds)).toEqual({ 'a/0': { txt: 'new' }, 'a/1': { txt: 'a1' }, 'b/2': { txt: 'b2' }, 'c/3': { txt: 'c3' } });
    await ds.close();
    const newShard = fs.readFileSync(path.join(out, 'shard-000001.tar'));
    expect(newShard.includes(Buffer.from('again'))).toBe(false);
    expect((await verifyDataset(out)).ok).toBe(true);
  });

  it('refuses another layout or compression, a conflicting pass, and a pass the manifest cannot make, before writing', async () => {
    const out = await packed({ 'a/1.txt': 'a1' }, { passes: [tagDirnamePass()] });
    const before = snapshot(out);
    const src = await tree({ 'b/2.txt': 'b2' });
    await expect(append({ dataset: out, source: src, layout: 'packed' })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/has the tar layout, not packed/) });
    await expect(append({ dataset: out, source: src, compress: 'lz4' })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/--compress none, not lz4/) });
    await expect(append({ dataset: out, source: src, passes: [resizePass({ width: 8, height: 8 })] })).rejects.toMatchObject({
      code: ErrorCodes.INVALID_ARG,
      message: expect.stringMatching(/passes given \(resize .*\) differ from those of dataset .* \(tag \{"source":"dirname"\}\)/),
    });
    const custom = await packed({ 'a/1.txt': 'a1' }, { passes: [{ name: 'custom:mine', params: {}, run: async (s) => s }] });
    await expect(append({ dataset: custom, source: src })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/pass 1 \(custom:mine \{\}\), which append cannot make from the manifest/) });
    // given again, the user's pass runs
    const r = await append({ dataset: custom, source: src, passes: [{ name: 'custom:mine', params: {}, run: async (s) => ({ key: s.key, members: { ...s.members, n: text('1') } }) }], readThreads: 0 });
    expect(r.samples).toBe(1);
    expect(snapshot(out)).toEqual(before);
  });

  it('refuses a dataset another writer holds, one made by index, a part of a partitioned pack, and a directory without a dataset', async () => {
    const out = await packed({ 'a/1.txt': 'a1' });
    const src = await tree({ 'b/2.txt': 'b2' });
    const lock = WriteLock.acquire(out, 'pack');
    try {
      await expect(append({ dataset: out, source: src })).rejects.toMatchObject({ code: ErrorCodes.OUTPUT_EXISTS, message: expect.stringMatching(/is being written by another shardkit pack/) });
    } finally {
      lock.release();
    }
    const partDir = path.join(tmpDir(), 'p0');
    await pack({ source: await tree({ 'a/1.txt': 'a1', 'b/1.txt': 'b' }), out: partDir, part: { index: 0, count: 2 }, readThreads: 0 });
    await expect(append({ dataset: partDir, source: src })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/is part 0\/2 of a partitioned pack; merge the parts first/) });
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    manifest.extra.adopted = { rules: 1, inputs: [] };
    const adopted = path.join(tmpDir(), 'adopted');
    fs.cpSync(out, adopted, { recursive: true });
    fs.writeFileSync(path.join(adopted, 'manifest.json'), JSON.stringify(manifest));
    await expect(append({ dataset: adopted, source: src })).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/indexes foreign tars/) });
    const empty = tmpDir();
    await expect(append({ dataset: empty, source: src })).rejects.toMatchObject({ code: ErrorCodes.NOT_A_DATASET });
    expect(fs.readdirSync(empty)).toEqual([]);
  });

  it('fails on a damaged page of the old index (CORRUPT_INDEX) and leaves the dataset as it was', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`k/${String(i).padStart(4, '0')}.txt`] = String(i);
    const out = await packed(files, { pageSize: 1024 });
    const index = path.join(out, 'index.skidx');
    const opened = await openDataset(out);
    const leaf = opened.index.header.firstLeaf;
    expect(opened.index.header.pageCount).toBeGreaterThan(4);
    await opened.close();
    const bytes = fs.readFileSync(index);
    bytes[leaf * 1024 + 20] = (bytes[leaf * 1024 + 20] as number) ^ 0xff; // a record of the first leaf
    fs.writeFileSync(index, bytes);
    const before = snapshot(out);
    await expect(append({ dataset: out, source: await tree({ 'k/x.txt': 'x' }), readThreads: 0 })).rejects.toMatchObject({ code: ErrorCodes.CORRUPT_INDEX });
    expect(Object.keys(snapshot(out)).filter((f) => !f.startsWith('.shardkit-append'))).toEqual(Object.keys(before));
    for (const [f, b] of Object.entries(before)) expect(snapshot(out)[f], f).toBe(b);
  });

  it('appends to a merged dataset, whose shards carry part names', async () => {
    const src = await tree({ 'a/1.txt': 'a1', 'b/2.txt': 'b2', 'c/3.txt': 'c3' });
    const parts = [0, 1].map((index) => path.join(tmpDir(), `p${index}`));
    for (const [index, out] of parts.entries()) await pack({ source: src, out, part: { index, count: 2 }, readThreads: 0 });
    const merged = path.join(tmpDir(), 'merged');
    await mergeParts(parts, merged);
    const r = await append({ dataset: merged, source: await tree({ 'd/4.txt': 'd4' }), readThreads: 0 });
    expect(r.manifest.totals.samples).toBe(4);
    expect((await verifyDataset(merged)).ok).toBe(true);
  });
});
