/**
 * shardindex.json (formats/shard-index.ts): the wids shard index every tar-layout dataset gets, written by every
 * way of making one (pack's writer, merge, reindex, index, append; derive in test/e2e/derive.test.ts), listed in the
 * manifest's files, deterministic, and checked by verify against the manifest.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeShardIndex, SHARD_INDEX_FILE } from '../../formats/shard-index.js';
import type { Manifest } from '../../formats/manifest.js';
import { adoptTars } from '../../src/adopt/adopt-tars.js';
import { reindexDataset } from '../../src/adopt/reindex.js';
import { append } from '../../src/pack/append.js';
import { pack } from '../../src/pack/pack.js';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { mergeParts } from '../../src/pack/merge.js';
import { partOfKey, partShardPrefix } from '../../src/pack/partition.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { writeTree } from '../helpers/source-tree.js';
import { tmpDir } from '../helpers/tmp.js';

const sampleOf = (i: number) => ({ key: `c${i % 3}/${String(i).padStart(4, '0')}`, members: { bin: Buffer.alloc(200 + (i % 50), i), ...(i % 4 === 0 ? { txt: Buffer.from(`t${i}`) } : {}) } });

async function write(dir: string, n: number, options: Partial<ConstructorParameters<typeof DatasetWriter>[0]> = {}): Promise<Manifest> {
  const w = new DatasetWriter({ dir, shardBytes: 8 * 1024, pageSize: 1024, ...options });
  for (let i = 0; i < n; i++) w.add(sampleOf(i));
  return w.finish();
}

const manifestOf = (dir: string): Manifest => JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
const shardIndexOf = (dir: string): string => fs.readFileSync(path.join(dir, SHARD_INDEX_FILE), 'utf8');

/** What shardindex.json must hold for a manifest. */
function expectedFor(m: Manifest): string {
  return Buffer.from(encodeShardIndex(m.index.crc32c, m.shards)).toString('utf8');
}

