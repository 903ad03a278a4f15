#!/usr/bin/env node
/**
 * Shard cache benchmark (issue #25): a real nginx on loopback, started here, serves a dataset with its bandwidth
 * limited by `limit_rate` (the client keeps one connection, so the limit is the whole link). Epochs are read
 * with no cache, with an LRU cache and with the clairvoyant one (plan-driven prefetch, Belady eviction), caches of
 * 25 %, 50 % and 100 % of the dataset's shards (plus the index's size: its copy is cached too), block and full shuffle. Reported per epoch: remote bytes (nginx's view:
 * the byte ranges it served) against the fewest whole-shard bytes any eviction policy could fetch (Belady's MIN
 * simulated over the loader's shard order, cache empty at start), and epoch time. A local-disk epoch and the time
 * the bandwidth limit alone allows (dataset bytes / rate) are the references.
 *
 *   npm run build && node bench/cache.mjs [--samples 3000] [--shard 256KiB] [--rate 8m] [--epochs 3] [--rounds 9]
 *                                         [--timed-samples 40000] [--timed-epochs 4] [--parts bytes,timed] [--json FILE]
 *
 * `--parts timed` leaves out the bytes table (minutes: LRU with a full shuffle fetches ~40x the dataset an epoch).
 *
 * Goals: with a 50 % cache and block shuffle, clairvoyant eviction fetches <= 0.7x the bytes LRU fetches; with a
 * 100 % cache every epoch after the first reads 0 remote bytes within 1.2x the local-disk time; the first
 * epoch, with prefetch, within 1.3x of what the bandwidth limit alone allows.
 *
 * Bytes come from nginx's access log: exact, whatever the machine's load. The first epoch into an empty 100 % cache
 * is timed against the limit, median of `--rounds` runs. Cached against local epochs are timed on a dataset of their
 * own (`--timed-samples`, ~100 MB at the default: an epoch takes >= 50 ms, so timer and scheduler noise stay small),
 * served without the rate limit (filling its cache is not timed): `--rounds` new processes that read it fully cached
 * alternate with as many that read it from local disk (page cache warm), each reading `--timed-epochs` epochs.
 * Reported: median [min-max] of a new process's first epoch (index pages and copies unread; opening not timed) and
 * of later epochs (each process's median), wall and CPU (CPU is what load disturbs least). Both readers keep every
 * shard open (maxOpenShards = the shard count; the cache's copies obey it too): with the default 64 handles a full
 * shuffle over 500 shards reopens ~35,000 of them an epoch (local: 1.2 s against 0.4 s).
 * One full pass of the bytes table runs each epoch once.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DatasetWriter } from '../dist/src/pack/dataset-writer.js';
import { openDataset } from '../dist/src/read/dataset.js';
import { planEpoch } from '../dist/src/read/epoch-plan.js';
import { chooseVictims } from '../dist/src/cache/eviction.js';
import { parseSize } from '../dist/src/pack/size-arg.js';

function parseArgs(argv) {
  const o = { samples: 3000, shard: '256KiB', rate: '8m', epochs: 3, rounds: 9, json: undefined, 'timed-samples': 40000, 'timed-epochs': 4, parts: 'bytes,timed' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i]?.replace(/^--/, '');
    if (!(k in o)) throw new Error(`unknown option ${argv[i]}`);
    o[k] = typeof o[k] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
    if (typeof o[k] === 'number' && !(o[k] > 0)) throw new Error(`${argv[i]} takes a positive number, not ${argv[i + 1]}`);
  }
  return o;
}

/** nginx's limit_rate takes bytes per second with k/m suffixes (powers of 1024). */
function rateBytes(rate) {
  const m = /^(\d+)([km]?)$/i.exec(rate);
  if (m === null) throw new Error(`--rate like 8m or 500k, not ${rate}`);
  return Number(m[1]) * (m[2].toLowerCase() === 'm' ? 1 << 20 : m[2].toLowerCase() === 'k' ? 1 << 10 : 1);
}

