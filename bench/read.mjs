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
import { renderMarkdown } from './read-report.mjs';

const SELF = fileURLToPath(import.meta.url);

function parseArgs(argv) {
  const opts = { samples: 20000, runs: 5, warmup: 3, concurrency: 8, batch: 32, minKb: 1, maxKb: 100, dir: '', keep: false, json: '', child: '', time: '', only: '' };
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
    else throw new Error(`unknown argument ${a}`);
  }
  return opts;
}

/** mulberry32: a small seeded PRNG so every run generates the same data and orders. */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
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

async function generate(opts, dir) {
  const raw = path.join(dir, 'raw');
  const ds = path.join(dir, 'ds');
  const lmdbPath = path.join(dir, 'lmdb');
  if (fs.existsSync(path.join(ds, 'manifest.json'))) return;
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
    for (const i of order) bytes += read(i).length;
    return bytes;
  };
  // keys are in key order: position i holds keys[i]
  const { dsNoVerify, dsPortable } = ctx;
  return {
    'raw readFileSync': epochOf((i) => fs.readFileSync(files[i])),
    'shardkit getSync': epochOf((i) => ds.getSync(keys[i]).members.bin),
    'shardkit atSync': epochOf((i) => ds.atSync(i).members.bin),
    'shardkit atSync verify off': epochOf((i) => dsNoVerify.atSync(i).members.bin),
    'shardkit getSync verify off': epochOf((i) => dsNoVerify.getSync(keys[i]).members.bin),
    'shardkit atSync native off': epochOf((i) => dsPortable.atSync(i).members.bin),
    'shardkit getSync native off': epochOf((i) => dsPortable.getSync(keys[i]).members.bin),
    'shardkit getViewSync': epochOf((i) => ds.getViewSync(keys[i]).members.bin),
    'shardkit atViewSync': epochOf((i) => ds.atViewSync(i).members.bin),
    'shardkit atViewSync verify off': epochOf((i) => dsNoVerify.atViewSync(i).members.bin),
    'shardkit atViewSync native off': epochOf((i) => dsPortable.atViewSync(i).members.bin),
    // the floor of any copying read here: what getSync's copy alone costs (below)
    ...(ctx.floor === undefined ? {} : { 'owned-copy floor': epochOf(ctx.floor.read) }),
    'lmdb getBinaryFast (view)': epochOf((i) => db.getBinaryFast(keys[i])),
    'lmdb get': epochOf((i) => db.get(keys[i])),
    'raw fs.promises.readFile': async () => {
      let bytes = 0;
      await poolRun(n, opts.concurrency, async (k) => {
        const data = await fs.promises.readFile(files[order[k]]); // not `bytes += await`: that reads bytes first
        bytes += data.length;
      });
      return bytes;
    },
    'shardkit loader': async () => {
      let bytes = 0;
      const loader = ds.loader({ batchSize: opts.batch, shuffle: 'full', seed: 1, epoch: epoch++, concurrency: opts.concurrency });
      for await (const batch of loader) for (const s of batch) bytes += s.members.bin.length;
      return bytes;
    },
    'shardkit loader view': async () => {
      let bytes = 0;
      const loader = ds.loader({ batchSize: opts.batch, shuffle: 'full', seed: 1, epoch: epoch++, concurrency: opts.concurrency, view: true });
      for await (const batch of loader) for (const s of batch) bytes += s.members.bin.length;
      return bytes;
    },
  };
}

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
  const n = opts.samples;
  const keys = Array.from({ length: n }, (_, i) => keyOf(i));
  keys.sort();
  const files = keys.map((k) => path.join(dir, 'raw', `${k}.bin`));
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
  const own = await openDataset(path.join(dir, 'ds'), { checkShards: 'size' }); // leaves ds's page cache and counters alone
  for await (const e of own.entries()) {
    const m = e.members[0];
    shard.push(e.shard);
    offset.push(e.offset + m.offset);
    length.push(m.storedSize);
  }
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
      const bytes = arena.take(length[i]);
      addon.copy(maps[shard[i]], offset[i], length[i], bytes, 0, 0, length[i]);
      return bytes;
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
  const dir = opts.dir || path.join(os.tmpdir(), `shardkit-bench-read-${opts.samples}-${opts.minKb}-${opts.maxKb}`);
  if (opts.child) return child(opts, dir);
  if (opts.time) return timeChild(opts, dir);

  const t0 = performance.now();
  await generate(opts, dir);
  const genSeconds = (performance.now() - t0) / 1000;
  warm(dir);
  const io = new IoStats();
  const ctx = await context(opts, dir, io);
  const all = Object.fromEntries(Object.entries(methods(ctx)).filter(([k]) => k === 'raw readFileSync' || !opts.only || new RegExp(opts.only).test(k)));
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
    data: { samples: n, bytes: totalBytes, meanBytes: Math.round(totalBytes / n), sizes: `log-uniform ${opts.minKb}-${opts.maxKb} KiB`, shards: shardCount, generateSeconds: Math.round(genSeconds) },
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
