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
 * "view-copy floor" times the same copies into one reused buffer: what atViewSync's copy alone costs, against which
 * "view-copy floor vs py-lmdb txn.get" sets the most the view reads can reach against py-lmdb.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { open as openLmdb } from 'lmdb';
import { openDataset } from '../dist/src/read/dataset.js';
import { IoStats } from '../dist/src/io/io-stats.js';
import { nativeAddon } from '../dist/src/native/native.js';
import { median } from '../dist/src/bench/report-stats.js';
import { planEpoch } from '../dist/src/read/epoch-plan.js';
import { generate, permutation, SAMPLES_FILE, warm } from './read-data.mjs';
import { ownedCopyFloor } from './read-floor.mjs';
import { buildPyLmdb, ensurePyLmdb, PY_METHODS, PYTHON, timePyLmdb } from './read-pylmdb.mjs';
import { renderMarkdown } from './read-report.mjs';
import { straceCounts } from './read-strace.mjs';
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

/** Sum of a sample's member byte lengths. */
function memberBytes(sample) {
  let n = 0;
  const m = sample.members;
  for (const ext in m) n += m[ext].length;
  return n;
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
    ...(ctx.floor === undefined ? {} : { 'owned-copy floor': epochOf(ctx.floor.read), 'view-copy floor': epochOf(ctx.floor.readView) }),
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
  if (name in PY_METHODS) return timePyLmdb(name, dir, ORDER_FILE, opts.warmup, EPOCHS_PER_PROCESS);
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
  if (Object.keys(pyMethods).length > 0) buildPyLmdb(dir, SAMPLES_FILE);
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
    'atViewSync / view-copy floor': ['view-copy floor', 'shardkit atViewSync'],
    'view-copy floor vs py-lmdb txn.get': ['py-lmdb txn.get', 'view-copy floor'],
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
    strace: straceCounts(SELF, opts, dir, n),
  };

  process.stdout.write(`${renderMarkdown(report)}\n\n${JSON.stringify(report, null, 2)}\n`);
  if (opts.json) fs.writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
  await closeContext(ctx);
  if (!opts.keep && !opts.dir) fs.rmSync(dir, { recursive: true, force: true });
}

await main();
