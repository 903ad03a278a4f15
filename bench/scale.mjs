#!/usr/bin/env node
/**
 * Scale benchmark (issue 28, goal 4): datasets of 10^6, 10^7 (and, with --max 1e8, 10^8) tiny samples in the packed
 * layout, written through DatasetWriter in key order (what a pack's walk gives). For each size n, every step in a
 * fresh process of its own:
 *
 *   index        the index alone: n sorted entries bulk-loaded into an index file (writeIndexFile), samples/s;
 *                alternated with lmdb-js below, --reps processes each: medians of wall and of CPU time, min and max;
 *   pack         samples/s through DatasetWriter (add + finish: shards, the index built as samples arrive, manifest),
 *                and its peak RSS (getrusage maxRSS of that process);
 *   lmdb-js      bulk load of the same n keys in the same run, up to 10^7, set up as its fastest: keys in order put
 *                with MDB_APPEND (`putSync(key, value, { append: true })`), 100,000 per synchronous write transaction
 *                (`transactionSync`), `useWritemap` (pages written in the map, no malloc'ed copies) and `noSync` (no
 *                fsync: shardkit's index step does not sync either); value 16 bytes (what the index records per
 *                sample); peak RSS (LMDB's map pages count in it);
 *   bytes        index bytes per sample (index file / n) and dataset bytes per sample;
 *   open         openDataset in a fresh process, warm page cache: median and max of --opens processes;
 *   lookups      getSync(key) and atSync(position) at seeded random keys / positions, each timed alone (hrtime):
 *                warm (one process, after 2,000 untimed lookups: --lookups timed; with the default in-process page
 *                cache of 256 MiB, and again with one 32x the index file, which holds every decoded page (a leaf of
 *                tiny samples decodes to ~20x its page); then the memory the process holds after a full GC:
 *                heapUsed, external, RSS, and the pages and bytes the page cache holds by its accounting),
 *                and cold (--cold times: the dataset's pages dropped from the page cache, then a fresh openDataset and
 *                one lookup; open and lookup timed apart). p50 and p99;
 *   verify       verifyDataset (every member's CRC32C checked) against the disk, alternated fresh processes (--reps
 *                each): a sequential read of the same files (index and shards, 4 MiB reads, like cat) cold, verify
 *                cold, the read warm, verify warm; rates in MB/s of index + shards, medians with min and max, verify
 *                as a ratio of the read's rate (by wall time, and by verify's CPU time: what a core of its own gives on
 *                a shared machine); verify's peak RSS (getrusage maxRSS); and `dd iflag=direct` of the largest shard.
 *
 * Cold steps drop the dataset's files from the page cache with posix_fadvise(DONTNEED) (`dd iflag=nocache count=0`
 * on each file): other processes' cached files stay (a shared machine). `--drop global` uses drop_caches instead
 * (root). The machine is shared: read ratios and how each figure grows with n, not absolute times.
 *
 *   npm run build && node bench/scale.mjs [--min 1e6] [--max 1e7] [--dir DIR] [--lookups 20000] [--cold 30]
 *                                         [--opens 5] [--reps 3] [--drop file|global] [--no-lmdb] [--no-verify] [--keep] [--json FILE]
 *                                         [--verify-only [--reuse]]   (verify against the disk alone; --reuse: a kept dataset in --dir)
 *                                         [--real A|B | --tree DIR [--pass SPEC]... [--reuse]]   (verify against the disk
 *                                                 on a real tree packed in the tar layout, --key-rule path, the passes given:
 *                                                 --pass tag=dirname gives samples of two members)
 *
 * Goals: index build >= 2x lmdb-js bulk load at 10^7; peak RSS while packing < 400 MB at 10^8; open < 20 ms at 10^8;
 * verify >= 0.8x the disk's sequential read rate. For reference: Megatron-Energon users report indexing 244M
 * samples taking over 13 hours (its SQLite phase).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { realTree } from './real-trees.mjs';

const SELF = fileURLToPath(import.meta.url);
const LMDB_TXN = 100_000;
const LMDB_MAX = 1e7;
const BODY = 8;

/** Sample i's key: sorted by i (class folders of 1,000 samples, like an image set). ~24 bytes. */
const keyOf = (i) => `train/c${String(Math.floor(i / 1000)).padStart(6, '0')}/${String(i).padStart(9, '0')}`;

