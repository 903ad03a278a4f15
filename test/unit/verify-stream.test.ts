/**
 * verify checks the shards during the index walk (shard-stream.ts): in key order when it is also each shard's
 * offset order, several shards at once when their keys interleave (append, merge), and from the spans sorted by
 * offset when a shard's samples come out of order. Whatever the order, it names exactly the damaged samples.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { crc32cHex } from '../../formats/checksum.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { DatasetWriter, INDEX_FILE } from '../../src/pack/dataset-writer.js';
import { writeIndexFile } from '../../src/pack/index-file.js';
import { openDataset } from '../../src/read/dataset.js';
import { MAX_OPEN_SHARDS } from '../../src/verify/shard-stream.js';
import { verifyDataset } from '../../src/verify/verify-dataset.js';
import { tmpDir } from '../helpers/tmp.js';

const N = 150;
const keyOf = (i: number) => `k/${String(i).padStart(4, '0')}`;
function body(i: number): Uint8Array {
  let x = i + 7;
  return Uint8Array.from({ length: 1 + ((i * 37) % 160) }, () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24);
}

/** A packed dataset of N samples over many small shards (more than verify keeps open at once). */
async function makeDataset(compress: 'none' | 'lz4'): Promise<string> {
  const dir = tmpDir();
  const w = new DatasetWriter({ dir, layout: 'packed', compress, shardBytes: 1024, pageSize: 1024 });
  for (let i = 0; i < N; i++) w.add({ key: keyOf(i), members: { bin: i % 5 === 0 ? new TextEncoder().encode('z'.repeat(30 + i)) : body(i) } });
  await w.finish();
  return dir;
}

async function entriesOf(dir: string): Promise<{ entries: IndexEntry[]; shards: ShardRecord[]; pageSize: number; names: string[] }> {
  const ds = await openDataset(dir);
  const entries: IndexEntry[] = [];
  for await (const { position: _, ...e } of ds.entries()) entries.push(e);
  const shards = ds.index.shards.map((s) => ({ ...s }));
  const names = shards.map((_, i) => ds.shardName(i));
  const { pageSize } = ds.index.header;
  await ds.close();
  return { entries, shards, pageSize, names };
}

/** Writes the index from `entries` (sorted here by key) and makes the manifest agree with it. */
function writeIndex(dir: string, entries: IndexEntry[], shards: ShardRecord[], pageSize: number): void {
  const sorted = [...entries].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const w = writeIndexFile(path.join(dir, INDEX_FILE), sorted, shards, 'packed', pageSize, false);
  const file = path.join(dir, 'manifest.json');
  const m = JSON.parse(fs.readFileSync(file, 'utf8'));
  m.index = { ...m.index, bytes: w.bytes, crc32c: crc32cHex(w.headerCrc) };
  fs.writeFileSync(file, JSON.stringify(m, null, 2));
}

function copyDir(src: string): string {
  const dir = tmpDir();
  for (const f of fs.readdirSync(src)) fs.copyFileSync(path.join(src, f), path.join(dir, f));
  return dir;
}

afterEach(() => {
  delete process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES;
});

describe('verify in any key order', () => {
  it('has more shards than it keeps open, so that round-robin keys drop some to the sorted pass', async () => {
    const { shards } = await entriesOf(await makeDataset('none'));
    expect(shards.length).toBeGreaterThan(MAX_OPEN_SHARDS);
  });

  for (const compress of ['none', 'lz4'] as const) {
    it(`names exactly the damaged samples, whatever the key order says of the offsets (${compress}; property)`, async () => {
      const clean = await makeDataset(compress);
      const { entries, shards, pageSize, names } = await entriesOf(clean);
      const orders = fc.oneof(
        fc.constant('offset order'),
        fc.constant('round robin over the shards'),
        fc.constant('two shards swapped'),
        fc.array(fc.nat(), { minLength: N, maxLength: N }),
      );
      await fc.assert(
        fc.asyncProperty(orders, fc.uniqueArray(fc.nat(N - 1), { maxLength: 6 }), fc.nat(), fc.integer({ min: 1, max: 255 }), fc.constantFrom(0, 97, 700), async (order, hit, at, mask, chunk) => {
          // which entry takes which key: rank r in the new key order
          const rank = entries.map((_, i) => i);
          if (order === 'round robin over the shards') {
            const within = new Map<number, number>();
            const pos = entries.map((e) => {
              const n = within.get(e.shard) ?? 0;
              within.set(e.shard, n + 1);
              return n * shards.length + e.shard;
            });
            rank.sort((a, b) => (pos[a] as number) - (pos[b] as number));
          } else if (order === 'two shards swapped') {
            const last = entries.filter((e) => e.shard === shards.length - 1).length;
            rank.unshift(...rank.splice(N - last, last));
          } else if (typeof order !== 'string') rank.sort((a, b) => (order[a] as number) - (order[b] as number) || a - b);
          const dir = copyDir(clean);
          const relabeled = entries.map((e) => ({ ...e }));
          rank.forEach((i, r) => void (relabeled[i]!.key = keyOf(r)));
          writeIndex(dir, relabeled, shards, pageSize);
          for (const i of hit) {
            const e = entries[i]!;
            const file = path.join(dir, names[e.shard]!);
            const b = fs.readFileSync(file);
            const p = e.offset + (at % e.length);
            b[p] = (b[p] as number) ^ mask;
            fs.writeFileSync(file, b);
          }
          if (chunk > 0) process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES = String(chunk);
          else delete process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES;
          const r = await verifyDataset(dir);
          const damagedShards = new Set(hit.map((i) => names[entries[i]!.shard]));
          // a flip LZ4 decoding ignores leaves the member intact: only its shard's checksum then sees it
          const named = new Set(r.damaged.map((d) => d.key));
          for (const i of hit) if (!named.has(relabeled[i]!.key)) expect(entries[i]!.members[0]!.codec).toBe(1);
          expect([...named].every((k) => hit.some((i) => relabeled[i]!.key === k))).toBe(true);
          expect(r.damagedCount).toBe(named.size);
          expect(r.damaged.every((d) => d.what.startsWith('member "bin": '))).toBe(true);
          expect([...new Set(r.problems.map((p) => p.file))].sort()).toEqual([...damagedShards].sort());
          expect(r.checked.samples).toBe(N);
          expect(r.checked.shards).toBe(shards.length);
          expect(r.ok).toBe(hit.length === 0);
          fs.rmSync(dir, { recursive: true, force: true });
        }),
        { numRuns: 30 },
      );
    });
  }

  it('a span that overlaps the one before it in its shard is damage, named with the other sample', async () => {
    const dir = await makeDataset('none');
    const { entries, shards, pageSize } = await entriesOf(dir);
    const i = entries.findIndex((e, k) => k > 0 && e.shard === entries[k - 1]!.shard && entries[k - 1]!.length > 1);
    const moved = entries.map((e) => ({ ...e }));
    moved[i]!.offset = entries[i - 1]!.offset + 1;
    writeIndex(dir, moved, shards, pageSize);
    for (const chunk of [undefined, '3']) {
      if (chunk !== undefined) process.env.SHARDKIT_TEST_VERIFY_CHUNK_BYTES = chunk;
      const r = await verifyDataset(dir);
      expect(r.problems).toEqual([]);
      expect(r.damaged).toEqual([{ key: entries[i]!.key, shard: expect.any(String), offset: entries[i - 1]!.offset + 1, what: `span overlaps sample ${JSON.stringify(entries[i - 1]!.key)}` }]);
    }
  });
});
