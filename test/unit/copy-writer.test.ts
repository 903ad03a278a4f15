import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { crc32c } from '../../formats/checksum.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import { CopyWriter } from '../../src/cache/copy-writer.js';
import { ShardCache } from '../../src/cache/shard-cache.js';
import { tmpDir } from '../helpers/tmp.js';

/** A shard of `n` bytes and its index record. */
function shard(n: number, seed: number): { bytes: Uint8Array; record: ShardRecord } {
  const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
  return { bytes, record: { file: `shard-${seed}.tar`, bytes: n, samples: 1, crc32c: crc32c(bytes), fingerprint: -1 } };
}

const noRemote = (): Promise<Uint8Array> => Promise.reject(new Error('not used'));
const never = (): number => Infinity;

/** Every file under the cache dir, relative, sorted (the dataset subdir's name is a hash). */
function files(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name).sort();
}

async function start(cache: ShardCache, i: number): Promise<CopyWriter> {
  const w = await cache.startCopy(i, never);
  expect(w).toBeInstanceOf(CopyWriter);
  return w as CopyWriter;
}

describe('CopyWriter (ShardCache.startCopy)', () => {
  it('keeps a copy only when the bytes written are the shard the index describes; frees its lock and room either way', async () => {
    const dir = tmpDir();
    const a = shard(3000, 1);
    const b = shard(2000, 2);
    const cache = ShardCache.open({ dir, maxBytes: 10_000 }, 'http://example.invalid/ds', '0badc0de', [a.record, b.record], noRemote);
    try {
      const good = await start(cache, 0);
      await good.write(a.bytes.subarray(0, 1000));
      await good.write(a.bytes.subarray(1000));
      expect(await good.commit()).toBe(true);
      expect(fs.readFileSync(good.copy).equals(Buffer.from(a.bytes))).toBe(true);
      expect(await cache.startCopy(0, never)).toBe('cached');

      // one byte changed: refused, and nothing is left under the copy's name, no .part, no lock
      const bad = await start(cache, 1);
      const damaged = b.bytes.slice();
      damaged[7] = (damaged[7] as number) ^ 1;
      await bad.write(damaged);
      expect(await bad.commit()).toBe(false);
      expect(files(dir).filter((f) => !f.startsWith('shard-1'))).toEqual(['identity.json']);

      // too long, then too short: refused
      const long = await start(cache, 1);
      await long.write(b.bytes);
      await long.write(Uint8Array.of(0));
      expect(await long.commit()).toBe(false);
      const short = await start(cache, 1);
      await short.write(b.bytes.subarray(0, 1999));
      expect(await short.commit()).toBe(false);

      // an abort (a read that failed half way) leaves nothing; the lock is free for the next writer
      const aborted = await start(cache, 1);
      await aborted.write(b.bytes.subarray(0, 500));
      await aborted.abort();
      await aborted.abort();
      expect(files(dir).filter((f) => !f.startsWith('shard-1'))).toEqual(['identity.json']);
      const last = await start(cache, 1);
      await last.write(b.bytes);
      expect(await last.commit()).toBe(true);
      expect(files(dir).filter((f) => f.endsWith('.part') || f.endsWith('.lock'))).toEqual([]);
      const copies = files(dir).filter((f) => /~[0-9a-f]{8}~\d+$/.test(f));
      expect(copies.length).toBe(2);
      // each kept copy has its proof (copy-proof.ts), and a refused one none
      expect(files(dir).filter((f) => f.endsWith('.ok'))).toEqual(copies.map((f) => `${f}.ok`));
    } finally {
      await cache.close();
    }
  });

  it('a shard larger than the cache, or one that would evict a shard needed sooner, is not started', async () => {
    const dir = tmpDir();
    const a = shard(3000, 1);
    const b = shard(3000, 2);
    const big = shard(5000, 3);
    const cache = ShardCache.open({ dir, maxBytes: 4000 }, path.join(dir, 'src'), '0badc0de', [a.record, b.record, big.record], noRemote);
    try {
      expect(await cache.startCopy(2, never)).toBe('no-room');
      const w = await start(cache, 0);
      await w.write(a.bytes);
      expect(await w.commit()).toBe(true);
      // verify ranks the shards it copied before the current one sooner: shard 0 is kept, shard 1 not started
      expect(await cache.startCopy(1, (s) => (s === 0 ? 0 : Infinity))).toBe('no-room');
      // with shard 0 outside the plan (LRU), it is evicted for shard 1
      const w1 = await start(cache, 1);
      await w1.write(b.bytes);
      expect(await w1.commit()).toBe(true);
      const again = await cache.startCopy(0, never);
      expect(again).toBeInstanceOf(CopyWriter);
      await (again as CopyWriter).abort();
    } finally {
      await cache.close();
    }
  });
});
