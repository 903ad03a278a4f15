#!/usr/bin/env node
/**
 * Loader vs atSync, epoch by epoch (issue 28 goal 1): each run starts two fresh processes one after the other, one
 * reading epochs 1..E with the loader (copy mode, verifying), one with an atSync loop over the same order (planEpoch,
 * same seed, epoch and batch size, planned inside the timed epoch as the loader plans it). Every epoch is timed on its
 * own, wall and CPU (process.cpuUsage: all threads, so V8's compiler and GC threads count), and minor page faults are
 * counted. Reports, per batch size, shuffle and epoch, the median and min-max over runs of the ratio of samples/s
 * (loader / atSync; goal >= 0.9), and the loader's first epoch against its last ones (goal <= 1.3x).
 *
 *   npm run build && node bench/loader-epochs.mjs [--real A|B | --tree DIR | --samples 5000 --min-kb 1 --max-kb 100]
 *       [--runs 5] [--epochs 5] [--batches 1,8,64,256] [--shuffles none,block,full] [--dir DIR] [--json FILE]
 *
 * CPU ratios are the steadier ones on a shared machine; for instruction counts that do not depend on load at all,
 * see bench/loader-callgrind.mjs.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatasetWriter } from '../dist/src/pack/dataset-writer.js';
import { pack } from '../dist/src/pack/pack.js';
import { openDataset } from '../dist/src/read/dataset.js';
import { planEpoch } from '../dist/src/read/epoch-plan.js';
import { median } from '../dist/src/bench/report-stats.js';
import { SeededRandom } from '../dist/src/bench/seeded-random.js';
import { realTree } from './real-trees.mjs';

const SELF = fileURLToPath(import.meta.url);

function parseArgs(argv) {
  const o = { real: '', tree: '', samples: 5000, minKb: 1, maxKb: 100, runs: 5, epochs: 5, batches: '1,8,64,256', shuffles: 'none,block,full', dir: '', json: '', child: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === '--real') o.real = next();
    else if (a === '--tree') o.tree = next();
    else if (a === '--samples') o.samples = Number(next());
    else if (a === '--min-kb') o.minKb = Number(next());
    else if (a === '--max-kb') o.maxKb = Number(next());
    else if (a === '--runs') o.runs = Number(next());
    else if (a === '--epochs') o.epochs = Number(next());
    else if (a === '--batches') o.batches = next();
    else if (a === '--shuffles') o.shuffles = next();
    else if (a === '--dir') o.dir = next();
    else if (a === '--json') o.json = next();
    else if (a === '--child') o.child = argv.slice(i + 1);
    else throw new Error(`unknown argument ${a}`);
    if (o.child !== undefined) break;
  }
  if (!(o.epochs >= 3)) throw new Error('--epochs must be 3 or more: the first epoch is compared with epochs 3..E');
  return o;
}

/** Seeded uniform floats in [0, 1): the same data and orders on every run. */
function rng(seed) {
  const r = new SeededRandom(seed);
  return () => r.float();
}

/** The dataset to read: a real tree packed as `pack` packs it, or synthetic samples of log-uniform sizes. */
async function prepare(o) {
  const name = o.real !== '' ? `real-${o.real}` : o.tree !== '' ? `tree-${path.basename(o.tree)}` : `synth-${o.samples}-${o.minKb}-${o.maxKb}`;
  const dir = o.dir !== '' ? o.dir : path.join(os.tmpdir(), `shardkit-loader-epochs-${name}`);
  const ds = path.join(dir, 'ds');
  if (fs.existsSync(path.join(ds, 'manifest.json'))) return { ds, name };
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  if (o.real !== '' || o.tree !== '') {
    const tree = o.real !== '' ? realTree(o.real).dir : o.tree;
    await pack({ source: tree, out: ds, groupNumbered: true }); // as bench/read.mjs packs real trees
    return { ds, name };
  }
  const r = rng(42);
  const writer = new DatasetWriter({ dir: ds, shardBytes: 64 * 1024 * 1024 });
  const lnMin = Math.log(o.minKb * 1024);
  const lnMax = Math.log(o.maxKb * 1024);
  for (let i = 0; i < o.samples; i++) {
    const size = Math.round(Math.exp(lnMin + r() * (lnMax - lnMin)));
    const bytes = Buffer.allocUnsafe(size);
    for (let j = 0; j < size; j += 4) bytes.writeUInt32LE((r() * 2 ** 32) >>> 0, Math.min(j, size - 4));
    writer.add({ key: `d${String(i % 100).padStart(2, '0')}/${String(i).padStart(7, '0')}`, members: { bin: bytes } });
  }
  await writer.finish();
  return { ds, name };
}

