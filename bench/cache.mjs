#!/usr/bin/env node
/**
 * Shard cache benchmark (issue #25): a real nginx on loopback, started here, serves a dataset with its bandwidth
 * limited by `limit_rate` (the client keeps one connection, so the limit is the whole link). Epochs are read
 * with no cache, with an LRU cache and with the clairvoyant one (plan-driven prefetch, Belady eviction), caches of
 * 25 %, 50 % and 100 % of the dataset, block and full shuffle. Reported per epoch: remote bytes (nginx's view:
 * the byte ranges it served) against the fewest whole-shard bytes any eviction policy could fetch (Belady's MIN
 * simulated over the loader's shard order, cache empty at start), and epoch time. A local-disk epoch and the time
 * the bandwidth limit alone allows (dataset bytes / rate) are the references.
 *
 *   npm run build && node bench/cache.mjs [--samples 3000] [--shard 256KiB] [--rate 8m] [--epochs 3] [--json FILE]
 *
 * Goals: with a 50 % cache and block shuffle, clairvoyant eviction fetches <= 0.7x the bytes LRU fetches; with a
 * 100 % cache every epoch after the first reads 0 remote bytes within 1.2x the local-disk time; the first
 * epoch, with prefetch, within 1.3x of what the bandwidth limit alone allows.
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
  const o = { samples: 3000, shard: '256KiB', rate: '8m', epochs: 3, json: undefined };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i]?.replace(/^--/, '');
    if (!(k in o)) throw new Error(`unknown option ${argv[i]}`);
    o[k] = typeof o[k] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
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
  server { listen 127.0.0.1:${port}; root ${root}; location / { limit_rate ${rate}; } }
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
  let n = 0;
  for await (const batch of ds.loader({ batchSize: 32, shuffle, seed: 1, epoch: e })) n += batch.length;
  return { ms: performance.now() - t, samples: n };
}

const o = parseArgs(process.argv.slice(2));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-bench-cache-'));
const root = path.join(work, 'srv');
await writeDataset(path.join(root, 'ds'), o.samples, parseSize(o.shard, '--shard'));
const server = await startNginx(root, o.rate);
const results = [];
try {
  const localDs = await openDataset(path.join(root, 'ds'));
  const datasetBytes = localDs.shards.reduce((n, s) => n + s.bytes, 0);
  const limitMs = (datasetBytes / rateBytes(o.rate)) * 1000;
  const localMs = {};
  for (const shuffle of ['block', 'full']) {
    await epoch(localDs, shuffle, 0); // warm the page cache
    localMs[shuffle] = (await epoch(localDs, shuffle, 1)).ms;
  }
  for (const shuffle of ['block', 'full']) {
    const seq = shardSequence(localDs, shuffle, o.epochs);
    for (const [policy, fraction] of [['none', 0], ['lru', 0.25], ['clairvoyant', 0.25], ['lru', 0.5], ['clairvoyant', 0.5], ['lru', 1], ['clairvoyant', 1]]) {
      const maxBytes = Math.floor(datasetBytes * fraction);
      const cacheDir = path.join(work, `cache-${shuffle}-${policy}-${fraction}`);
      const ds = await openDataset(`${server.url}/ds`, { http: { maxSockets: 1 }, ...(policy === 'none' ? {} : { cache: { dir: cacheDir, maxBytes, policy } }) });
      server.shardBytes();
      const min = policy === 'none' ? [] : minBytesPerEpoch(localDs, seq, maxBytes);
      for (let e = 0; e < o.epochs; e++) {
        const r = await epoch(ds, shuffle, e);
        const row = { shuffle, policy, cache: fraction, epoch: e, remoteBytes: server.shardBytes(), minBytes: min[e] ?? null, ms: Math.round(r.ms), datasetBytes };
        results.push(row);
        process.stderr.write(`${JSON.stringify(row)}\n`);
      }
      await ds.close();
    }
  }
  await localDs.close();
  const mb = (b) => (b / 1e6).toFixed(2);
  const lines = [
    `dataset ${mb(datasetBytes)} MB in ${localDs.shards.length} shards of ${o.shard}; nginx limit_rate ${o.rate}/s (one connection): ${Math.round(limitMs)} ms an epoch at the limit; local disk (warm): block ${Math.round(localMs.block)} ms, full ${Math.round(localMs.full)} ms`,
    '',
    '| shuffle | policy | cache | epoch | remote MB | MIN MB (whole shards, every miss cached) | remote / dataset | ms | ms / limit | ms / local |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...results.map((r) => `| ${r.shuffle} | ${r.policy} | ${r.policy === 'none' ? '-' : `${r.cache * 100} %`} | ${r.epoch} | ${mb(r.remoteBytes)} | ${r.minBytes === null ? '-' : mb(r.minBytes)} | ${(r.remoteBytes / datasetBytes).toFixed(2)} | ${r.ms} | ${(r.ms / limitMs).toFixed(2)} | ${(r.ms / localMs[r.shuffle]).toFixed(2)} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (o.json !== undefined) fs.writeFileSync(o.json, JSON.stringify({ options: o, datasetBytes, limitMs, localMs, results }, null, 2));
} finally {
  server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