/** mulberry32, seeded: the same lookups every run. */
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

const peakRssMiB = () => process.resourceUsage().maxRSS / 1024;
/** CPU ms (all threads) since `from` (a process.cpuUsage()): steadier than wall time on a shared machine. */
const cpuMs = (from) => {
  const c = process.cpuUsage(from);
  return (c.user + c.system) / 1000;
};
/** Drops `dir`'s files from the page cache (posix_fadvise DONTNEED through dd), or every file with SHARDKIT_BENCH_DROP=global. */
const dropCaches = (dir) => {
  execFileSync('sync');
  if (process.env.SHARDKIT_BENCH_DROP === 'global') fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
  else for (const f of fs.readdirSync(dir)) execFileSync('dd', [`if=${path.join(dir, f)}`, 'iflag=nocache', 'count=0'], { stdio: 'ignore' });
};
const quantile = (xs, q) => {
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const r3 = (x) => Math.round(x * 1000) / 1000;

const children = {
  async pack(dir, n) {
    const { DatasetWriter } = await import('../dist/src/pack/dataset-writer.js');
    const w = new DatasetWriter({ dir, layout: 'packed', force: true });
    const body = new Uint8Array(BODY);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      body[0] = i & 255;
      body[1] = (i >>> 8) & 255;
      w.add({ key: keyOf(i), members: { bin: body } });
    }
    const tAdd = performance.now();
    await w.finish();
    const t1 = performance.now();
    return { ms: t1 - t0, cpuMs: cpuMs(c0), addMs: tAdd - t0, finishMs: t1 - tAdd, peakRssMiB: peakRssMiB() };
  },
  /** The index alone: bulk load of n sorted entries into an index file (what pack does next to the shards). */
  async index(file, n) {
    const { writeIndexFile } = await import('../dist/src/pack/index-file.js');
    function* entries() {
      for (let i = 0; i < n; i++) yield { key: keyOf(i), shard: 0, offset: i * BODY, length: BODY, members: [{ ext: 'bin', offset: 0, size: BODY, storedSize: BODY, codec: 0, crc32c: i >>> 0 }] };
    }
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    writeIndexFile(file, entries(), [{ file: 's', bytes: n * BODY, samples: n, crc32c: 0, fingerprint: 0 }], 'packed', 4096, false);
    const ms = performance.now() - t0;
    return { ms, cpuMs: cpuMs(c0), peakRssMiB: peakRssMiB() };
  },
  async lmdb(dir, n) {
    const { open } = await import('lmdb');
    fs.rmSync(dir, { recursive: true, force: true });
    const db = open({ path: dir, encoding: 'binary', compression: false, noSync: true, useWritemap: true });
    const value = Buffer.alloc(16);
    const append = { append: true };
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let start = 0; start < n; start += LMDB_TXN) {
      db.transactionSync(() => {
        for (let i = start; i < Math.min(n, start + LMDB_TXN); i++) {
          value.writeUInt32LE(i, 0);
          db.putSync(keyOf(i), value, append);
        }
      });
    }
    const ms = performance.now() - t0;
    const cpu = cpuMs(c0);
    await db.close();
    return { ms, cpuMs: cpu, peakRssMiB: peakRssMiB(), bytes: Number(execFileSync('du', ['-sb', dir]).toString().split('\t')[0]) };
  },
  async open(dir) {
    const { openDataset } = await import('../dist/src/read/dataset.js');
    const t0 = performance.now();
    const ds = await openDataset(dir);
    const ms = performance.now() - t0;
    await ds.close();
    return { ms };
  },
  async warm(dir, n, count, pageCacheBytes) {
    const { openDataset } = await import('../dist/src/read/dataset.js');
    const ds = await openDataset(dir, pageCacheBytes > 0 ? { pageCacheBytes } : {});
    const r = rng(7);
    const pick = () => Math.floor(r() * n);
    for (let i = 0; i < 2000; i++) ds.getSync(keyOf(pick())), ds.atSync(pick());
    const key = new Float64Array(count);
    const pos = new Float64Array(count);
    let bytes = 0;
    for (let i = 0; i < count; i++) {
      const k = keyOf(pick());
      const p = pick();
      let t = process.hrtime.bigint();
      bytes += ds.getSync(k).members.bin.length;
      key[i] = Number(process.hrtime.bigint() - t) / 1000;
      t = process.hrtime.bigint();
      bytes += ds.atSync(p).members.bin.length;
      pos[i] = Number(process.hrtime.bigint() - t) / 1000;
    }
    // memory the reader holds after the lookups (its page cache): heap after a full GC when node runs with
    // --expose-gc (the parent passes it), and RSS then; the peak RSS of the process too
    for (let i = 0; i < 3; i++) {
      globalThis.gc?.();
      await new Promise((resolve) => setTimeout(resolve, 20)); // typed arrays' stores are freed after the collection
    }
    const mem = process.memoryUsage();
    const { pages: pagesCached, bytes: pageCacheBytesHeld } = ds.stats().pageCache;
    await ds.close();
    if (bytes !== 2 * count * BODY) throw new Error(`warm lookups read ${bytes} bytes`);
    const memory = { heapUsedMiB: r3(mem.heapUsed / 2 ** 20), externalMiB: r3(mem.external / 2 ** 20), rssMiB: r3(mem.rss / 2 ** 20), peakRssMiB: Math.round(peakRssMiB()), pagesCached, pageCacheMiB: pageCacheBytesHeld === undefined ? undefined : r3(pageCacheBytesHeld / 2 ** 20), gc: globalThis.gc !== undefined };
    return { key: { p50Us: quantile(key, 0.5), p99Us: quantile(key, 0.99) }, position: { p50Us: quantile(pos, 0.5), p99Us: quantile(pos, 0.99) }, lookups: count, memory };
  },
  async cold(dir, n, count) {
    const { openDataset } = await import('../dist/src/read/dataset.js');
    const r = rng(11);
    const out = { openMs: [], keyUs: [], positionUs: [] };
    for (let i = 0; i < count; i++) {
      for (const kind of ['keyUs', 'positionUs']) {
        dropCaches(dir);
        let t = process.hrtime.bigint();
        const ds = await openDataset(dir);
        out.openMs.push(Number(process.hrtime.bigint() - t) / 1e6);
        const x = Math.floor(r() * n);
        t = process.hrtime.bigint();
        const s = kind === 'keyUs' ? ds.getSync(keyOf(x)) : ds.atSync(x);
        out[kind].push(Number(process.hrtime.bigint() - t) / 1000);
        if (s.members.bin.length !== BODY) throw new Error('cold lookup read the wrong sample');
        await ds.close();
      }
    }
    const q = (xs) => ({ p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), max: Math.max(...xs) });
    return { open: q(out.openMs), key: q(out.keyUs), position: q(out.positionUs), lookups: count };
  },
  /** verifyDataset in a fresh process, on a cold (`cold`) or warm (`warm`) page cache: wall, CPU, peak RSS. */
  async verify(dir, _n, _count, _extra, mode) {
    const { verifyDataset } = await import('../dist/src/verify/verify-dataset.js');
    const { readFilesOnce } = await import('../dist/src/bench/cache.js');
    if (mode === 'cold') dropCaches(dir);
    else readFilesOnce(datasetFiles(dir), VERIFY_READ_BYTES);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const report = await verifyDataset(dir);
    const ms = performance.now() - t0;
    if (!report.ok) throw new Error(`verify found problems in ${dir}`);
    return { ms, cpuMs: cpuMs(c0), checked: report.checked, peakRssMiB: peakRssMiB() };
  },
  /**
   * The disk's sequential read rate for the same files verify reads (index, then shards, front to back, through
   * the page cache with the kernel's read-ahead, 4 MiB reads into one buffer: what `cat` does), cold or warm.
   */
  async seqread(dir, _n, _count, _extra, mode) {
    const { readFilesOnce } = await import('../dist/src/bench/cache.js');
    if (mode === 'cold') dropCaches(dir);
    const files = datasetFiles(dir);
    const c0 = process.cpuUsage();
    const { bytes, seconds } = readFilesOnce(files, VERIFY_READ_BYTES);
    return { ms: seconds * 1000, cpuMs: cpuMs(c0), bytes };
  },
};

