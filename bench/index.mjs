#!/usr/bin/env node
/**
 * Index figures for a dataset of N tiny samples (default 1,000,000), against lmdb-js measured in the same run:
 * bulk-load entries/s, key and position lookups/s on a warm cache, index bytes per entry, time to open.
 * Medians of --repeat runs; the machine is shared, so read the ratios, not the absolute times.
 *
 *   npm run build && node bench/index.mjs [--samples 1000000] [--repeat 5] [--out bench/out/index.json]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { DatasetWriter } from '../dist/src/pack/dataset-writer.js';
import { openDataset } from '../dist/src/read/dataset.js';
import { writeIndexFile } from '../dist/src/pack/index-file.js';
import { median } from '../dist/src/bench/report-stats.js';

const { values } = parseArgs({ options: { samples: { type: 'string', default: '1000000' }, repeat: { type: 'string', default: '5' }, out: { type: 'string' }, child: { type: 'string' } } });
const N = Number(values.samples);
const R = Number(values.repeat);
const keyOf = (i) => `train/n${String(i % 1000).padStart(8, '0')}/n${String(i % 1000).padStart(8, '0')}_${String(i).padStart(7, '0')}`;
const now = () => Number(process.hrtime.bigint()) / 1e6;

if (values.child) {
  // a fresh process: time to open and serve the first lookup, cold for this process, warm page cache
  const t0 = now();
  const ds = await openDataset(values.child);
  const t1 = now();
  ds.getSync(keyOf(N >> 1));
  const t2 = now();
  process.stdout.write(JSON.stringify({ openMs: t1 - t0, firstGetMs: t2 - t1 }));
  process.exit(0);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-bench-index-'));
const keys = Array.from({ length: N }, (_, i) => keyOf(i)).sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b))));
const body = new Uint8Array(8);

function packOnce(dir) {
  const w = new DatasetWriter({ dir, layout: 'packed', force: true, shardBytes: 256 << 20 });
  const t0 = now();
  for (let i = 0; i < N; i++) {
    body[0] = i & 255;
    w.add({ key: keys[i], members: { bin: body } });
  }
  const tAdd = now();
  return w.finish().then(() => ({ totalMs: now() - t0, addMs: tAdd - t0 }));
}

// the index alone: bulk-load of N sorted entries into a file (what pack does after the shards are written)
function bulkLoadOnce() {
  const t0 = now();
  function* entries() {
    for (let i = 0; i < N; i++) yield { key: keys[i], shard: 0, offset: i * 8, length: 8, members: [{ ext: 'bin', offset: 0, size: 8, storedSize: 8, codec: 0, crc32c: i >>> 0 }] };
  }
  writeIndexFile(path.join(work, 'bulk.skidx'), entries(), [{ file: 's', bytes: N * 8, samples: N, crc32c: 0, fingerprint: 0 }], 'packed', 4096, false);
  return now() - t0;
}
const bulkLoads = [];
for (let r = 0; r < R; r++) bulkLoads.push(bulkLoadOnce());

const dsDir = path.join(work, 'ds');
const packs = [];
for (let r = 0; r < Math.min(R, 3); r++) packs.push(await packOnce(dsDir));
const indexBytes = fs.statSync(path.join(dsDir, 'index.skidx')).size;

let lmdb;
try {
  lmdb = await import('lmdb');
} catch {
  lmdb = undefined;
}
const lmdbLoads = [];
let lmdbDb;
let lmdbBytes = 0;
if (lmdb) {
  for (let r = 0; r < Math.min(R, 3); r++) {
    const dir = path.join(work, `lmdb-${r}`);
    const db = lmdb.open({ path: dir, encoding: 'binary', compression: false, noSync: true });
    const t0 = now();
    const value = Buffer.alloc(24);
    await db.transaction(() => {
      for (let i = 0; i < N; i++) {
        value.writeUInt32LE(i, 0);
        db.put(keys[i], value);
      }
    });
    lmdbLoads.push(now() - t0);
    lmdbBytes = Number(execFileSync('du', ['-sb', dir]).toString().split('\t')[0]);
    if (r === 0) lmdbDb = db;
    else await db.close();
  }
}

const ds = await openDataset(dsDir, { pageCacheBytes: 256 << 20 });
const probes = Array.from({ length: 200_000 }, (_, i) => keys[(i * 7919 + 13) % N]);
const positions = probes.map((_, i) => (i * 104729) % N);
for (const k of probes) ds.index.findSync(k); // warm the page cache
const keyRuns = [];
const posRuns = [];
const lmdbRuns = [];
for (let r = 0; r < R; r++) {
  let t0 = now();
  for (const k of probes) ds.index.findSync(k);
  keyRuns.push(probes.length / ((now() - t0) / 1000));
  t0 = now();
  for (const p of positions) ds.index.atSync(p);
  posRuns.push(positions.length / ((now() - t0) / 1000));
  if (lmdbDb) {
    t0 = now();
    for (const k of probes) lmdbDb.getBinaryFast(k);
    lmdbRuns.push(probes.length / ((now() - t0) / 1000));
  }
}
await ds.close();

const opens = [];
for (let r = 0; r < R; r++) {
  opens.push(JSON.parse(execFileSync(process.execPath, [new URL(import.meta.url).pathname, '--child', dsDir, '--samples', String(N)]).toString()));
}

const result = {
  samples: N,
  repeat: R,
  indexBulkLoad: { medianMs: median(bulkLoads), entriesPerSec: N / (median(bulkLoads) / 1000) },
  pack: { medianMs: median(packs.map((p) => p.totalMs)), entriesPerSec: N / (median(packs.map((p) => p.totalMs)) / 1000) },
  lmdbLoad: lmdb ? { medianMs: median(lmdbLoads), entriesPerSec: N / (median(lmdbLoads) / 1000) } : null,
  indexBytes,
  indexBytesPerEntry: indexBytes / N,
  lmdbBytesPerEntry: lmdb ? lmdbBytes / N : null,
  keyLookupsPerSec: median(keyRuns),
  positionLookupsPerSec: median(posRuns),
  lmdbGetsPerSec: lmdb ? median(lmdbRuns) : null,
  openMs: median(opens.map((o) => o.openMs)),
  openPlusFirstGetMs: median(opens.map((o) => o.openMs + o.firstGetMs)),
};
result.ratios = {
  indexBulkLoadVsLmdb: lmdb ? result.indexBulkLoad.entriesPerSec / result.lmdbLoad.entriesPerSec : null,
  writerVsLmdb: lmdb ? result.pack.entriesPerSec / result.lmdbLoad.entriesPerSec : null,
  keyLookupVsLmdbGet: lmdb ? result.keyLookupsPerSec / result.lmdbGetsPerSec : null,
  indexBytesVsLmdb: lmdb ? result.indexBytesPerEntry / result.lmdbBytesPerEntry : null,
};
if (lmdbDb) await lmdbDb.close();
fs.rmSync(work, { recursive: true, force: true });
const text = JSON.stringify(result, null, 2);
if (values.out) fs.writeFileSync(values.out, text);
process.stdout.write(`${text}\n`);
