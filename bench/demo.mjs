#!/usr/bin/env node
/**
 * The README quick-start demo (`npm run demo`): synthesize a few thousand ImageNet-like JPEGs, pack them into
 * shards, derive a 224x224 resized dataset from the shards, and bench raw files vs shards. Prints the bench's
 * summary table, where the report is, and how much disk the demo's directory takes and how to remove it (a few
 * hundred MB at the default size; `shardkit-demo/` is in .gitignore).
 *
 * What the bench compares: the raw JPEGs vs shards packed from them WITHOUT passes, so both sides read the same
 * bytes. The resized dataset is shown as what a preprocessing pass produces (one derive, no small files
 * written back); benching raw originals against resized shards would compare different work.
 *
 *   npm run build && node bench/demo.mjs [--dir shardkit-demo] [--samples 2500] [--epochs 2] [--repeat 3]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = process.env.SHARDKIT_DEMO_CLI ?? path.join(root, 'dist/bin/shardkit.cjs');
const { values } = parseArgs({
  options: {
    dir: { type: 'string', default: 'shardkit-demo' },
    samples: { type: 'string', default: '2500' },
    epochs: { type: 'string', default: '2' },
    repeat: { type: 'string', default: '3' },
  },
});
const dir = path.resolve(values.dir);
const raw = path.join(dir, 'raw');
const shards = path.join(dir, 'shards');
const resized = path.join(dir, 'shards-224');
const report = path.join(dir, 'report');

function step(title, args) {
  process.stderr.write(`\n$ shardkit ${args.join(' ')}\n`);
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit' });
  if (r.status !== 0) {
    process.stderr.write(`demo: "${title}" failed (exit ${r.status})\n`);
    process.exit(r.status ?? 1);
  }
  process.stderr.write(`(${title}: ${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
}

if (!fs.existsSync(cli)) {
  process.stderr.write(`demo: ${cli} is missing: run npm run build first\n`);
  process.exit(1);
}
const started = performance.now();
// Only the demo's own directories are replaced, so a rerun starts fresh.
for (const d of [raw, shards, resized, report]) fs.rmSync(d, { recursive: true, force: true });
step('synthesize', ['synth', raw, '--samples', values.samples, '--classes', '20', '--sizes', 'imagenet', '--seed', '1']);
step('pack', ['pack', raw, '--out', shards]);
step('derive a resized copy', ['derive', shards, '--out', resized, '--pass', 'resize=224x224']);
step('bench raw vs shards', ['bench', raw, shards, '--epochs', values.epochs, '--repeat', values.repeat, '--out', report]);
process.stderr.write(
  `\ndemo done in ${((performance.now() - started) / 1000).toFixed(0)} s. The bench compared ${raw} (raw JPEGs) with ${shards} (the same bytes in shards);\n` +
    `${resized} is the 224x224 resized variant, made from the shards in one pass. Open ${path.join(report, 'report.html')} for the charts.\n` +
    `The demo's files take ${mebibytes(diskBytes(dir))} MiB in ${dir}${ignoredByGit(dir) ? ' (git ignores it)' : ''}; remove them with: rm -rf ${shellWord(dir)}\n`,
);

/** Bytes the files under `d` occupy on disk (st_blocks, as du counts). */
function diskBytes(d) {
  let total = 0;
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) total += diskBytes(p);
    else total += fs.lstatSync(p).blocks * 512;
  }
  return total;
}

function mebibytes(bytes) {
  return (bytes / 2 ** 20).toFixed(0);
}

/** Whether `d` is inside a git work tree that ignores it (the clone's .gitignore lists shardkit-demo/). */
function ignoredByGit(d) {
  return spawnSync('git', ['check-ignore', '-q', d], { cwd: path.dirname(d) }).status === 0;
}

function shellWord(value) {
  return /^[\w./@%+=:,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