const VERIFY_READ_BYTES = 4 << 20;
/** The files verify reads: the index, then the shards in name order. */
const datasetFiles = (dir) => ['index.skidx', ...fs.readdirSync(dir).filter((f) => f.startsWith('shard-')).sort()].map((f) => path.join(dir, f));

/**
 * verify against the disk, in alternated fresh processes (--reps of each): the sequential read of the same files
 * cold, verify cold, the read warm, verify warm. Rates are bytes of index + shards per second; ratios are of
 * medians; `cpuBound` divides by verify's CPU time instead of its wall time (on a shared machine, what verify would
 * reach with a core of its own).
 */
function verifyAgainstDisk(dir, reps, canDrop) {
  const runs = { readCold: [], verifyCold: [], readWarm: [], verifyWarm: [] };
  for (let r = 0; r < reps; r++) {
    process.stderr.write(`  verify against the disk (${r + 1}/${reps})\n`);
    if (canDrop) {
      runs.readCold.push(inChild('seqread', dir, 0, 0, 0, 'cold'));
      runs.verifyCold.push(inChild('verify', dir, 0, 0, 0, 'cold'));
    }
    runs.readWarm.push(inChild('seqread', dir, 0, 0, 0, 'warm'));
    runs.verifyWarm.push(inChild('verify', dir, 0, 0, 0, 'warm'));
  }
  const bytes = datasetFiles(dir).reduce((t, f) => t + fs.statSync(f).size, 0);
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const rate = (list, key = 'ms') => {
    const mbps = list.map((x) => bytes / 1e6 / (x[key] / 1000));
    return { median: r3(med(mbps)), min: r3(Math.min(...mbps)), max: r3(Math.max(...mbps)) };
  };
  const side = (read, verify) => {
    if (read.length === 0) return 'not measured (no cache drop)';
    const disk = rate(read);
    const v = rate(verify);
    const cpu = rate(verify, 'cpuMs');
    return { diskMBps: disk, verifyMBps: v, verifyMBpsPerCpuSecond: cpu, verifyVsDisk: r3(v.median / disk.median), verifyVsDiskCpuBound: r3(cpu.median / disk.median) };
  };
  return {
    bytes,
    runs: reps,
    cold: side(runs.readCold, runs.verifyCold),
    warm: side(runs.readWarm, runs.verifyWarm),
    peakRssMiB: Math.round(Math.max(...[...runs.verifyCold, ...runs.verifyWarm].map((x) => x.peakRssMiB))),
    samplesPerSec: Math.round(runs.verifyWarm[0].checked.samples / (med(runs.verifyWarm.map((x) => x.ms)) / 1000)),
    checked: runs.verifyWarm[0].checked,
  };
}

