#!/usr/bin/env node
/**
 * Start-up cost of a fresh process, as ratios to `node -e 0` (Node's own start): importing the package (what
 * package.json's exports name; `shardkit/read` too), importing it, opening a dataset and reading one sample, `shardkit --help`,
 * `--version`, and packing 10 small files. The variants run alternated, one process each in turn, `--runs` rounds;
 * each figure is the median wall time over the rounds, with min and max, and the median CPU time (GNU time). With `--baseline DIR` (another built
 * checkout, e.g. `git worktree add /tmp/base main && cd /tmp/base && npm ci`), each variant also runs there, in the
 * same rounds.
 *
 *   npm run build && node bench/startup.mjs [--runs 15] [--baseline DIR]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' }, baseline: { type: 'string' } } });
const runs = Number(values.runs);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-startup-'));
const src = path.join(work, 'src');
fs.mkdirSync(src);
for (let i = 0; i < 10; i++) fs.writeFileSync(path.join(src, `f${i}.txt`), `sample ${i}\n`);

/** The variants of one checkout: name -> node's arguments. */
function variantsOf(root, tag) {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const entry = JSON.stringify(path.join(root, pkg.exports['.'].default));
  const cli = path.join(root, pkg.bin.shardkit);
  const out = path.join(work, `out-${tag}`);
  // shardkit/read (the reading API alone) where the checkout has it: a baseline from before it runs without
  const read = pkg.exports['./read'] === undefined ? undefined : JSON.stringify(path.join(root, pkg.exports['./read'].default));
  return {
    "import('shardkit')": ['--input-type=module', '-e', `await import(${entry})`],
    ...(read === undefined ? {} : { "import('shardkit/read')": ['--input-type=module', '-e', `await import(${read})`] }),
    'import, openDataset, atSync(0)': ['--input-type=module', '-e', `const { openDataset } = await import(${entry}); const ds = await openDataset(${JSON.stringify(out)}); ds.atSync(0); await ds.close();`],
    'shardkit --help': [cli, '--help'],
    'shardkit --version': [cli, '--version'],
    'shardkit pack (10 files)': [cli, 'pack', src, '--out', out, '--force', '--quiet'],
  };
}

const variants = { 'node -e 0': ['-e', '0'] };
const checkouts = values.baseline === undefined ? [['', here]] : [['', here], ['baseline: ', path.resolve(values.baseline)]];
for (const [label, root] of checkouts) {
  const tag = label === '' ? 'this' : 'baseline';
  const vs = variantsOf(root, tag);
  // the dataset the reading variant opens
  const made = spawnSync(process.execPath, vs['shardkit pack (10 files)'], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`pack failed in ${root}: ${made.stderr}`);
  for (const [name, args] of Object.entries(vs)) variants[`${label}${name}`] = args;
}
const names = Object.keys(variants).sort((a, b) => a.replace(/^baseline: /, '').localeCompare(b.replace(/^baseline: /, '')) || a.localeCompare(b));
// CPU time (user + system, threads and children included) as well as wall time where GNU time is installed: on a
// busy machine the wall time of a short process mostly measures the wait for a core
const gnuTime = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const timeFile = path.join(work, 'time.txt');
const times = Object.fromEntries(names.map((k) => [k, []]));
const cpuTimes = Object.fromEntries(names.map((k) => [k, []]));
for (let r = 0; r < runs; r++) {
  for (const name of names) {
    const t0 = process.hrtime.bigint();
    const p =
      gnuTime === undefined
        ? spawnSync(process.execPath, variants[name], { encoding: 'utf8' })
        : spawnSync(gnuTime, ['-f', '%U %S', '-o', timeFile, process.execPath, ...variants[name]], { encoding: 'utf8' });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (p.status !== 0) throw new Error(`${name} failed: ${p.stderr}`);
    times[name].push(ms);
    if (gnuTime !== undefined) {
      const [user, sys] = fs.readFileSync(timeFile, 'utf8').trim().split('\n').pop().split(' ').map(Number);
      cpuTimes[name].push((user + sys) * 1000);
    }
  }
}
fs.rmSync(work, { recursive: true, force: true });
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const base = median(times['node -e 0']);
const cpuBase = gnuTime === undefined ? undefined : median(cpuTimes['node -e 0']);
const rows = names.map((name) => ({
  name,
  medianMs: +median(times[name]).toFixed(1),
  minMs: +Math.min(...times[name]).toFixed(1),
  maxMs: +Math.max(...times[name]).toFixed(1),
  xNode: +(median(times[name]) / base).toFixed(2),
  ...(cpuBase === undefined ? {} : { cpuMs: +median(cpuTimes[name]).toFixed(0), cpuXNode: +(median(cpuTimes[name]) / cpuBase).toFixed(2) }),
}));
console.log(`${runs} alternated rounds; xNode: median / median of node -e 0 (${base.toFixed(1)} ms wall${cpuBase === undefined ? '' : `, ${cpuBase.toFixed(0)} ms CPU`})`);
console.table(rows);
