#!/usr/bin/env node
/**
 * Read benchmark: the same samples as raw files, as a shardkit dataset and in LMDB, read on a warm page cache in
 * random order. Each run times every method in a fresh process of its own (warm-up epochs, then the median of
 * three epochs run back to back). Reports medians of alternated runs and their ratios, syscalls per sample
 * (IoStats, cross-checked with `strace -c -f` when strace is installed) and files opened per epoch.
 *
 *   npm run build && node bench/read.mjs [--samples 20000] [--runs 5] [--warmup 3] [--concurrency 8] [--batch 32]
 *                                        [--min-kb 1] [--max-kb 100] [--dir DIR] [--keep] [--json FILE]
 *                                        [--only REGEX]   (time only the methods matching REGEX, plus the raw baseline)
 *                                        [--real A|B | --tree DIR] [--no-py]
 *
 * --real A|B reads a real tree (bench/real-trees.mjs: ~5,000 mixed PNG/SVG/JPEG/OGG/text files from Debian's own
 * data, or ~3,000 small PNGs), --tree DIR any tree: packed with `pack`'s defaults, samples grouped by key as pack
 * groups them; every method reads all of a sample's members (raw: all of its files), the same bytes.
 *
 * Issue 28 rows: "loader bB S" (batch size B in 1, 64, 256; shuffle S in none, full, block; loader defaults
 * otherwise) each next to "atSync S order", an atSync loop over the order the loader plans (planEpoch, same seed and
 * epoch, planned inside the timed epoch as the loader plans it); ratio "loader bB S / atSync (same order)", goal
 * >= 0.9. The py-lmdb side (`/usr/bin/python3`, Debian's python3-lmdb, installed with apt-get when absent and we are
 * root; --no-py leaves it out) reads the same samples in the same random order with `txn.get`, copying and with
 * `buffers=True` (zero copy), in a python3 process of its own with the same warm-up and timed epochs
 * (bench/read-pylmdb.py). Goals: atViewSync and the loader with view: true >= 1x py-lmdb txn.get, copying reads
 * >= 0.7x; loader >= 1.5x lmdb-js get. py-lmdb verifies nothing: each of these rows also has a "verify off" twin
 * (no CRC32C), labelled so, next to the verifying one.
 *
 * Every shardkit method verifies CRC32C (the default) except the rows marked "verify off"; the raw and LMDB reads
 * check nothing. CPU time (all threads) is reported next to wall time: on a shared machine it is the steadier one.
 * Rows marked "native off" open the dataset with `native: false` (pread + @node-rs/crc32, what SHARDKIT_NATIVE=0
 * gives); the others use the native addon (memory-mapped shards, SSE4.2 CRC32C) when it is built.
 *
 * Sizes are log-uniform between min-kb and max-kb (most samples small, as in real sets). Goals (issue 4):
 * sync path >= 3x readFileSync and faster than lmdb get(); loader >= 3x fs.promises.readFile at the same
 * concurrency and within 20 % of the sync path; ~1 syscall per sample; files opened per epoch = shards. The row
 * "owned-copy floor" times getSync's copy alone (arena buffer, native copy with CRC32C; no lookup, no sample): no
 * copying read can beat it, so "owned-copy floor vs readFileSync" bounds what getSync and atSync can reach here.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { open as openLmdb } from 'lmdb';
import { DatasetWriter } from '../dist/src/pack/dataset-writer.js';
import { openDataset } from '../dist/src/read/dataset.js';
import { IoStats } from '../dist/src/io/io-stats.js';
import { nativeAddon } from '../dist/src/native/native.js';
import { ReadArena } from '../dist/src/read/read-arena.js';
import { median } from '../dist/src/bench/report-stats.js';
import { planEpoch } from '../dist/src/read/epoch-plan.js';
import { pack } from '../dist/src/pack/pack.js';
import { memberPath } from '../dist/formats/sample.js';
import { SeededRandom } from '../dist/src/bench/seeded-random.js';
import { renderMarkdown } from './read-report.mjs';
import { realTree } from './real-trees.mjs';

const SELF = fileURLToPath(import.meta.url);

function parseArgs(argv) {
  const opts = { samples: 20000, runs: 5, warmup: 3, concurrency: 8, batch: 32, minKb: 1, maxKb: 100, dir: '', keep: false, json: '', child: '', time: '', only: '', tree: '', real: '', py: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === '--samples') opts.samples = Number(next());
    else if (a === '--runs') opts.runs = Number(next());
    else if (a === '--warmup') opts.warmup = Number(next());
    else if (a === '--concurrency') opts.concurrency = Number(next());
    else if (a === '--batch') opts.batch = Number(next());
    else if (a === '--min-kb') opts.minKb = Number(next());
    else if (a === '--max-kb') opts.maxKb = Number(next());
    else if (a === '--dir') opts.dir = next();
    else if (a === '--keep') opts.keep = true;
    else if (a === '--json') opts.json = next();
    else if (a === '--child') opts.child = next();
    else if (a === '--time') opts.time = next();
    else if (a === '--only') opts.only = next();
    else if (a === '--tree') opts.tree = next();
    else if (a === '--real') opts.real = next();
    else if (a === '--no-py') opts.py = false;
    else throw new Error(`unknown argument ${a}`);
  }
  return opts;
}

/** Seeded uniform floats in [0, 1): the same data and orders on every run. */
function rng(seed) {
  const r = new SeededRandom(seed);
  return () => r.float();
}