function inChild(step, ...args) {
  const res = spawnSync(process.execPath, ['--expose-gc', SELF, '--child', step, ...args.map(String)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 });
  if (res.status !== 0) throw new Error(`scale step ${step} ${args.join(' ')} failed (exit ${res.status})`);
  return JSON.parse(res.stdout.trim().split('\n').pop());
}

/** Sequential read rate of `file` from the disk (O_DIRECT: no page cache), in MB/s, by dd. */
function ddRate(file) {
  const res = spawnSync('dd', [`if=${file}`, 'of=/dev/null', 'bs=4M', 'iflag=direct'], { encoding: 'utf8' });
  const m = /(\d+) bytes .* copied, ([\d.]+) s/.exec(res.stderr);
  if (res.status !== 0 || !m) return undefined;
  return { bytes: Number(m[1]), seconds: Number(m[2]), mbPerSec: Number(m[1]) / 1e6 / Number(m[2]) };
}

/** Median wall time and median CPU time of runs (each median on its own), with the spread of each. */
function medianRun(runs) {
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const ms = runs.map((r) => r.ms);
  const cpu = runs.map((r) => r.cpuMs);
  return { ms: med(ms), cpuMs: med(cpu), msMin: Math.min(...ms), msMax: Math.max(...ms), cpuMsMin: Math.min(...cpu), cpuMsMax: Math.max(...cpu), peakRssMiB: Math.max(...runs.map((r) => r.peakRssMiB)), bytes: runs[0].bytes, runs: runs.length };
}

