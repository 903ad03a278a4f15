/** reindex rebuilds the index and manifest from tar shards alone, byte for byte when the shards are intact. */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { lz4CompressMember } from '../../formats/lz4.js';
import { reindexDataset } from '../../src/adopt/reindex.js';
import { partFromShardNames } from '../../src/adopt/reindex-checks.js';
import { mergeParts } from '../../src/pack/merge.js';
import { partOfKey, partShardPrefix } from '../../src/pack/partition.js';
import { DatasetWriter, INDEX_FILE } from '../../src/pack/dataset-writer.js';
import { openDataset } from '../../src/read/dataset.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { flipBits } from '../helpers/checked.js';
import { tmpDir } from '../helpers/tmp.js';

const enc = new TextEncoder();

/** Mixed members: compressible text, incompressible noise, source files whose own extension ends in .lz4. */
function sampleOf(i: number): { key: string; members: Record<string, Uint8Array> } {
  let x = i * 2654435761 + 1;
  const noise = Uint8Array.from({ length: 300 + (i % 17) * 50 }, () => ((x = (x * 1103515245 + 12345) >>> 0) >>> 24));
  const members: Record<string, Uint8Array> = {
    txt: enc.encode(`sample ${i} `.repeat(20 + (i % 9))),
    bin: noise,
  };
  if (i % 5 === 0) members['raw.lz4'] = noise.subarray(0, 100);
  // a user's file that is itself an LZ4 frame as the writer makes them (say, from tar -xf of a compressed dataset):
  // in the tar it must not read as a member the writer compressed
  if (i % 4 === 0) members['frame.lz4'] = lz4CompressMember(enc.encode(`framed ${i} `.repeat(40)));
  if (i % 6 === 0) members.lz4 = lz4CompressMember(enc.encode(`bare ${i} `.repeat(40)));
  if (i % 7 === 0) members[''] = enc.encode(String(i));
  return { key: `${['cat', 'dog', 'ünï'][i % 3]}/${String(i).padStart(4, '0')}`, members };
}

async function writeDataset(dir: string, compress: 'none' | 'lz4', extra = false): Promise<void> {
  const w = new DatasetWriter({ dir, compress, shardBytes: 24 * 1024, pageSize: 1024, passes: [{ name: 'tag', params: { by: 'dirname' } }] });
  // out of key order on purpose: shards then hold keys in arrival order and reindex must sort them
  for (let i = 0; i < 120; i++) w.add(sampleOf((i * 37) % 120));
  if (extra) {
    w.setExtra('classes', ['cat', 'dog']);
    w.addFile('classes.txt', enc.encode('cat\ndog\n'));
  }
  w.skip('bad/file.jpg', 'undecodable');
  await w.finish();
}

const read = (dir: string, f: string) => fs.readFileSync(path.join(dir, f));