async function writeDataset(dir, samples, shardBytes) {
  const w = new DatasetWriter({ dir, shardBytes });
  let x = 12345;
  for (let i = 0; i < samples; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const size = 500 + (x % 4000); // 0.5-4.5 KB, a PNG-thumbnail-like mix
    const bin = new Uint8Array(size);
    for (let j = 0; j < size; j++) bin[j] = (i * 31 + j * 7) & 0xff;
    w.add({ key: `s/${String(i).padStart(7, '0')}`, members: { bin } });
  }
  await w.finish();
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startNginx(root, rate) {
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-bench-nginx-'));
  const port = await freePort();
  const log = path.join(prefix, 'access.log');
  fs.writeFileSync(
    path.join(prefix, 'nginx.conf'),
    `daemon off; master_process off; worker_processes 1; pid ${prefix}/nginx.pid; error_log ${prefix}/error.log warn;
events { worker_connections 256; }
http {
  client_body_temp_path ${prefix}/cb; proxy_temp_path ${prefix}/p; fastcgi_temp_path ${prefix}/f; uwsgi_temp_path ${prefix}/u; scgi_temp_path ${prefix}/s;
  log_format r '$request_uri "$http_range" $bytes_sent';
  access_log ${log} r;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:${port}; root ${root}; location / { limit_rate ${rate}; } location /timed/ { } }
}
`,
  );
  const child = spawn('/usr/sbin/nginx', ['-p', `${prefix}/`, '-c', path.join(prefix, 'nginx.conf')], { detached: true, stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((resolve) => net.connect(port, '127.0.0.1').once('connect', function () { this.destroy(); resolve(true); }).once('error', () => resolve(false)));
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    /** Bytes of shard ranges served since the log was last read. */
    shardBytes() {
      const text = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
      fs.writeFileSync(log, '');
      let n = 0;
      for (const line of text.split('\n')) {
        const m = /\.tar "bytes=(\d+)-(\d+)"/.exec(line);
        if (m !== null) n += Number(m[2]) - Number(m[1]) + 1;
      }
      return n;
    },
    stop() {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
      fs.rmSync(prefix, { recursive: true, force: true });
    },
  };
}

/** The shards a rank's epochs read, in order, each run of one shard once (what a whole-shard cache sees). */
function shardSequence(ds, shuffle, epochs) {
  const starts = [];
  ds.shards.reduce((n, s) => (starts.push(n), n + s.samples), 0);
  const shardOf = (p) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid] <= p) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const seq = [];
  for (let e = 0; e < epochs; e++) {
    const plan = planEpoch({ shardSizes: ds.shards.map((s) => s.samples), seed: 1, epoch: e, shuffle, batchSize: 32 });
    for (let i = 0; i < plan.length; i++) {
      const s = shardOf(plan.at(i));
      if (seq.at(-1) !== s) seq.push(s);
    }
    seq.push(-1 - e); // epoch boundary marker
  }
  return seq;
}

/** Whole-shard bytes Belady's MIN fetches per epoch with `capacity` bytes (the same chooseVictims the cache uses). */
function minBytesPerEpoch(ds, seq, capacity) {
  const bytes = ds.shards.map((s) => s.bytes);
  const uses = seq.map((s, t) => ({ s, t })).filter((u) => u.s >= 0);
  const cached = new Set();
  const out = [0];
  for (let t = 0; t < seq.length; t++) {
    const s = seq[t];
    if (s < 0) {
      out.push(0);
      continue;
    }
    if (cached.has(s)) continue;
    out[out.length - 1] += bytes[s];
    const nextUse = (x) => uses.find((u) => u.t > t && u.s === x)?.t ?? Infinity;
    if (bytes[s] > capacity) continue;
    const used = [...cached].reduce((n, x) => n + bytes[x], 0);
    const victims = chooseVictims([...cached].map((x) => ({ id: String(x), bytes: bytes[x], nextUse: nextUse(x), lastUse: 0 })), used + bytes[s] - capacity, nextUse(s));
    if (victims === undefined) continue;
    for (const v of victims) cached.delete(Number(v.id));
    cached.add(s);
  }
  return out.slice(0, -1);
}