function dirBytes(dir) {
  return fs.readdirSync(dir).reduce((t, f) => t + fs.statSync(path.join(dir, f)).size, 0);
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (flag, dflt) => {
    const i = args.indexOf(flag);
    return i < 0 ? dflt : args[i + 1];
  };
  if (opt('--child')) {
    const [step, ...rest] = args.slice(args.indexOf('--child') + 1);
    const [dir, n, count, extra, mode] = rest;
    process.stdout.write(`${JSON.stringify(await children[step](dir, Number(n), Number(count), Number(extra ?? 0), mode))}\n`);
    return;
  }
  const min = Number(opt('--min', '1e6'));
  const max = Number(opt('--max', '1e7'));
  const lookups = Number(opt('--lookups', '20000'));
  const cold = Number(opt('--cold', '30'));
  const opens = Number(opt('--opens', '5'));
  const reps = Number(opt('--reps', '3'));
  const root = opt('--dir', path.join(os.tmpdir(), 'shardkit-bench-scale'));
  const globalDrop = opt('--drop', 'file') === 'global';
  if (globalDrop) process.env.SHARDKIT_BENCH_DROP = 'global';
  const canDrop = !globalDrop || (process.getuid?.() === 0 && fs.existsSync('/proc/sys/vm/drop_caches'));
  const real = opt('--real', '');
  const treeDir = opt('--tree', '');
  const passes = args.flatMap((a, i) => (a === '--pass' ? ['--pass', args[i + 1]] : []));
  if (real !== '' || treeDir !== '') return verifyTree(real !== '' ? realTree(real) : { name: path.basename(treeDir), dir: treeDir }, root, reps, canDrop, { json: opt('--json', ''), reuse: args.includes('--reuse'), keep: args.includes('--keep'), passes });
  const sizes = [];
  for (let n = min; n <= max; n *= 10) sizes.push(n);

  const results = [];
  for (const n of sizes) {
    const dir = path.join(root, `packed-${n}`);
    // --reuse: a dataset kept by an earlier run (--keep) is verified again, not packed again
    const reuse = args.includes('--reuse') && fs.existsSync(path.join(dir, 'manifest.json'));
    process.stderr.write(`n = ${n}: ${reuse ? 'reusing the dataset in ' + dir : 'pack'}\n`);
    const pack = reuse ? undefined : inChild('pack', dir, n);
    const indexBytes = fs.statSync(path.join(dir, 'index.skidx')).size;
    const datasetBytes = dirBytes(dir);
    if (args.includes('--verify-only')) {
      // the verify step alone: (pack or reuse) and verify against the disk
      const row = { samples: n, verify: verifyAgainstDisk(dir, reps, canDrop), indexBytesPerSample: r3(indexBytes / n), datasetBytesPerSample: r3(datasetBytes / n) };
      results.push(row);
      process.stderr.write(`${JSON.stringify(row)}\n`);
      if (!args.includes('--keep')) fs.rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (pack === undefined) throw new Error('--reuse measures verify only: add --verify-only');
    // the index alone and lmdb-js, alternated, --reps times each: medians (wall and CPU apart), with min and max
    const withLmdb = !args.includes('--no-lmdb') && n <= LMDB_MAX;
    const indexRuns = [];
    const lmdbRuns = [];
    for (let r = 0; r < reps; r++) {
      process.stderr.write(`n = ${n}: index bulk load alone (${r + 1}/${reps})\n`);
      indexRuns.push(inChild('index', path.join(root, `index-${n}.skidx`), n));
      fs.rmSync(path.join(root, `index-${n}.skidx`), { force: true });
      if (withLmdb) {
        process.stderr.write(`n = ${n}: lmdb-js bulk load (${r + 1}/${reps})\n`);
        lmdbRuns.push(inChild('lmdb', path.join(root, `lmdb-${n}`), n));
        fs.rmSync(path.join(root, `lmdb-${n}`), { recursive: true, force: true });
      }
    }
    const index = medianRun(indexRuns);
    const lmdb = withLmdb ? medianRun(lmdbRuns) : undefined;
    process.stderr.write(`n = ${n}: open, lookups\n`);
    for (const f of fs.readdirSync(dir)) fs.readFileSync(path.join(dir, f)); // warm page cache
    const openMs = Array.from({ length: opens }, () => inChild('open', dir).ms);
    const warm = inChild('warm', dir, n, lookups);
    // the same with an in-process page cache that holds every decoded page (a leaf decodes to ~20x its page)
    const warmWholeIndex = inChild('warm', dir, n, lookups, 2 ** Math.ceil(Math.log2(indexBytes * 32)));
    const coldRes = !canDrop ? 'not measured (--drop global needs root and /proc/sys/vm/drop_caches)' : cold > 0 ? inChild('cold', dir, n, cold) : 'not measured (--cold 0)';
    process.stderr.write(`n = ${n}: verify, sequential reads, dd\n`);
    const verify = args.includes('--no-verify') ? undefined : verifyAgainstDisk(dir, reps, canDrop);
    const shards = fs.readdirSync(dir).filter((f) => f.startsWith('shard-')).map((f) => path.join(dir, f));
    const largest = shards.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
    const disk = ddRate(largest);
    const row = {
      samples: n,
      pack: { samplesPerSec: Math.round(n / (pack.ms / 1000)), samplesPerCpuSec: Math.round(n / (pack.cpuMs / 1000)), seconds: r3(pack.ms / 1000), addSeconds: r3(pack.addMs / 1000), finishSeconds: r3(pack.finishMs / 1000), peakRssMiB: Math.round(pack.peakRssMiB) },
      indexBulkLoad: { samplesPerSec: Math.round(n / (index.ms / 1000)), samplesPerCpuSec: Math.round(n / (index.cpuMs / 1000)), seconds: r3(index.ms / 1000), secondsMinMax: [r3(index.msMin / 1000), r3(index.msMax / 1000)], cpuSeconds: r3(index.cpuMs / 1000), cpuSecondsMinMax: [r3(index.cpuMsMin / 1000), r3(index.cpuMsMax / 1000)], runs: index.runs, peakRssMiB: Math.round(index.peakRssMiB) },
      ...(lmdb ? { indexVsLmdbBulkLoad: r3(lmdb.ms / index.ms), indexVsLmdbBulkLoadCpu: r3(lmdb.cpuMs / index.cpuMs) } : {}),
      ...(lmdb ? { lmdbBulkLoad: { samplesPerSec: Math.round(n / (lmdb.ms / 1000)), samplesPerCpuSec: Math.round(n / (lmdb.cpuMs / 1000)), seconds: r3(lmdb.ms / 1000), secondsMinMax: [r3(lmdb.msMin / 1000), r3(lmdb.msMax / 1000)], cpuSeconds: r3(lmdb.cpuMs / 1000), cpuSecondsMinMax: [r3(lmdb.cpuMsMin / 1000), r3(lmdb.cpuMsMax / 1000)], runs: lmdb.runs, peakRssMiB: Math.round(lmdb.peakRssMiB), bytesPerSample: r3(lmdb.bytes / n) }, packVsLmdbBulkLoad: r3(lmdb.ms / pack.ms), packVsLmdbBulkLoadCpu: r3(lmdb.cpuMs / pack.cpuMs) } : {}),
      indexBytesPerSample: r3(indexBytes / n),
      datasetBytesPerSample: r3(datasetBytes / n),
      openMs: { median: r3(openMs.sort((a, b) => a - b)[opens >> 1]), max: r3(Math.max(...openMs)), opens },
      warmLookups: warm,
      warmLookupsPageCacheHoldingIndex: warmWholeIndex,
      coldLookups: coldRes,
      verify: verify ?? 'not measured (--no-verify)',
      diskDirect: disk ? { file: path.basename(largest), mbPerSec: r3(disk.mbPerSec), bytes: disk.bytes, how: 'dd bs=4M iflag=direct' } : 'dd failed',
    };
    results.push(row);
    process.stderr.write(`${JSON.stringify(row)}\n`);
    if (!args.includes('--keep')) fs.rmSync(dir, { recursive: true, force: true });
  }
  const report = { machine: { cpus: os.cpus().length, node: process.version, loadAverage: os.loadavg().map((x) => Math.round(x * 10) / 10) }, coldBy: globalDrop ? 'drop_caches' : 'posix_fadvise(DONTNEED) on the dataset files', body: `${BODY} bytes per sample, one member, layout packed`, results };
  const text = JSON.stringify(report, null, 2);
  const json = opt('--json');
  if (json) fs.writeFileSync(json, `${text}\n`);
  process.stdout.write(`${text}\n`);
}

/**
 * verify against the disk on a real tree (--real A|B, bench/real-trees.mjs, or --tree DIR), packed by the built CLI
 * in the tar layout, one sample a file (--key-rule path: file names with several dots, as in package docs, would
 * otherwise make one key); files pack cannot take (symlinks) are skipped and listed by it.
 */
function verifyTree(tree, root, reps, canDrop, { json, reuse, keep, passes }) {
  const dir = path.join(root, `tree-${tree.name}`);
  if (!(reuse && fs.existsSync(path.join(dir, 'manifest.json')))) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(root, { recursive: true });
    process.stderr.write(`packing ${tree.dir} into ${dir}\n`);
    const cli = path.join(path.dirname(SELF), '..', 'dist', 'bin', 'shardkit.cjs');
    const res = spawnSync(process.execPath, [cli, 'pack', tree.dir, '--out', dir, '--key-rule', 'path', '--on-error', 'skip', ...passes], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (res.status !== 0) throw new Error(`pack of ${tree.dir} failed (exit ${res.status})`);
  }
  const verify = verifyAgainstDisk(dir, reps, canDrop);
  const report = {
    machine: { cpus: os.cpus().length, node: process.version, loadAverage: os.loadavg().map((x) => Math.round(x * 10) / 10) },
    coldBy: process.env.SHARDKIT_BENCH_DROP === 'global' ? 'drop_caches' : 'posix_fadvise(DONTNEED) on the dataset files',
    tree: { name: tree.name, dir: tree.dir, ...(tree.fingerprint === undefined ? {} : { files: tree.files, bytes: tree.bytes, fingerprint: tree.fingerprint }) },
    layout: `tar, --key-rule path${passes.length > 0 ? ` ${passes.join(' ')}` : ''}`,
    verify,
  };
  const text = JSON.stringify(report, null, 2);
  if (json) fs.writeFileSync(json, `${text}\n`);
  process.stdout.write(`${text}\n`);
  if (!keep) fs.rmSync(dir, { recursive: true, force: true });
}

await main();