describe('shardindex.json', () => {
  it('has the wids shard-index shape, byte for byte', () => {
    const text = Buffer.from(encodeShardIndex('0a1b2c3d', [{ file: 'shard-000000.tar', samples: 3 }, { file: 'shard-000001.tar', samples: 1 }])).toString('utf8');
    expect(text).toBe(
      '{\n  "__kind__": "wids-shard-index-v1",\n  "wids_version": 1,\n  "name": "shardkit-0a1b2c3d",\n  "shardlist": [\n' +
        '    {\n      "url": "shard-000000.tar",\n      "nsamples": 3\n    },\n    {\n      "url": "shard-000001.tar",\n      "nsamples": 1\n    }\n  ]\n}\n',
    );
  });

  it('a tar dataset lists it in files, with every shard and its samples; two writes give the same bytes; packed has none', async () => {
    const a = tmpDir();
    const m = await write(a, 120);
    expect(m.files).toEqual([SHARD_INDEX_FILE]);
    expect(m.shards.length).toBeGreaterThan(3);
    const doc = JSON.parse(shardIndexOf(a));
    expect(doc.shardlist).toEqual(m.shards.map((s) => ({ url: s.file, nsamples: s.samples })));
    expect(doc.shardlist.reduce((n: number, s: { nsamples: number }) => n + s.nsamples, 0)).toBe(120);
    const b = tmpDir();
    await write(b, 120);
    expect(shardIndexOf(b)).toBe(shardIndexOf(a));
    const packed = tmpDir();
    expect((await write(packed, 50, { layout: 'packed' })).files).toEqual([]);
    expect(fs.existsSync(path.join(packed, SHARD_INDEX_FILE))).toBe(false);
  });

  it('merge, reindex and index write it for their own shards (parts and inputs had others)', async () => {
    const parts = [0, 1].map((index) => ({ dir: tmpDir(), part: { index, count: 2 } }));
    const writers = parts.map(({ dir, part }) => new DatasetWriter({ dir, shardBytes: 8 * 1024, pageSize: 1024, part, shardPrefix: partShardPrefix(part) }));
    for (let i = 0; i < 150; i++) writers[partOfKey(sampleOf(i).key, 2)]!.add(sampleOf(i));
    for (const w of writers) await w.finish();
    for (const { dir } of parts) expect(shardIndexOf(dir)).toBe(expectedFor(manifestOf(dir)));
    const merged = path.join(tmpDir(), 'merged');
    await mergeParts(parts.map((p) => p.dir), merged);
    expect(manifestOf(merged).files).toEqual([SHARD_INDEX_FILE]);
    expect(shardIndexOf(merged)).toBe(expectedFor(manifestOf(merged)));
    expect(JSON.parse(shardIndexOf(merged)).shardlist).toHaveLength(manifestOf(merged).shards.length);

    // reindex without a manifest: a stale shard index is replaced by the one of the rebuilt dataset
    const re = tmpDir();
    await write(re, 90);
    const before = shardIndexOf(re);
    fs.rmSync(path.join(re, 'manifest.json'));
    fs.writeFileSync(path.join(re, SHARD_INDEX_FILE), '{"__kind__": "wids-shard-index-v1", "name": "shardkit-stale", "shardlist": []}');
    await reindexDataset(re);
    expect(shardIndexOf(re)).toBe(before);
    expect(manifestOf(re).files).toEqual([SHARD_INDEX_FILE]);

    // index of foreign tars (here GNU tar's)
    const src = tmpDir();
    for (const name of ['a/1.txt', 'a/1.json', 'b/2.txt']) {
      fs.mkdirSync(path.dirname(path.join(src, name)), { recursive: true });
      fs.writeFileSync(path.join(src, name), name);
    }
    const tar = path.join(tmpDir(), 'foreign.tar');
    expect(spawnSync('tar', ['--sort=name', '-cf', tar, '-C', src, 'a', 'b']).status).toBe(0);
    const adopted = tmpDir();
    await adoptTars([tar], { out: adopted });
    expect(JSON.parse(shardIndexOf(adopted)).shardlist).toEqual([{ url: 'foreign.tar', nsamples: 2 }]);
    expect(shardIndexOf(adopted)).toBe(expectedFor(manifestOf(adopted)));
  });

  it('append rewrites it for every shard, old and new (not the stage\'s, which lists the new ones alone)', async () => {
    const tree = async (files: Record<string, string>): Promise<string> => {
      const dir = tmpDir();
      await writeTree(dir, files);
      return dir;
    };
    const out = path.join(tmpDir(), 'ds');
    await pack({ source: await tree({ 'a/1.txt': 'a1', 'c/3.txt': 'c3' }), out, readThreads: 0, shardBytes: 4096 });
    const r = await append({ dataset: out, source: await tree({ 'b/2.txt': 'b2', 'd/4.txt': 'd4', 'e/5.txt': 'e5' }), shardBytes: 4096, readThreads: 0 });
    expect(r.manifest.files).toEqual([SHARD_INDEX_FILE]);
    expect(shardIndexOf(out)).toBe(expectedFor(manifestOf(out)));
    expect(JSON.parse(shardIndexOf(out)).shardlist.reduce((n: number, s: { nsamples: number }) => n + s.nsamples, 0)).toBe(5);
    expect((await verifyDataset(out)).ok).toBe(true);
  });

  it('verify reports one that disagrees with the manifest, or is missing', async () => {
    const dir = tmpDir();
    await write(dir, 60);
    expect((await verifyDataset(dir)).ok).toBe(true);
    const doc = JSON.parse(shardIndexOf(dir));
    doc.shardlist[1].nsamples += 1;
    fs.writeFileSync(path.join(dir, SHARD_INDEX_FILE), `${JSON.stringify(doc, null, 2)}\n`);
    for (const quick of [false, true]) {
      const r = await verifyDataset(dir, { quick });
      expect(r.ok).toBe(false);
      expect(r.problems).toEqual([{ file: SHARD_INDEX_FILE, what: expect.stringMatching(/does not list the manifest's shards and sample counts.*shardkit reindex/) }]);
    }
    await reindexDataset(dir);
    expect((await verifyDataset(dir)).ok).toBe(true);
    fs.rmSync(path.join(dir, SHARD_INDEX_FILE));
    expect((await verifyDataset(dir)).problems).toEqual([{ file: SHARD_INDEX_FILE, what: expect.stringMatching(/is missing/) }]);
  });

  it('a pass may not add a file of that name', async () => {
    const w = new DatasetWriter({ dir: tmpDir() });
    expect(() => w.addFile(SHARD_INDEX_FILE, new Uint8Array(1), 'pass x')).toThrow(/the dataset uses that name/);
    w.add(sampleOf(1));
    await w.finish();
  });
});