async function epoch(ds, shuffle, e) {
  const t = performance.now();
  const cpu = process.cpuUsage();
  let n = 0;
  for await (const batch of ds.loader({ batchSize: 32, shuffle, seed: 1, epoch: e })) n += batch.length;
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - t, cpuMs: (used.user + used.system) / 1000, samples: n };
}

const median = (xs) => {
  const a = [...xs].sort((x, y) => x - y);
  return a.length % 2 === 1 ? a[a.length >> 1] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
};

/** The first epoch into an empty 100 % cache against the bandwidth limit, `rounds` runs (a fresh dir each). */
async function timeFirstEpoch(url, shuffle, cacheBytes, rounds, work) {
  const first = [];
  for (let r = 0; r < rounds; r++) {
    const dir = path.join(work, `time-${shuffle}-${r}`);
    const ds = await openDataset(url, { http: { maxSockets: 1 }, cache: { dir, maxBytes: cacheBytes } });
    first.push((await epoch(ds, shuffle, 0)).ms);
    await ds.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return median(first);
}

/** A child process of this script: opens `location` (with `cache`), reads `epochs` epochs, prints their times. */
async function childEpochs({ location, cache, shuffle, epochs, maxOpenShards }) {
  const ds = await openDataset(location, cache === undefined ? { maxOpenShards } : { maxOpenShards, cache });
  const out = [];
  for (let e = 1; e <= epochs; e++) out.push(await epoch(ds, shuffle, e));
  await ds.close();
  process.stdout.write(JSON.stringify(out));
}

function runChild(job) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, new URL(import.meta.url).pathname, '--child', JSON.stringify(job)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (c) => (text += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(text)) : reject(new Error(`child exited ${code}`))));
  });
}

/**
 * A fully cached dataset against the same dataset on local disk (`timedDir`, page cache warm), in new processes
 * alternated `rounds` times: each reads `epochs` epochs; its first is a new process's first epoch (index pages and
 * copies unread, opening not timed), the median of the others is a later epoch of that process.
 */
async function timeCachedEpochs(url, timedDir, shuffle, cacheBytes, maxOpenShards, rounds, epochs, work) {
  const cache = { dir: path.join(work, `timed-${shuffle}`), maxBytes: cacheBytes };
  await runChild({ location: url, cache, shuffle, epochs: 1 }); // fills the cache (no rate limit here; not timed)
  await runChild({ location: timedDir, shuffle, epochs: 1, maxOpenShards }); // the page cache warm
  const runs = { local: [], cached: [] };
  for (let r = 0; r < rounds; r++) {
    for (const mode of r % 2 === 0 ? ['local', 'cached'] : ['cached', 'local']) {
      const got = await runChild(mode === 'local' ? { location: timedDir, shuffle, epochs, maxOpenShards } : { location: url, cache, shuffle, epochs, maxOpenShards });
      const later = got.slice(1);
      runs[mode].push({ new: got[0], later: { ms: median(later.map((x) => x.ms)), cpuMs: median(later.map((x) => x.cpuMs)) }, samples: got[0].samples });
    }
  }
  fs.rmSync(cache.dir, { recursive: true, force: true });
  const stat = (mode, which, f) => {
    const xs = runs[mode].map((x) => x[which][f]);
    return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
  };
  const out = { samples: runs.local[0].samples };
  for (const which of ['new', 'later']) for (const mode of ['local', 'cached']) for (const f of ['ms', 'cpuMs']) out[`${which}.${mode}.${f}`] = stat(mode, which, f);
  return out;
}

if (process.argv[2] === '--child') {
  await childEpochs(JSON.parse(process.argv[3]));
  process.exit(0);
}

