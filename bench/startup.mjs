#!/usr/bin/env node
/**
 * Start-up cost of a fresh process, as ratios to `node -e 0` (Node's own start): importing the package (what
 * package.json's exports name), opening a dataset and reading a sample, `shardkit --help`, and packing 10 small files. The variants run alternated, one
 * process each in turn, `--runs` rounds; each figure is the median wall time over the rounds, with min and max.
 *
 *   npm run build && node bench/startup.mjs [--runs 15]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
const runs = Number(values.runs);
const cli = path.join(root, 'dist/bin/shardkit.cjs');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-startup-'));
const src = path.join(work, 'src');
fs.mkdirSync(src);
for (let i = 0; i < 10; i++) fs.writeFileSync(path.join(src, `f${i}.txt`), `sample ${i}\n`);
const entry = path.join(root, JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).exports['.'].default);

const variants = {
  'node -e 0': ['-e', '0'],
  "import('shardkit')": ['--input-type=module', '-e', `await import(${JSON.stringify(entry)})`],
  '{ openDataset } from shardkit, open, atSync(0)': [
    '--input-type=module',
    '-e',
    `const { openDataset } = await import(${JSON.stringify(entry)}); const ds = await openDataset(${JSON.stringify(path.join(work, 'out'))}); ds.atSync(0); await ds.close();`,
  ],
  'shardkit --help': [cli, '--help'],
  'shardkit --version': [cli, '--version'],
  'shardkit pack (10 files)': [cli, 'pack', src, '--out', path.join(work, 'out'), '--force', '--quiet'],
};
const times = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
// the dataset the reading variant opens
spawnSync(process.execPath, variants['shardkit pack (10 files)'], { stdio: 'inherit' });
for (let r = 0; r < runs; r++) {
  for (const name of Object.keys(times)) {
    const t0 = process.hrtime.bigint();
    const p = spawnSync(process.execPath, variants[name], { encoding: 'utf8' });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (p.status !== 0) throw new Error(`${name} failed: ${p.stderr}`);
    times[name].push(ms);
  }
}
fs.rmSync(work, { recursive: true, force: true });
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const base = median(times['node -e 0']);
const rows = Object.entries(times).map(([name, xs]) => ({
  name,
  medianMs: +median(xs).toFixed(1),
  minMs: +Math.min(...xs).toFixed(1),
  maxMs: +Math.max(...xs).toFixed(1),
  xNode: +(median(xs) / base).toFixed(2),
}));
console.log(`${runs} alternated rounds; ratio to the median of node -e 0 (${base.toFixed(1)} ms)`);
console.table(rows);