describe('reindexDataset', () => {
  for (const compress of ['none', 'lz4'] as const) {
    it(`rebuilds index and manifest byte for byte (compress=${compress})`, async () => {
      const dir = tmpDir();
      await writeDataset(dir, compress, true);
      const index = read(dir, INDEX_FILE);
      const manifest = read(dir, 'manifest.json');
      fs.rmSync(path.join(dir, INDEX_FILE));
      const r = await reindexDataset(dir);
      expect(r.keptManifestFields).toBe(true);
      expect(read(dir, INDEX_FILE).equals(index)).toBe(true);
      expect(read(dir, 'manifest.json').toString()).toBe(manifest.toString());
    });
  }

  it('works without a manifest: shards found by name, compress inferred, samples readable', async () => {
    const dir = tmpDir();
    await writeDataset(dir, 'lz4');
    const index = read(dir, INDEX_FILE);
    fs.rmSync(path.join(dir, 'manifest.json'));
    fs.writeFileSync(path.join(dir, INDEX_FILE), 'garbage');
    const r = await reindexDataset(dir);
    expect(r.keptManifestFields).toBe(false);
    expect(r.manifest.compress).toBe('lz4');
    // same page size (from the manifest? gone; the default differs) - the entries are the same
    const ds = await openDataset(dir);
    expect(ds.size).toBe(120);
    for (const i of [0, 5, 7, 35, 119]) {
      const want = sampleOf(i);
      const got = await ds.get(want.key);
      expect(Object.keys(got.members).sort()).toEqual(Object.keys(want.members).sort());
      for (const [ext, bytes] of Object.entries(want.members)) expect(Buffer.from(got.members[ext]!).equals(Buffer.from(bytes))).toBe(true);
    }
    await ds.close();
    expect(index.length).toBeGreaterThan(0);
  });

  it('refuses the packed layout with a clear error', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, layout: 'packed' });
    w.add(sampleOf(1));
    await w.finish();
    await expect(reindexDataset(dir)).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG, message: expect.stringMatching(/packed layout cannot be reindexed/) });
    fs.rmSync(path.join(dir, 'manifest.json'));
    await expect(reindexDataset(dir)).rejects.toMatchObject({ code: ErrorCodes.INVALID_ARG });
  });

  it('fails on a missing shard and on a damaged tar header, naming the file', async () => {
    const dir = tmpDir();
    await writeDataset(dir, 'none');
    const shard = path.join(dir, 'shard-000001.tar');
    const bytes = fs.readFileSync(shard);
    flipBits(bytes, 0, 0x20); // first header's name
    fs.writeFileSync(shard, bytes);
    await expect(reindexDataset(dir)).rejects.toMatchObject({ code: ErrorCodes.CORRUPT_SHARD, message: expect.stringContaining('shard-000001.tar') });
    fs.rmSync(shard);
    await expect(reindexDataset(dir)).rejects.toMatchObject({ code: ErrorCodes.SHARD_MISSING });
  });

  it('refuses shards whose bytes differ from what the old manifest recorded, and writes nothing', async () => {
    const dir = tmpDir();
    await writeDataset(dir, 'none', true);
    const shard = path.join(dir, 'shard-000001.tar');
    const good = fs.readFileSync(shard);
    const ds = await openDataset(dir);
    let target: { offset: number } | undefined;
    for await (const e of ds.entries()) if (ds.shards[e.shard]?.file === 'shard-000001.tar') target ??= e;
    await ds.close();
    fs.writeFileSync(path.join(dir, INDEX_FILE), 'garbage'); // the damaged index reindex is for
    const index = read(dir, INDEX_FILE);
    const manifest = read(dir, 'manifest.json');
    const damaged = Buffer.from(good);
    flipBits(damaged, target!.offset, 0x01); // a member's first data byte: the tar headers still scan
    fs.writeFileSync(shard, damaged);
    await expect(reindexDataset(dir)).rejects.toMatchObject({
      code: ErrorCodes.CHECKSUM,
      file: 'shard-000001.tar',
      message: expect.stringMatching(/^shard-000001\.tar: whole-file CRC32C is [0-9a-f]{8}, the manifest says [0-9a-f]{8}.*restore shard-000001\.tar from a copy, or move manifest\.json away/),
    });
    expect(read(dir, INDEX_FILE).equals(index)).toBe(true);
    expect(read(dir, 'manifest.json').equals(manifest)).toBe(true);
    // a shard cut short (or grown) is refused before it is read
    fs.writeFileSync(shard, good.subarray(0, good.length - 1024));
    await expect(reindexDataset(dir)).rejects.toMatchObject({ code: ErrorCodes.SHARD_MISMATCH, message: expect.stringMatching(/^shard-000001\.tar is \d+ bytes, the manifest says \d+; restore/) });
    expect(read(dir, 'manifest.json').equals(manifest)).toBe(true);
    // restored from a copy, it reindexes and says the shards were checked
    fs.writeFileSync(shard, good);
    const r = await reindexDataset(dir);
    expect(r.shardsChecked).toBe(true);
    expect(read(dir, 'manifest.json').equals(manifest)).toBe(true);
  });

  it('without the old manifest, has nothing to check the shards against and says so', async () => {
    const dir = tmpDir();
    await writeDataset(dir, 'lz4');
    fs.rmSync(path.join(dir, 'manifest.json'));
    const r = await reindexDataset(dir);
    expect(r.shardsChecked).toBe(false);
    expect(r.keptManifestFields).toBe(false);
  });

  it('a part stays one without its manifest: the part comes from the shard names, and the parts merge', async () => {
    const parts = [0, 1].map((index) => {
      const dir = tmpDir();
      const part = { index, count: 2 };
      const w = new DatasetWriter({ dir, compress: 'lz4', shardBytes: 24 * 1024, part, shardPrefix: partShardPrefix(part) });
      return { dir, w };
    });
    for (let i = 0; i < 120; i++) parts[partOfKey(sampleOf(i).key, 2)]!.w.add(sampleOf(i));
    for (const p of parts) await p.w.finish();
    const p1 = parts[1]!.dir;
    expect(fs.readdirSync(p1).filter((f) => f.endsWith('.tar')).every((f) => f.startsWith('part-1-of-2-shard-'))).toBe(true);
    fs.rmSync(path.join(p1, 'manifest.json'));
    fs.rmSync(path.join(p1, INDEX_FILE));
    const r = await reindexDataset(p1);
    expect(r.manifest.part).toEqual({ index: 1, count: 2 });
    expect(r.partFromShardNames).toBe(true);
    expect(r.partProblem).toBeUndefined();
    const merged = await mergeParts([p1, parts[0]!.dir], path.join(tmpDir(), 'merged'));
    expect(merged.manifest.totals.samples).toBe(120);
  });

  it('reads a part from shard names only when every name carries one part-I-of-N- prefix as pack writes it', () => {
    const names = (prefix: string, n = 3) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(6, '0')}.tar`);
    expect(partFromShardNames(names('part-1-of-2-shard-'))).toEqual({ part: { index: 1, count: 2 } });
    expect(partFromShardNames(names('part-0-of-1-shard-'))).toEqual({ part: { index: 0, count: 1 } });
    // 0-based, padded to the width of N-1, as pack names them
    expect(partFromShardNames(names(partShardPrefix({ index: 3, count: 12 })))).toEqual({ part: { index: 3, count: 12 } });
    expect(partFromShardNames(names('shard-'))).toEqual({});
    // a merge of parts is a whole dataset
    expect(partFromShardNames([...names('part-0-of-2-shard-', 1), ...names('part-1-of-2-shard-', 1)])).toEqual({});
    // names that do not agree on one part: no part, and the note says what was not kept
    const odd = [
      [...names('part-1-of-2-shard-', 2), 'shard-000007.tar'],
      names('part-3-of-12-shard-'), // not padded as pack pads it
      names('part-2-of-2-shard-'), // index out of range
      [...names('part-0-of-2-shard-', 1), ...names('part-0-of-3-shard-', 1)],
    ];
    for (const files of odd) {
      const r = partFromShardNames(files);
      expect(r.part).toBeUndefined();
      expect(r.note).toMatch(/^part unknown: .*recorded as a whole dataset/);
    }
  });

  it('says there is nothing to reindex in a directory without shards', async () => {
    await expect(reindexDataset(tmpDir())).rejects.toMatchObject({ code: ErrorCodes.NOT_A_DATASET });
  });

  it('refuses an interrupted pack (journal, no manifest): pack --resume finishes it, and verify says so', async () => {
    const dir = tmpDir();
    const w = new DatasetWriter({ dir, compress: 'lz4', shardBytes: 24 * 1024, pageSize: 1024 });
    for (let i = 0; i < 60; i++) w.add(sampleOf(i));
    w.abort();
    expect(fs.existsSync(path.join(dir, '.shardkit-work', 'journal.jsonl'))).toBe(true);
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.tar')).length).toBeGreaterThan(0);
    const before = fs.readdirSync(dir).sort();
    await expect(reindexDataset(dir)).rejects.toMatchObject({
      code: ErrorCodes.OUTPUT_EXISTS,
      message: expect.stringMatching(/interrupted pack .*shardkit pack --resume.*remove \.shardkit-work\//),
    });
    // nothing written: no manifest for partial data, the journal still there for --resume
    expect(fs.readdirSync(dir).sort()).toEqual(before);
    const verified = verifyDataset(dir);
    await expect(verified).rejects.toMatchObject({ code: ErrorCodes.NOT_A_DATASET, message: expect.stringContaining(`finish it with \`shardkit pack <src> --out ${dir} --resume\``) });
    await expect(verified).rejects.not.toMatchObject({ message: expect.stringContaining('reindex') });
    // once the work directory is removed on purpose, what the pack wrote can be indexed
    fs.rmSync(path.join(dir, '.shardkit-work'), { recursive: true });
    await expect(verifyDataset(dir)).rejects.toMatchObject({ message: expect.stringContaining(`if they are intact tar shards, \`shardkit reindex ${dir}\` rebuilds the index and manifest`) });
    const r = await reindexDataset(dir);
    expect(r.manifest.totals.samples).toBeGreaterThan(0);
  });
});