const o = parseArgs(process.argv.slice(2));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-bench-cache-'));
const root = path.join(work, 'srv');
await writeDataset(path.join(root, 'ds'), o.samples, parseSize(o.shard, '--shard'));
// the cached-epoch comparison's dataset: big enough for an epoch of >= 50 ms, served without the rate limit
const timedDir = path.join(root, 'timed', 'ds');
await writeDataset(timedDir, o['timed-samples'], parseSize(o.shard, '--shard'));
const server = await startNginx(root, o.rate);
const results = [];
const timing = {};
try {
  const localDs = await openDataset(path.join(root, 'ds'));
  const datasetBytes = localDs.shards.reduce((n, s) => n + s.bytes, 0);
  const indexBytes = localDs.manifest.index.bytes;
  const limitMs = (datasetBytes / rateBytes(o.rate)) * 1000;
  const parts = new Set(o.parts.split(','));
  for (const shuffle of parts.has('bytes') ? ['block', 'full'] : []) {
    const seq = shardSequence(localDs, shuffle, o.epochs);
    for (const [policy, fraction] of [['none', 0], ['lru', 0.25], ['clairvoyant', 0.25], ['lru', 0.5], ['clairvoyant', 0.5], ['lru', 1], ['clairvoyant', 1]]) {
      // room for the shards (the fraction) and for the index's copy (index-copy.ts), reserved beside them
      const maxBytes = Math.floor(datasetBytes * fraction) + (policy === 'none' ? 0 : indexBytes);
      const cacheDir = path.join(work, `cache-${shuffle}-${policy}-${fraction}`);
      const ds = await openDataset(`${server.url}/ds`, { http: { maxSockets: 1 }, ...(policy === 'none' ? {} : { cache: { dir: cacheDir, maxBytes, policy } }) });
      server.shardBytes();
      const min = policy === 'none' ? [] : minBytesPerEpoch(localDs, seq, maxBytes - indexBytes);
      for (let e = 0; e < o.epochs; e++) {
        const r = await epoch(ds, shuffle, e);
        const row = { shuffle, policy, cache: fraction, epoch: e, remoteBytes: server.shardBytes(), minBytes: min[e] ?? null, ms: Math.round(r.ms), datasetBytes };
        results.push(row);
        process.stderr.write(`${JSON.stringify(row)}\n`);
      }
      await ds.close();
      fs.rmSync(cacheDir, { recursive: true, force: true });
    }
  }
  const timedLocal = await openDataset(timedDir);
  const timedBytes = timedLocal.shards.reduce((n, s) => n + s.bytes, 0) + timedLocal.manifest.index.bytes;
  const timedShards = timedLocal.shards.length;
  await timedLocal.close();
  for (const shuffle of parts.has('timed') ? ['block', 'full'] : []) {
    const firstMs = await timeFirstEpoch(`${server.url}/ds`, shuffle, datasetBytes + indexBytes, o.rounds, work);
    timing[shuffle] = { firstMs, ...(await timeCachedEpochs(`${server.url}/timed/ds`, timedDir, shuffle, timedBytes, timedShards, o.rounds, o['timed-epochs'], work)) };
    process.stderr.write(`${JSON.stringify({ shuffle, ...timing[shuffle] })}\n`);
  }
  await localDs.close();
  const mb = (b) => (b / 1e6).toFixed(2);
  const x = (a, b) => (a / b).toFixed(2);
  const row = (shuffle, policy, cache, e) => results.find((r) => r.shuffle === shuffle && r.policy === policy && r.cache === cache && r.epoch === e);
  const bytesLines = () => [
    '| shuffle | policy | cache | epoch | remote MB | MIN MB (whole shards, every miss cached) | remote / dataset | ms (one run) |',
    '|---|---|---|---|---|---|---|---|',
    ...results.map((r) => `| ${r.shuffle} | ${r.policy} | ${r.policy === 'none' ? '-' : `${r.cache * 100} %`} | ${r.epoch} | ${mb(r.remoteBytes)} | ${r.minBytes === null ? '-' : mb(r.minBytes)} | ${x(r.remoteBytes, datasetBytes)} | ${r.ms} |`),
    '',
  ];
  const f = (v) => `${v.median.toFixed(1)} [${v.min.toFixed(1)}-${v.max.toFixed(1)}]`;
  const timedLines = () => [
    `100 % cache: the first epoch, median of ${o.rounds} runs against the limit; then ${o['timed-samples']} samples (${mb(timedBytes)} MB) fully cached vs on local disk, ${o.rounds} new processes of each, alternated, ${o['timed-epochs']} epochs each: median [min-max] ms, wall and CPU`,
    '',
    '| shuffle | first epoch | first / limit | epoch | local wall | cached wall | cached / local | local CPU | cached CPU | cached / local |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...['block', 'full'].flatMap((sh) => {
      const t = timing[sh];
      return ['new', 'later'].map(
        (w) =>
          `| ${sh} | ${Math.round(t.firstMs)} | ${x(t.firstMs, limitMs)} | ${w === 'new' ? "a new process's first" : 'later, same process'} | ${f(t[`${w}.local.ms`])} | ${f(t[`${w}.cached.ms`])} | ${x(t[`${w}.cached.ms`].median, t[`${w}.local.ms`].median)} | ${f(t[`${w}.local.cpuMs`])} | ${f(t[`${w}.cached.cpuMs`])} | ${x(t[`${w}.cached.cpuMs`].median, t[`${w}.local.cpuMs`].median)} |`,
      );
    }),
    '',
  ];
  const bytesGoals = () => ['block', 'full'].flatMap((sh) => [
    ...Array.from({ length: o.epochs - 1 }, (_, i) => {
      const c = row(sh, 'clairvoyant', 0.5, i + 1);
      const l = row(sh, 'lru', 0.5, i + 1);
      return `- ${sh}, 50 % cache, epoch ${i + 1}: clairvoyant / LRU remote bytes ${x(c.remoteBytes, l.remoteBytes)} (goal <= 0.7 for block); clairvoyant / MIN ${x(c.remoteBytes, c.minBytes)}`;
    }),
    `- ${sh}, 100 % cache: ${results.filter((r) => r.shuffle === sh && r.cache === 1 && r.epoch > 0).reduce((n, r) => n + r.remoteBytes, 0)} remote bytes after the first epoch (goal 0)`,
  ]);
  const timedGoals = () => ['block', 'full'].map((sh) => {
    const t = timing[sh];
    return `- ${sh}, 100 % cache: cached / local wall ${x(t['later.cached.ms'].median, t['later.local.ms'].median)} later epochs, ${x(t['new.cached.ms'].median, t['new.local.ms'].median)} a new process's first (goal <= 1.2); CPU ${x(t['later.cached.cpuMs'].median, t['later.local.cpuMs'].median)} and ${x(t['new.cached.cpuMs'].median, t['new.local.cpuMs'].median)}; first epoch / limit ${x(t.firstMs, limitMs)} (goal <= 1.3)`;
  });
  const lines = [
    `dataset ${mb(datasetBytes)} MB in ${localDs.shards.length} shards of ${o.shard}; nginx limit_rate ${o.rate}/s (one connection): ${Math.round(limitMs)} ms an epoch at the limit`,
    '',
    ...(parts.has('bytes') ? bytesLines() : []),
    ...(parts.has('timed') ? timedLines() : []),
    'Goals:',
    ...(parts.has('bytes') ? bytesGoals() : []),
    ...(parts.has('timed') ? timedGoals() : []),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (o.json !== undefined) fs.writeFileSync(o.json, JSON.stringify({ options: o, datasetBytes, timedBytes, limitMs, results, timing }, null, 2));
} finally {
  server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
