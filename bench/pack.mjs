#!/usr/bin/env node
/**
 * Packing throughput against GNU tar on the same tree in the same run, and peak RSS of the pack process.
 * Runs `tar -cf` and `shardkit pack` alternately (A B A B ...) in fresh processes under a python3 wrapper that
 * reports wall time and the child's peak RSS (getrusage RUSAGE_CHILDREN); prints medians with min and max. A third
 * side, `node -e 0` in the same environment, times Node's own start-up, which every pack pays before its code runs
 * (nodeStartSeconds, and its share of the pack's median).
 *
 *   npm run build && node bench/pack.mjs [--files 100000] [--repeat 5] [--size 100-4000] [--tree DIR] [--layout tar|packed] [--cold] [--tar-sort]
 *                                        [--read-threads N]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { median } from '../dist/src/bench/report-stats.js';

const { values } = parseArgs({ options: { files: { type: 'string', default: '100000' }, repeat: { type: 'string', default: '5' }, size: { type: 'string', default: '100-4000' }, tree: { type: 'string' }, layout: { type: 'string', default: 'tar' }, cold: { type: 'boolean', default: false }, 'tar-sort': { type: 'boolean', default: false }, 'read-threads': { type: 'string' } } });
const N = Number(values.files);
const R = Number(values.repeat);
const [minSize, maxSize] = values.size.split('-').map(Number);
const cli = fileURLToPath(new URL('../dist/bin/shardkit.cjs', import.meta.url));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-bench-pack-'));
const src = values.tree ?? path.join(work, 'src');

if (!values.tree) {
  // 1000 files per directory, like ImageNet class folders; deterministic sizes and bytes
  let bytes = 0;
  for (let i = 0; i < N; i++) {
    const dir = path.join(src, `d${String(Math.floor(i / 1000)).padStart(4, '0')}`);
    if (i % 1000 === 0) fs.mkdirSync(dir, { recursive: true });
    const size = minSize + ((i * 2654435761) >>> 0) % (maxSize - minSize + 1);
    fs.writeFileSync(path.join(dir, `f${String(i).padStart(8, '0')}.bin`), Buffer.alloc(size, i & 255));
    bytes += size;
  }
  process.stderr.write(`made ${N} files, ${(bytes / 2 ** 20).toFixed(1)} MiB in ${src}\n`);
}

const wrapper = `
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
`;
// Every run starts with no dirty pages: the previous run's output (hundreds of MB) is written back first, so no
// run's writes are throttled by another's writeback (seen: a pack's write calls took 0.64 s instead of 0.15 s).
// --cold also drops the page cache (root only), so both read the tree from the disk.
const dropCaches = () => {
  execFileSync('sync');
  if (values.cold) fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
};
// Each run writes a fresh output: the previous one is deleted first, outside the timing (overwriting it would add
// the freeing of its page-cache pages, ~0.3 s for 100k files, to both sides' times and pull their ratio toward 1)
const measure = (cmd) => {
  for (const out of ['out.tar', 'out.shards']) fs.rmSync(path.join(work, out), { recursive: true, force: true });
  dropCaches();
  const [secs, rss] = execFileSync('python3', ['-c', wrapper, ...cmd]).toString().trim().split(' ').map(Number);
  return { secs, rss };
};
const sides = {
  // --tar-sort: GNU tar with --sort=name, the deterministic archive shardkit's sorted output corresponds to
  tar: () => measure(['tar', ...(values['tar-sort'] ? ['--sort=name'] : []), '-cf', path.join(work, 'out.tar'), '-C', src, '.']),
  shardkit: () => measure([process.execPath, cli, 'pack', src, '--out', path.join(work, 'out.shards'), '--quiet', '--layout', values.layout, ...(values['read-threads'] === undefined ? [] : ['--read-threads', values['read-threads']])]),
  // Node's own start-up in the same environment, which every shardkit run pays before any of its code runs (with
  // NODE_EXTRA_CA_CERTS set, node parses that CA bundle at every start: `node -e 0` took 0.13-0.15 s here, 0.04 s
  // without it)
  node: () => measure([process.execPath, '-e', '0']),
};
// one warm-up each: the tree comes from the page cache for every measured run
sides.tar();
sides.shardkit();
sides.node();
const runs = { tar: [], shardkit: [], node: [] };
for (let r = 0; r < R; r++) for (const side of ['tar', 'shardkit', 'node']) runs[side].push(sides[side]());

const stat = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
/** Regular files under `dir` (a --tree's own count; the generated tree has N). */
function countFiles(dir) {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? countFiles(path.join(dir, e.name)) : e.isFile() ? 1 : 0;
  return n;
}
const files = values.tree ? countFiles(values.tree) : N;
const result = {
  ...(values.tree ? { tree: values.tree } : {}),
  files,
  repeat: R,
  layout: values.layout,
  readThreads: values['read-threads'] ?? 'default (2 on two cores or more; else 1, and 2 when reads come from storage)',
  tar: values['tar-sort'] ? 'tar --sort=name -cf' : 'tar -cf',
  cache: values.cold ? 'cold (drop_caches before every run)' : 'warm',
  tarSeconds: stat(runs.tar.map((x) => x.secs)),
  shardkitSeconds: stat(runs.shardkit.map((x) => x.secs)),
  shardkitPeakRssMiB: stat(runs.shardkit.map((x) => x.rss / 2 ** 20)),
  tarPeakRssMiB: stat(runs.tar.map((x) => x.rss / 2 ** 20)),
  nodeStartSeconds: stat(runs.node.map((x) => x.secs)),
  nodeExtraCaCerts: process.env.NODE_EXTRA_CA_CERTS === undefined ? 'unset' : 'set: node parses that CA bundle at every start',
};
result.nodeStartShareOfShardkit = result.nodeStartSeconds.median / result.shardkitSeconds.median;
result.speedVsTar = result.tarSeconds.median / result.shardkitSeconds.median;
// each tar run and the shardkit run after it are neighbours in time: the median of their ratios cancels the
// machine's drift between pairs, which the ratio of medians does not
const pairRatios = runs.tar.map((t, r) => t.secs / runs.shardkit[r].secs);
result.speedVsTarPaired = { ...stat(pairRatios), runs: pairRatios.map((x) => Number(x.toFixed(3))) };
result.shardkitFilesPerSec = files / result.shardkitSeconds.median;
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
fs.rmSync(work, { recursive: true, force: true });
