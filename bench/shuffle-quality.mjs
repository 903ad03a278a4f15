#!/usr/bin/env node
/**
 * Shuffle quality benchmark: speed, I/O locality and randomness of every registered shuffle.
 * Outside `npm test`: run `npm run build && node bench/shuffle-quality.mjs [--quick]`. Prints a markdown table.
 *
 * Columns
 * - ms/perm: median wall time to compute one permutation.
 * - shards/64: mean distinct shards touched by 64 consecutive samples (a loader's read-ahead window);
 *   1-2 means reads stay in one shard, 64 means every read goes elsewhere.
 * - switches/1k: how often consecutive samples come from different shards, per 1000 samples.
 * - disp: mean |new position - old position| / N; 1/3 for a uniform random permutation, 0 for none.
 * - corr: Pearson correlation of neighbours' original positions (order[i], order[i+1]); ~0 when random.
 * - chi2/E: where each element lands over many seeds for a small dataset (20 samples in 10 shards of 2):
 *   chi-square of the element x slot table against "every slot equally likely", divided by its expected
 *   value n(n-1) under uniformity: ~1 (+-0.08) when uniform, far larger when an algorithm pins samples.
 *   It tests each sample's landing slot on its own, not pairs: block scores ~1 too, because shards are
 *   permuted uniformly; its neighbour correlation shows up in corr and switches/1k instead.
 */
import { blockShuffle, fullShuffle, noShuffle } from '../dist/src/read/shuffle/index.js';

const quick = process.argv.includes('--quick');
const SHARDS = 100;
const SIZES = quick ? [100_000] : [100_000, 1_000_000];

const algorithms = [
  { name: 'none', fn: (sizes, seed, epoch) => noShuffle(sizes, seed, epoch) },
  { name: 'full', fn: (sizes, seed, epoch) => fullShuffle(sizes, seed, epoch) },
  { name: 'block (4 shards)', fn: (sizes, seed, epoch) => blockShuffle(sizes, seed, epoch, { windowShards: 4 }) },
  { name: 'block (16 shards)', fn: (sizes, seed, epoch) => blockShuffle(sizes, seed, epoch, { windowShards: 16 }) },
];

function equalShards(n, shards) {
  const sizes = new Array(shards).fill(Math.floor(n / shards));
  for (let s = 0; s < n % shards; s++) sizes[s] += 1;
  return sizes;
}

function shardOwner(sizes) {
  const owner = new Uint32Array(sizes.reduce((a, b) => a + b, 0));
  let p = 0;
  sizes.forEach((size, s) => owner.fill(s, p, (p += size)));
  return owner;
}

function timeMs(fn, runs) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    fn(i);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

function locality(order, owner) {
  const window = 64;
  let windows = 0;
  let distinct = 0;
  const mark = new Int32Array(SHARDS).fill(-1);
  for (let start = 0; start + window <= order.length; start += window) {
    for (let i = start; i < start + window; i++) {
      const s = owner[order[i]];
      if (mark[s] !== start) {
        mark[s] = start;
        distinct++;
      }
    }
    windows++;
  }
  let switches = 0;
  for (let i = 1; i < order.length; i++) if (owner[order[i]] !== owner[order[i - 1]]) switches++;
  return { shardsPer64: distinct / windows, switchesPer1k: (switches / (order.length - 1)) * 1000 };
}

function randomness(order) {
  const n = order.length;
  let displacement = 0;
  for (let i = 0; i < n; i++) displacement += Math.abs(order[i] - i);
  // Pearson correlation of (x_i, x_{i+1}).
  let sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  for (let i = 0; i + 1 < n; i++) {
    const x = order[i], y = order[i + 1];
    sx += x; sy += y; sxx += x * x; syy += y * y; sxy += x * y;
  }
  const m = n - 1;
  const cov = sxy / m - (sx / m) * (sy / m);
  const corr = cov / Math.sqrt((sxx / m - (sx / m) ** 2) * (syy / m - (sy / m) ** 2));
  return { displacement: displacement / n / n, corr };
}

/** chi-square / its expectation, of the landing-slot table over `seeds` permutations of a small dataset. */
function landingChi2(fn, seeds) {
  const sizes = new Array(10).fill(2);
  const n = 20;
  const counts = new Float64Array(n * n);
  for (let seed = 0; seed < seeds; seed++) {
    const order = fn(sizes, seed, 0);
    for (let slot = 0; slot < n; slot++) counts[order[slot] * n + slot] += 1;
  }
  const expected = seeds / n;
  let chi2 = 0;
  for (const c of counts) chi2 += (c - expected) ** 2 / expected;
  return chi2 / (n * (n - 1));
}

const f = (x, digits) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const rows = [];
for (const n of SIZES) {
  const sizes = equalShards(n, SHARDS);
  const owner = shardOwner(sizes);
  for (const { name, fn } of algorithms) {
    const ms = timeMs((i) => fn(sizes, 'bench', i), n >= 1_000_000 ? 5 : 11);
    const order = fn(sizes, 'bench', 0);
    const { shardsPer64, switchesPer1k } = locality(order, owner);
    const { displacement, corr } = randomness(order);
    rows.push({ n, name, ms, shardsPer64, switchesPer1k, displacement, corr });
  }
}
const chi2 = new Map(algorithms.map(({ name, fn }) => [name, landingChi2(fn, quick ? 4000 : 20000)]));

console.log(`Shuffle quality, ${SHARDS} equal shards; node ${process.version}, ${process.arch}\n`);
console.log('| N | algorithm | ms/perm | shards/64 | switches/1k | disp (1/3 = random) | corr | chi2/E (N=20) |');
console.log('|---:|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.n.toLocaleString('en-US')} | ${r.name} | ${f(r.ms, 2)} | ${f(r.shardsPer64, 2)} | ${f(r.switchesPer1k, 1)} | ` +
      `${f(r.displacement, 4)} | ${f(r.corr, 4)} | ${f(chi2.get(r.name), 2)} |`,
  );
}