function permutation(n, seed) {
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
const SAMPLES_FILE = 'samples.json';

async function generate(opts, dir) {
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

/** Sum of a sample's member byte lengths. */
function memberBytes(sample) {
  let n = 0;
  const m = sample.members;
  for (const ext in m) n += m[ext].length;
  return n;
}

/** Reads every byte once so all measurements start from a warm page cache. */
function warm(dir) {
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else fs.readFileSync(p);
    }
  };
  walk(dir);
}

async function poolRun(n, concurrency, fn) {
  let next = 0;
  const worker = async () => {
    while (next < n) await fn(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The measured methods: each reads all N samples once, in a random order, and returns the bytes it got. */
function methods(ctx) {
  const { opts, files, keys, order, ds, db } = ctx;
  const n = order.length;
  let epoch = 0;
  // One synchronous epoch: `read(i)` gives sample i's bytes. Each method runs in a process of its own, so this
  // closure sees one `read` there and the call is inlined like the hand-written loop it replaces.
  const epochOf = (read) => () => {
    let bytes = 0;
    for (const i of order) bytes += read(i);
    return bytes;
  };
  const rawBytes = (i) => {
    let bytes = 0;
    for (const f of files[i]) bytes += fs.readFileSync(f).length;
    return bytes;
  };
  // goal 1: a loader epoch next to an atSync loop over the same order (planEpoch with the loader's options, which
  // is what the loader itself plans; made inside the timed epoch, as the loader makes it)
  const shardSizes = ds.shards.map((s) => s.samples);
  const atSyncPlanned = (shuffle) => () => {
    const plan = planEpoch({ shardSizes, seed: 1, epoch: epoch++, shuffle });
    const planned = plan.order;
    if (plan.length !== n) throw new Error(`plan of ${plan.length} samples, expected ${n}`);
    let bytes = 0;
    for (let k = 0; k < n; k++) bytes += memberBytes(ds.atSync(planned[k]));
    return bytes;
  };
  const loaderEpoch = (batchSize, shuffle, view = false, verify = true) => async () => {
    let bytes = 0;
    const loader = ds.loader({ batchSize, shuffle, seed: 1, epoch: epoch++, view, verify });
    for await (const batch of loader) for (const s of batch) bytes += memberBytes(s);
    return bytes;
  };
  const matrix = {};
  for (const shuffle of LOADER_SHUFFLES) {
    matrix[`atSync ${shuffle} order`] = atSyncPlanned(shuffle);
    for (const b of LOADER_BATCHES) matrix[`loader b${b} ${shuffle}`] = loaderEpoch(b, shuffle);
  }
  matrix['loader b64 full view'] = loaderEpoch(64, 'full', true);
  // py-lmdb checks nothing: the same reads without CRC32C, labelled so
  matrix['loader b64 full view verify off'] = loaderEpoch(64, 'full', true, false);
  matrix['loader b64 full verify off'] = loaderEpoch(64, 'full', false, false);
  // keys are in key order: position i holds keys[i]
  const { dsNoVerify, dsPortable } = ctx;
  return {
    'raw readFileSync': epochOf(rawBytes),
    'shardkit getSync': epochOf((i) => memberBytes(ds.getSync(keys[i]))),
    'shardkit atSync': epochOf((i) => memberBytes(ds.atSync(i))),
    'shardkit atSync verify off': epochOf((i) => memberBytes(dsNoVerify.atSync(i))),
    'shardkit getSync verify off': epochOf((i) => memberBytes(dsNoVerify.getSync(keys[i]))),
    'shardkit atSync native off': epochOf((i) => memberBytes(dsPortable.atSync(i))),
    'shardkit getSync native off': epochOf((i) => memberBytes(dsPortable.getSync(keys[i]))),
    'shardkit getViewSync': epochOf((i) => memberBytes(ds.getViewSync(keys[i]))),
    'shardkit atViewSync': epochOf((i) => memberBytes(ds.atViewSync(i))),
    'shardkit atViewSync verify off': epochOf((i) => memberBytes(dsNoVerify.atViewSync(i))),
    'shardkit atViewSync native off': epochOf((i) => memberBytes(dsPortable.atViewSync(i))),
    // the floor of any copying read here: what getSync's copy alone costs (below)
    ...(ctx.floor === undefined ? {} : { 'owned-copy floor': epochOf(ctx.floor.read) }),
    'lmdb getBinaryFast (view)': epochOf((i) => db.getBinaryFast(keys[i]).length),
    'lmdb get': epochOf((i) => db.get(keys[i]).length),
    'raw fs.promises.readFile': async () => {
      let bytes = 0;
      await poolRun(n, opts.concurrency, async (k) => {
        for (const f of files[order[k]]) {
          const data = await fs.promises.readFile(f); // not `bytes += await`: that reads bytes first
          bytes += data.length;
        }
      });
      return bytes;
    },
    'shardkit loader': async () => {
      let bytes = 0;
      const loader = ds.loader({ batchSize: opts.batch, shuffle: 'full', seed: 1, epoch: epoch++, concurrency: opts.concurrency });
      for await (const batch of loader) for (const s of batch) bytes += memberBytes(s);
      return bytes;
    },
    'shardkit loader view': async () => {
      let bytes = 0;
      const loader = ds.loader({ batchSize: opts.batch, shuffle: 'full', seed: 1, epoch: epoch++, concurrency: opts.concurrency, view: true });
      for await (const batch of loader) for (const s of batch) bytes += memberBytes(s);
      return bytes;
    },
    ...matrix,
  };
}

/** Loader rows of goal 1 (issue 28): every batch size and shuffle, each next to atSync over the same order. */
const LOADER_BATCHES = [1, 64, 256];
const LOADER_SHUFFLES = ['none', 'full', 'block'];

/** The py-lmdb side (Debian's python3-lmdb), each timed in a python3 process of its own: name -> extra arguments. */
const PY_METHODS = { 'py-lmdb txn.get': [], 'py-lmdb txn.get buffers': ['--buffers'] };
const PYTHON = '/usr/bin/python3';
const PY_SCRIPT = fileURLToPath(new URL('./read-pylmdb.py', import.meta.url));

/** Installs python3-lmdb from Debian when /usr/bin/python3 cannot import lmdb; false when that is not possible. */
function ensurePyLmdb() {
  const ok = () => spawnSync(PYTHON, ['-c', 'import lmdb'], { stdio: 'ignore' }).status === 0;
  if (ok()) return true;
  if (process.getuid?.() !== 0) return false;
  process.stderr.write('installing python3-lmdb with apt-get\n');
  spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'python3-lmdb'], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return ok();
}

/** The py-lmdb side's environment (written by read-pylmdb.py --build from samples.json, once per bench dir). */
const PY_LMDB_DIR = 'pylmdb';

function buildPyLmdb(dir) {
  if (fs.existsSync(path.join(dir, PY_LMDB_DIR, 'data.mdb'))) return;
  const res = spawnSync(PYTHON, [PY_SCRIPT, path.join(dir, PY_LMDB_DIR), path.join(dir, SAMPLES_FILE), '--build'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (res.status !== 0) throw new Error(`building the py-lmdb environment failed (exit ${res.status})`);
}

/** The keys of the random order, one a line, for the py-lmdb side to read in the same order. */
const ORDER_FILE = 'order-keys.txt';

/**
 * Epochs timed in each fresh process, after `--warmup` epochs (default 3); the process reports their median. One
 * warm-up epoch of 20,000 samples was not enough for the loader's async code to reach its optimized tier (epochs
 * 1, 2, 3, 4+ measured 114, 100, 97, 93 ms; the synchronous calls settle after one): a training run's epochs are
 * the later ones.
 */
const EPOCHS_PER_PROCESS = 3;

/**
 * Times one method in this (fresh) process: a warm-up epoch (JIT, index pages, shard handles and maps), then
 * EPOCHS_PER_PROCESS epochs back to back, as a training loop runs them: each pays for the garbage it makes, and no
 * forced GC resets the heap in between (a full GC before each epoch was measured to make the next one's allocations
 * up to 1.6x slower: the heap and malloc give memory back, and it is faulted in again). Every method gets a process
 * of its own, so no method runs on a heap, page tables or GC state another method left behind (in one shared process
 * the same call was measured 1.7x slower or faster depending on which dataset handle had been opened first).
 */
async function timeChild(opts, dir) {
  const ctx = await context(opts, dir, new IoStats());
  const fn = methods(ctx)[opts.time];
  const bytes = await fn();
  for (let e = 1; e < opts.warmup; e++) if ((await fn()) !== bytes) throw new Error(`${opts.time} read a different number of bytes in warm-up epoch ${e}`);
  const ms = [];
  const cpuMs = [];
  for (let e = 0; e < EPOCHS_PER_PROCESS; e++) {
    const start = performance.now();
    const cpu0 = process.cpuUsage();
    const got = await fn();
    const cpu = process.cpuUsage(cpu0);
    ms.push(performance.now() - start);
    cpuMs.push((cpu.user + cpu.system) / 1000); // all threads of the process: thread-pool reads count
    if (got !== bytes) throw new Error(`${opts.time} read ${bytes} bytes, then ${got}`);
  }
  await closeContext(ctx);
  process.stdout.write(`${JSON.stringify({ ms: median(ms), cpuMs: median(cpuMs), bytes })}\n`);
}

function timeInChild(opts, dir, name) {
  if (name in PY_METHODS) {
    const py = [PY_SCRIPT, path.join(dir, PY_LMDB_DIR), path.join(dir, ORDER_FILE), '--warmup', String(opts.warmup), '--epochs', String(EPOCHS_PER_PROCESS), ...PY_METHODS[name]];
    const res = spawnSync(PYTHON, py, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    if (res.status !== 0) throw new Error(`timing ${name} failed (exit ${res.status})`);
    return JSON.parse(res.stdout.trim().split('\n').pop());
  }
  const args = [SELF, '--time', name, '--dir', dir, '--samples', String(opts.samples), '--warmup', String(opts.warmup), '--concurrency', String(opts.concurrency), '--batch', String(opts.batch)];
  const res = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (res.status !== 0) throw new Error(`timing ${name} failed (exit ${res.status})`);
  return JSON.parse(res.stdout.trim().split('\n').pop());
}

/** One epoch of one method in a child process, for strace. */
async function child(opts, dir) {
  const ctx = await context(opts, dir, new IoStats());
  if (opts.child !== 'noop') await methods(ctx)[opts.child]();
  await closeContext(ctx);
}

async function closeContext(ctx) {
  await ctx.ds.close();
  await ctx.dsNoVerify.close();
  await ctx.dsPortable.close();
  ctx.db.close();
  ctx.floor?.close();
}

async function context(opts, dir, io) {
  const { rawRoot, samples } = JSON.parse(fs.readFileSync(path.join(dir, SAMPLES_FILE), 'utf8'));
  const n = samples.length;
  const keys = samples.map((s) => s.key);
  const files = samples.map((s) => s.files.map((f) => path.join(rawRoot, f)));
  const ds = await openDataset(path.join(dir, 'ds'), { ioStats: io, checkShards: 'size' });
  const db = openLmdb({ path: path.join(dir, 'lmdb'), encoding: 'binary', compression: false, readOnly: true });
  const dsNoVerify = await openDataset(path.join(dir, 'ds'), { checkShards: 'size', verify: false });
  const dsPortable = await openDataset(path.join(dir, 'ds'), { checkShards: 'size', native: false });
  return { opts, keys, files, order: permutation(n, 7), ds, dsNoVerify, dsPortable, db, io, floor: await ownedCopyFloor(ds, dir) };
}

/**
 * The "owned-copy floor": sample i's member bytes copied out of the mapped shard with CRC32C, by the native copy
 * getSync makes, into a buffer from the read arena getSync uses; no index lookup, no decoding, no sample object. No
 * copying read can beat it, so readFileSync / floor is the most a copying getSync or atSync can reach here, and
 * floor / getSync shows how close getSync comes. Undefined without the native addon.
 */
async function ownedCopyFloor(ds, dir) {
  const addon = nativeAddon();
  if (addon === undefined || !ds.native) return undefined;
  const shard = [];
  const offset = [];
  const length = [];
  const first = []; // position i's members are entries first[i] .. first[i + 1] - 1 of the arrays above
  const own = await openDataset(path.join(dir, 'ds'), { checkShards: 'size' }); // leaves ds's page cache and counters alone
  for await (const e of own.entries()) {
    first.push(shard.length);
    for (const m of e.members) {
      shard.push(e.shard);
      offset.push(e.offset + m.offset);
      length.push(m.storedSize);
    }
  }
  first.push(shard.length);
  await own.close();
  const maps = ds.shards.map((s) => {
    const fd = fs.openSync(path.join(dir, 'ds', s.file), 'r');
    try {
      return addon.map(fd, fs.fstatSync(fd).size, true);
    } finally {
      fs.closeSync(fd);
    }
  });
  const arena = new ReadArena();
  return {
    read: (i) => {
      let total = 0;
      for (let j = first[i]; j < first[i + 1]; j++) {
        const bytes = arena.take(length[j]);
        addon.copy(maps[shard[j]], offset[j], length[j], bytes, 0, 0, length[j]);
        total += bytes.length;
      }
      return total;
    },
    close: () => maps.forEach((m) => addon.unmap(m)),
  };
}

function strace(opts, dir, method) {
  const out = path.join(os.tmpdir(), `shardkit-strace-${process.pid}.txt`);
  const args = ['-f', '-c', '-o', out, process.execPath, SELF, '--child', method, '--dir', dir, '--samples', String(opts.samples), '--concurrency', String(opts.concurrency), '--batch', String(opts.batch)];
  const res = spawnSync('strace', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  if (res.status !== 0) return undefined;
  const text = fs.readFileSync(out, 'utf8');
  fs.rmSync(out, { force: true });
  const calls = {};
  for (const line of text.split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\S+)\s*$/.exec(line);
    if (m) calls[m[2]] = Number(m[1]);
  }
  return calls;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let tree;
  if (opts.real) tree = realTree(opts.real);
  if (tree) opts.tree = tree.dir;
  const defaultDir = opts.tree ? `shardkit-bench-read-tree-${opts.real || path.basename(opts.tree)}` : `shardkit-bench-read-${opts.samples}-${opts.minKb}-${opts.maxKb}`;
  const dir = opts.dir || path.join(os.tmpdir(), defaultDir);
  if (opts.child) return child(opts, dir);
  if (opts.time) return timeChild(opts, dir);

  const t0 = performance.now();
  await generate(opts, dir);
  const genSeconds = (performance.now() - t0) / 1000;
  warm(dir);
  if (opts.tree) warm(opts.tree);
  const io = new IoStats();
  const ctx = await context(opts, dir, io);
  opts.samples = ctx.keys.length;
  fs.writeFileSync(path.join(dir, ORDER_FILE), ctx.order.map((i) => `${ctx.keys[i]}\n`).join(''));
  const wanted = (k) => k === 'raw readFileSync' || !opts.only || new RegExp(opts.only).test(k);
  const pyMethods = opts.py && Object.keys(PY_METHODS).some(wanted) && ensurePyLmdb() ? Object.fromEntries(Object.keys(PY_METHODS).map((k) => [k, undefined])) : {};
  if (opts.py && Object.keys(pyMethods).length === 0 && Object.keys(PY_METHODS).some(wanted)) process.stderr.write(`py-lmdb side skipped: ${PYTHON} cannot import lmdb (apt-get install python3-lmdb)\n`);
  if (Object.keys(pyMethods).length > 0) buildPyLmdb(dir);
  const all = Object.fromEntries(Object.entries({ ...methods(ctx), ...pyMethods }).filter(([k]) => wanted(k)));
  const times = Object.fromEntries(Object.keys(all).map((k) => [k, []]));
  const cpuTimes = Object.fromEntries(Object.keys(all).map((k) => [k, []]));
  const expectedBytes = all['raw readFileSync']();
  const shardCount = ctx.ds.shards.length;

  for (let run = 0; run < opts.runs; run++) {
    // Alternate the order of methods between runs so drift (thermal, background work) spreads evenly.
    const names = run % 2 === 0 ? Object.keys(all) : Object.keys(all).reverse();
    for (const name of names) {
      const { ms, cpuMs, bytes } = timeInChild(opts, dir, name);
      times[name].push(ms);
      cpuTimes[name].push(cpuMs);
      if (bytes !== expectedBytes) throw new Error(`${name} read ${bytes} bytes, expected ${expectedBytes}`);
    }
  }

  // Operation counts for one epoch of each shardkit method on a fresh dataset handle (opens included).
  const counts = {};
  for (const name of ['shardkit atSync', 'shardkit atSync native off', 'shardkit loader']) {
    const fresh = new IoStats();
    const c = await context(opts, dir, fresh);
    // The portable dataset has counters of its own: count its epoch there.
    const ds = name.includes('native off') ? c.dsPortable : c.ds;
    const io = name.includes('native off') ? ds.io : fresh;
    const before = { ...io.snapshot(), misses: ds.stats().pageCache.misses };
    await methods(c)[name]();
    const s = io.snapshot();
    const pageReads = ds.stats().pageCache.misses - before.misses;
    const mapped = s.mappedReads - before.mappedReads;
    counts[name] = {
      opens: s.opens - before.opens,
      fstats: s.stats - before.stats,
      sampleReads: s.reads - before.reads - pageReads,
      mappedReads: mapped,
      readSyscalls: s.reads - before.reads - mapped,
      indexPageReads: pageReads,
    };
    await closeContext(c);
  }

  const n = opts.samples;
  const med = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  const cpuMed = Object.fromEntries(Object.entries(cpuTimes).map(([k, v]) => [k, median(v)]));
  const perSampleUs = (k) => (med[k] * 1000) / n;
  const cpuPerSampleUs = (k) => (cpuMed[k] * 1000) / n;
  const ratioPairs = {
    'getSync vs readFileSync': ['raw readFileSync', 'shardkit getSync'],
    'atSync vs readFileSync': ['raw readFileSync', 'shardkit atSync'],
    'atSync (verify off) vs readFileSync': ['raw readFileSync', 'shardkit atSync verify off'],
    'getViewSync vs readFileSync': ['raw readFileSync', 'shardkit getViewSync'],
    'atViewSync vs readFileSync': ['raw readFileSync', 'shardkit atViewSync'],
    'getSync (verify off) vs readFileSync': ['raw readFileSync', 'shardkit getSync verify off'],
    'atViewSync (verify off) vs readFileSync': ['raw readFileSync', 'shardkit atViewSync verify off'],
    'atSync (native off) vs readFileSync': ['raw readFileSync', 'shardkit atSync native off'],
    'atViewSync (native off) vs readFileSync': ['raw readFileSync', 'shardkit atViewSync native off'],
    'getSync vs lmdb get': ['lmdb get', 'shardkit getSync'],
    'getSync (verify off) vs lmdb get': ['lmdb get', 'shardkit getSync verify off'],
    'getSync (native off) vs lmdb get': ['lmdb get', 'shardkit getSync native off'],
    'getViewSync vs lmdb get': ['lmdb get', 'shardkit getViewSync'],
    'getViewSync vs lmdb getBinaryFast': ['lmdb getBinaryFast (view)', 'shardkit getViewSync'],
    'owned-copy floor vs readFileSync': ['raw readFileSync', 'owned-copy floor'],
    'getSync / owned-copy floor': ['owned-copy floor', 'shardkit getSync'],
    'loader vs fs.promises.readFile': ['raw fs.promises.readFile', 'shardkit loader'],
    'atSync / loader (loader time as a share of sync)': ['shardkit atSync', 'shardkit loader'],
    'atSync / loader view': ['shardkit atSync', 'shardkit loader view'],
    ...Object.fromEntries(LOADER_SHUFFLES.flatMap((sh) => LOADER_BATCHES.map((b) => [`loader b${b} ${sh} / atSync (same order)`, [`atSync ${sh} order`, `loader b${b} ${sh}`]]))),
    'loader b64 full vs lmdb-js get': ['lmdb get', 'loader b64 full'],
    'atViewSync vs py-lmdb txn.get': ['py-lmdb txn.get', 'shardkit atViewSync'],
    'atViewSync (verify off) vs py-lmdb txn.get': ['py-lmdb txn.get', 'shardkit atViewSync verify off'],
    'loader view (b64 full, verify off) vs py-lmdb txn.get': ['py-lmdb txn.get', 'loader b64 full view verify off'],
    'atSync (verify off) vs py-lmdb txn.get': ['py-lmdb txn.get', 'shardkit atSync verify off'],
    'loader b64 full (verify off) vs py-lmdb txn.get': ['py-lmdb txn.get', 'loader b64 full verify off'],
    'atViewSync vs py-lmdb buffers': ['py-lmdb txn.get buffers', 'shardkit atViewSync'],
    'loader view (b64 full) vs py-lmdb txn.get': ['py-lmdb txn.get', 'loader b64 full view'],
    'atSync vs py-lmdb txn.get': ['py-lmdb txn.get', 'shardkit atSync'],
    'loader b64 full vs py-lmdb txn.get': ['py-lmdb txn.get', 'loader b64 full'],
  };
  const measured = Object.entries(ratioPairs).filter(([, [a, b]]) => a in med && b in med); // all, or those --only kept
  const ratios = Object.fromEntries(measured.map(([k, [a, b]]) => [k, med[a] / med[b]]));
  const cpuRatios = Object.fromEntries(measured.map(([k, [a, b]]) => [k, cpuMed[a] / cpuMed[b]]));
  // Per run, the two methods ran minutes apart at most (alternated order): the median of the runs' own ratios
  // cancels the machine's drift between runs, which the ratio of medians does not. Also their spread.
  const runRatios = Object.fromEntries(measured.map(([k, [a, b]]) => [k, times[a].map((t, r) => t / times[b][r])]));
  const pairedRatios = Object.fromEntries(Object.entries(runRatios).map(([k, v]) => [k, median(v)]));

  let straceCounts;
  if (spawnSync('strace', ['-V']).status === 0) {
    const base = strace(opts, dir, 'noop');
    straceCounts = {};
    for (const m of ['raw readFileSync', 'shardkit atSync', 'shardkit loader', 'raw fs.promises.readFile']) {
      const calls = strace(opts, dir, m);
      if (base === undefined || calls === undefined) continue;
      const diff = (name) => (calls[name] ?? 0) - (base[name] ?? 0);
      const io = ['openat', 'open', 'read', 'pread64', 'fstat', 'newfstatat', 'statx', 'close'];
      straceCounts[m] = {
        perSample: Object.fromEntries(io.map((name) => [name, diff(name) / n]).filter(([, v]) => Math.abs(v) >= 0.001)),
        ioSyscallsPerSample: io.reduce((t, name) => t + diff(name), 0) / n,
        allSyscallsPerSample: (calls.total - base.total) / n,
      };
    }
  }

  const totalBytes = expectedBytes;
  const report = {
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, platform: `${os.platform()} ${os.release()}`, loadAverage: os.loadavg() },
    data: { samples: n, bytes: totalBytes, meanBytes: Math.round(totalBytes / n), sizes: opts.tree ? `real tree ${opts.tree}` : `log-uniform ${opts.minKb}-${opts.maxKb} KiB`, ...(tree ? { tree: { name: tree.name, files: tree.files, fingerprint: tree.fingerprint, byExt: tree.byExt } } : {}), shards: shardCount, generateSeconds: Math.round(genSeconds) },
    settings: { runs: opts.runs, warmupEpochs: opts.warmup, epochsTimed: EPOCHS_PER_PROCESS, concurrency: opts.concurrency, batchSize: opts.batch, verify: true, order: 'random', cache: 'warm', native: ctx.ds.native, crc32cKernel: nativeAddon()?.crc32cKernels.at(-1) },
    medianMs: med,
    medianCpuMs: cpuMed,
    perSampleUs: Object.fromEntries(Object.keys(med).map((k) => [k, perSampleUs(k)])),
    cpuPerSampleUs: Object.fromEntries(Object.keys(med).map((k) => [k, cpuPerSampleUs(k)])),
    runsMs: times,
    runsCpuMs: cpuTimes,
    ratios,
    cpuRatios,
    pairedRatios,
    runRatios,
    counts: { ...counts, 'raw files (per epoch)': { opens: n, note: 'open + fstat + read(s) + close per file' } },
    strace: straceCounts,
  };

  process.stdout.write(`${renderMarkdown(report)}\n\n${JSON.stringify(report, null, 2)}\n`);
  if (opts.json) fs.writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
  await closeContext(ctx);
  if (!opts.keep && !opts.dir) fs.rmSync(dir, { recursive: true, force: true });
}

await main();
