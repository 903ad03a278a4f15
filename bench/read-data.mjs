/**
 * The data of bench/read.mjs, made once per bench dir: the same samples as raw files, as a shardkit dataset and in
 * LMDB, either synthetic (seeded, log-uniform sizes) or a real tree packed as a user would; and the seeded order the
 * methods read them in.
 */
import fs from 'node:fs';
import path from 'node:path';
import { open as openLmdb } from 'lmdb';
import { DatasetWriter } from '../dist/src/pack/dataset-writer.js';
import { pack } from '../dist/src/pack/pack.js';
import { openDataset } from '../dist/src/read/dataset.js';
import { memberPath } from '../dist/formats/sample.js';
import { SeededRandom } from '../dist/src/bench/seeded-random.js';

/** Seeded uniform floats in [0, 1): the same data and orders on every run. */
function rng(seed) {
  const r = new SeededRandom(seed);
  return () => r.float();
}

export function permutation(n, seed) {
  const r = rng(seed);
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [p[i], p[j]] = [p[j], p[i]];
  }
  return p;
}

const keyOf = (i) => `d${String(i % 100).padStart(2, '0')}/${String(i).padStart(7, '0')}`;

/**
 * What the timed processes read: `samples.json` in the bench dir lists, per position (key order), the sample's key and
 * its raw files relative to `rawRoot`. The dataset is `ds`, the LMDB file `lmdb` (one record per sample: its members'
 * bytes concatenated, so every method reads the same number of bytes).
 */
export const SAMPLES_FILE = 'samples.json';

export async function generate(opts, dir) {
  if (opts.tree) return generateFromTree(opts.tree, dir);
  const raw = path.join(dir, 'raw');
  const ds = path.join(dir, 'ds');
  const lmdbPath = path.join(dir, 'lmdb');
  if (fs.existsSync(path.join(dir, SAMPLES_FILE))) return;
  fs.rmSync(dir, { recursive: true, force: true });
  const r = rng(42);
  const writer = new DatasetWriter({ dir: ds, shardBytes: 64 * 1024 * 1024 });
  const db = openLmdb({ path: lmdbPath, encoding: 'binary', compression: false });
  const lnMin = Math.log(opts.minKb * 1024);
  const lnMax = Math.log(opts.maxKb * 1024);
  for (let i = 0; i < opts.samples; i++) {
    const size = Math.round(Math.exp(lnMin + r() * (lnMax - lnMin)));
    const bytes = Buffer.allocUnsafe(size);
    for (let j = 0; j < size; j += 4) bytes.writeUInt32LE((r() * 2 ** 32) >>> 0, Math.min(j, size - 4));
    const key = keyOf(i);
    const file = path.join(raw, `${key}.bin`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, bytes);
    writer.add({ key, members: { bin: bytes } });
    db.put(key, bytes);
  }
  await db.flushed;
  await db.close();
  await writer.finish();
  const keys = Array.from({ length: opts.samples }, (_, i) => keyOf(i)).sort();
  fs.writeFileSync(path.join(dir, SAMPLES_FILE), JSON.stringify({ rawRoot: raw, samples: keys.map((key) => ({ key, files: [`${key}.bin`] })) }));
}

/** A real tree: packed by `pack` as a user would (default options), and loaded into LMDB sample by sample. */
async function generateFromTree(tree, dir) {
  const stamp = path.join(dir, SAMPLES_FILE);
  if (fs.existsSync(stamp) && JSON.parse(fs.readFileSync(stamp, 'utf8')).rawRoot === tree) return;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  // groupNumbered: tree A holds names like RelNotes/1.5.0.2.txt, which pack refuses without a choice of key rule;
  // WebDataset grouping (one sample per key, as before pack asked) keeps the figures comparable with earlier runs
  await pack({ source: tree, out: path.join(dir, 'ds'), groupNumbered: true });
  const ds = await openDataset(path.join(dir, 'ds'));
  const db = openLmdb({ path: path.join(dir, 'lmdb'), encoding: 'binary', compression: false });
  const samples = [];
  for await (const e of ds.entries()) {
    const files = e.members.map((m) => memberPath(e.key, m.ext));
    samples.push({ key: e.key, files });
    db.put(e.key, Buffer.concat(files.map((f) => fs.readFileSync(path.join(tree, f)))));
  }
  await db.flushed;
  await db.close();
  await ds.close();
  fs.writeFileSync(stamp, JSON.stringify({ rawRoot: tree, samples }));
}

/** Reads every byte once so all measurements start from a warm page cache. */
export function warm(dir) {
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else fs.readFileSync(p);
    }
  };
  walk(dir);
}
