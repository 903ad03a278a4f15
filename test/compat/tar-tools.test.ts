/**
 * Shards in the tar layout are read, as they are, by tools nobody here wrote: GNU tar, bsdtar (libarchive) and
 * Python's tarfile; LZ4 members decompress with the lz4 command.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import tarStream from 'tar-stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { DatasetWriter } from '../../src/pack/dataset-writer.js';
import { bufferChunk } from '../helpers/stream-chunks.js';
import { hasTool, run } from '../helpers/tools.js';
import { tmpDir } from '../helpers/tmp.js';

const names = [
  'plain/0001.jpg',
  'plain/0001.cls',
  'plain/0002.seg.png',
  'unicode/日本語/画像.jpg',
  'unicode/émoji-😀.txt',
  'spaces in dir/a file.json',
  `${'deep/'.repeat(25)}leaf.bin`, // 130 bytes: ustar prefix + name
  `${'x'.repeat(180)}.bin`, // cannot split: pax path
  `${'long-dir-name-'.repeat(12)}/${'y'.repeat(120)}.dat`, // prefix fits but name > 100: pax
  'empty/zero.bin',
];

function contentFor(name: string): Uint8Array {
  if (name.includes('zero')) return new Uint8Array(0);
  const n = 1 + (name.length * 97) % 3000;
  return Uint8Array.from({ length: n }, (_, i) => (i * 13 + name.length) & 0xff);
}

function samplesOf(paths: string[]): { key: string; members: Record<string, Uint8Array> }[] {
  const byKey = new Map<string, Record<string, Uint8Array>>();
  for (const p of paths) {
    const slash = p.lastIndexOf('/');
    const dot = p.indexOf('.', slash + 1);
    const key = p.slice(0, dot);
    const ext = p.slice(dot + 1);
    byKey.set(key, { ...byKey.get(key), [ext]: contentFor(p) });
  }
  return [...byKey].map(([key, members]) => ({ key, members }));
}

function listFiles(dir: string, base = dir): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? listFiles(path.join(dir, d.name), base) : [path.relative(base, path.join(dir, d.name))]));
}

describe.each(['none', 'lz4'] as const)('tar shards (compress=%s)', (compress) => {
  let dir: string;
  let shards: string[];

  beforeAll(async () => {
    dir = tmpDir();
    const w = new DatasetWriter({ dir, shardBytes: 8 * 1024, compress });
    for (const s of samplesOf(names).sort((a, b) => (Buffer.from(a.key) < Buffer.from(b.key) ? -1 : 1))) w.add(s);
    const m = await w.finish();
    shards = m.shards.map((s) => path.join(dir, s.file));
    expect(shards.length).toBeGreaterThan(1);
  });

  it('GNU tar lists and extracts them to the original bytes', () => {
    hasTool('tar');
    const listed = shards.flatMap((s) => run('tar', ['-tf', s]).split('\n').filter(Boolean));
    if (compress === 'none') expect(listed.sort()).toEqual([...names].sort());
    const out = tmpDir();
    for (const s of shards) run('tar', ['-xf', s, '-C', out]);
    const extracted = listFiles(out).sort();
    if (compress === 'none') {
      expect(extracted).toEqual([...names].sort());
      for (const n of names) expect(Buffer.from(fs.readFileSync(path.join(out, n))).equals(Buffer.from(contentFor(n))), n).toBe(true);
    } else {
      expect(extracted.every((n) => n.endsWith('.lz4') || names.includes(n))).toBe(true);
      expect(extracted.length).toBe(names.length);
    }
  });

  it('bsdtar lists the same members', () => {
    if (!hasTool('bsdtar')) return;
    const listed = shards.flatMap((s) => run('bsdtar', ['-tf', s]).split('\n').filter(Boolean));
    expect(listed.length).toBe(names.length);
    if (compress === 'none') expect(listed.sort()).toEqual([...names].sort());
  });

  it("Python's tarfile reads every member with identical bytes", () => {
    hasTool('python3');
    const script = `
import sys, tarfile, json, hashlib
out = {}
for p in sys.argv[1:]:
    with tarfile.open(p, 'r:') as t:
        for m in t:
            assert m.isreg(), m.name
            out[m.name] = hashlib.sha256(t.extractfile(m).read()).hexdigest()
print(json.dumps(out))
`;
    const got = JSON.parse(run('python3', ['-c', script, ...shards])) as Record<string, string>;
    expect(Object.keys(got).length).toBe(names.length);
    if (compress === 'none') {
      for (const n of names) expect(got[n], n).toBe(createHash('sha256').update(contentFor(n)).digest('hex'));
    }
  });

  it('tar-stream (a JavaScript tar parser nobody here wrote) reads every member with identical bytes', async () => {
    const got = new Map<string, Buffer>();
    for (const shard of shards) {
      const extract = tarStream.extract();
      const done = new Promise<void>((resolve, reject) => {
        extract.on('entry', (header, stream, next) => {
          const chunks: Buffer[] = [];
          stream.on('data', (c) => chunks.push(bufferChunk(c)));
          stream.on('end', () => {
            expect(header.type).toBe('file');
            got.set(header.name, Buffer.concat(chunks));
            next();
          });
        });
        extract.on('finish', resolve);
        extract.on('error', reject);
      });
      fs.createReadStream(shard).pipe(extract);
      await done;
    }
    expect(got.size).toBe(names.length);
    if (compress === 'none') for (const n of names) expect(got.get(n)?.equals(Buffer.from(contentFor(n))), n).toBe(true);
  });

  it('keeps the members of a sample next to each other, in one shard', () => {
    const listed = shards.map((s) => run('tar', ['-tf', s]).split('\n').filter(Boolean));
    const keyOf = (n: string) => n.slice(0, n.indexOf('.', n.lastIndexOf('/') + 1));
    const seen = new Set<string>();
    for (const members of listed) {
      let prev: string | undefined;
      for (const m of members) {
        const k = keyOf(m);
        if (k !== prev) {
          expect(seen.has(k), `${k} appears in two places`).toBe(false);
          seen.add(k);
        }
        prev = k;
      }
    }
  });

  if (compress === 'lz4') {
    it('LZ4 members decompress with the lz4 command to the original bytes', () => {
      if (!hasTool('lz4', ['-V'])) return;
      const out = tmpDir();
      for (const s of shards) run('tar', ['-xf', s, '-C', out]);
      const compressed = listFiles(out).filter((n) => n.endsWith('.lz4'));
      expect(compressed.length).toBeGreaterThan(3);
      for (const n of compressed) {
        run('lz4', ['-d', '-q', path.join(out, n), path.join(out, `${n}.out`)]);
        const original = n.slice(0, -4);
        expect(Buffer.from(fs.readFileSync(path.join(out, `${n}.out`))).equals(Buffer.from(contentFor(original))), original).toBe(true);
      }
    });
  }
});