/** One process: E epochs of `mode` (loader | atSync), each timed alone; prints one JSON line. */
async function child([dir, mode, batch, shuffle, epochs]) {
  const ds = await openDataset(dir, { checkShards: 'size' });
  const shardSizes = ds.shards.map((s) => s.samples);
  const batchSize = Number(batch);
  const out = [];
  let bytes = 0;
  for (let epoch = 0; epoch < Number(epochs); epoch++) {
    const faults = process.resourceUsage().minorPageFault;
    const cpu = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    if (mode === 'atSync') {
      const order = planEpoch({ shardSizes, seed: 1, epoch, shuffle, batchSize }).order;
      for (let k = 0; k < order.length; k++) {
        const m = ds.atSync(order[k]).members;
        for (const ext in m) bytes += m[ext].length;
      }
    } else {
      for await (const b of ds.loader({ batchSize, shuffle, seed: 1, epoch })) {
        for (const s of b) for (const ext in s.members) bytes += s.members[ext].length;
      }
    }
    const wall = Number(process.hrtime.bigint() - t0) / 1e6;
    const c = process.cpuUsage(cpu);
    out.push({ wall, cpu: (c.user + c.system) / 1e3, faults: process.resourceUsage().minorPageFault - faults });
  }
  process.stdout.write(`${JSON.stringify({ samples: ds.size, bytes, epochs: out })}\n`);
  await ds.close();
}

const fmt = (xs) => `${median(xs).toFixed(2)} [${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}]`;

async function main(o) {
  const { ds, name } = await prepare(o);
  const configs = o.batches.split(',').flatMap((b) => o.shuffles.split(',').map((s) => ({ batch: Number(b), shuffle: s })));
  const results = configs.map((c) => ({ ...c, loader: [], atSync: [] }));
  for (let run = 0; run < o.runs; run++) {
    for (const r of results) {
      // alternated: which goes first flips every run, so a drift in the machine's load hits both alike
      for (const mode of run % 2 === 0 ? ['loader', 'atSync'] : ['atSync', 'loader']) {
        const line = execFileSync(process.execPath, [SELF, '--child', ds, mode, String(r.batch), r.shuffle, String(o.epochs)], { encoding: 'utf8' });
        r[mode].push(JSON.parse(line));
      }
      if (r.loader.at(-1).bytes !== r.atSync.at(-1).bytes) throw new Error(`loader and atSync read different bytes (batch ${r.batch}, ${r.shuffle})`);
    }
    process.stderr.write(`run ${run + 1}/${o.runs} done\n`);
  }
  const lines = [`# Loader / atSync per epoch: ${name} (${results[0].loader[0].samples} samples), ${o.runs} alternated runs`, ''];
  lines.push('| batch | shuffle | epoch | CPU ratio | wall ratio | loader CPU ms | atSync CPU ms | loader faults |', '|---:|---|---:|---|---|---:|---:|---:|');
  const summary = [];
  for (const r of results) {
    for (let e = 0; e < o.epochs; e++) {
      const cpu = r.loader.map((l, i) => r.atSync[i].epochs[e].cpu / l.epochs[e].cpu);
      const wall = r.loader.map((l, i) => r.atSync[i].epochs[e].wall / l.epochs[e].wall);
      lines.push(`| ${r.batch} | ${r.shuffle} | ${e + 1} | ${fmt(cpu)} | ${fmt(wall)} | ${median(r.loader.map((l) => l.epochs[e].cpu)).toFixed(1)} | ${median(r.atSync.map((l) => l.epochs[e].cpu)).toFixed(1)} | ${median(r.loader.map((l) => l.epochs[e].faults))} |`);
      summary.push({ batch: r.batch, shuffle: r.shuffle, epoch: e + 1, cpuRatio: median(cpu), cpuMin: Math.min(...cpu), cpuMax: Math.max(...cpu), wallRatio: median(wall), wallMin: Math.min(...wall), wallMax: Math.max(...wall) });
    }
  }
  lines.push('', 'Loader first epoch / median of its epochs 3..E (CPU; goal <= 1.3):', '');
  for (const r of results) {
    const firstOverLater = r.loader.map((l) => l.epochs[0].cpu / median(l.epochs.slice(2).map((x) => x.cpu)));
    lines.push(`- batch ${r.batch}, ${r.shuffle}: ${fmt(firstOverLater)}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (o.json !== '') fs.writeFileSync(o.json, JSON.stringify({ dataset: name, runs: o.runs, epochs: o.epochs, summary, raw: results }, null, 2));
}

const o = parseArgs(process.argv.slice(2));
if (o.child !== undefined) await child(o.child);
else await main(o);
