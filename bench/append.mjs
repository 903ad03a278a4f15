#!/usr/bin/env node
/**
 * The cost of `shardkit append`: k new tiny files appended to a dataset of n samples (packed layout), against
 * `shardkit pack` of the same k files alone (what the append must do anyway). Their ratio is the price of the
 * merged index over n + k samples; the rest of the append is O(k). Runs the two alternately (A B A B ...) in fresh
 * processes (wall time by a python3 wrapper), each append on a fresh hard-linked copy of the base (append never
 * writes an old file: the copy costs nothing and changes nothing); prints medians with min and max, and the
 * ratio of each pair. One more append, in this process, counts the bytes read through system calls
 * (/proc/self/io rchar) and the bytes of the new shards, against the old index and old shards.
 *
 *   npm run build && node bench/append.mjs [--n 1000000] [--k 10000] [--repeat 3]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { median } from '../dist/src/bench/report-stats.js';
import { DatasetWriter, append, openDataset } from '../dist/src/index.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '1000000' }, k: { type: 'string', default: '10000' }, repeat: { type: 'string', default: '3' } } });
const N = Number(values.n);
const K = Number(values.k);
const R = Number(values.repeat);
const cli = fileURLToPath(new URL('../dist/bin/shardkit.cjs', import.meta.url));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'shardkit-bench-append-'));
const base = path.join(work, 'base');
const src = path.join(work, 'src');
const GROUPS = 1000;

// the base: n tiny samples in 1000 directories; the new files fall between its keys in every directory, so the merge
// interleaves them all the way through
let t = performance.now();
const writer = new DatasetWriter({ dir: base, layout: 'packed' });
for (let g = 0; g < GROUPS; g++) {
  const dir = `d${String(g).padStart(4, '0')}`;
  for (let i = g; i < N; i += GROUPS) writer.add({ key: `${dir}/f${String(i).padStart(8, '0')}`, members: { bin: Buffer.alloc(16 + (i % 48), i & 255) } });
}
await writer.finish();
process.stderr.write(`base: ${N} samples in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
for (let j = 0; j < K; j++) {
  const dir = path.join(src, `d${String(j % GROUPS).padStart(4, '0')}`);
  if (j < GROUPS) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `g${String(j).padStart(8, '0')}.bin`), Buffer.alloc(16 + (j % 48), j & 255));
}

const wrapper = `
import subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(time.monotonic() - t)
`;
const timed = (cmd) => Number(execFileSync('python3', ['-c', wrapper, ...cmd]).toString().trim());
const fresh = (name) => {
  const dir = path.join(work, name);
  fs.rmSync(dir, { recursive: true, force: true });
  execFileSync('cp', ['-al', base, dir]);
  execFileSync('sync');
  return dir;
};
const sides = {
  append: () => {
    const ds = fresh('grown');
    return timed([process.execPath, cli, 'append', ds, src, '--quiet']);
  },
  packAlone: () => {
    fs.rmSync(path.join(work, 'alone'), { recursive: true, force: true });
    execFileSync('sync');
    return timed([process.execPath, cli, 'pack', src, '--out', path.join(work, 'alone'), '--layout', 'packed', '--quiet']);
  },
};
sides.append();
sides.packAlone();
const runs = { append: [], packAlone: [] };
for (let r = 0; r < R; r++) for (const side of ['append', 'packAlone']) runs[side].push(sides[side]());

// bytes read and written by one append, in this process
const grown = fresh('counted');
const before = await openDataset(grown);
const oldIndexBytes = before.manifest.index.bytes;
const oldShardBytes = before.manifest.totals.shardBytes;
await before.close();
const rchar = () => Number(/rchar: (\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))[1]);
const read0 = rchar();
t = performance.now();
const result = await append({ dataset: grown, source: src });
const inProcessSeconds = (performance.now() - t) / 1000;
const bytesRead = rchar() - read0;
const newShardBytes = result.manifest.shards.slice(result.shards[0]).reduce((n, s) => n + s.bytes, 0);

const stat = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const pairs = runs.append.map((a, r) => a / runs.packAlone[r]);
const report = {
  n: N,
  k: K,
  layout: 'packed',
  repeat: R,
  appendSeconds: stat(runs.append),
  packAloneSeconds: stat(runs.packAlone),
  appendOverPackAlonePaired: { ...stat(pairs), runs: pairs.map((x) => Number(x.toFixed(3))) },
  inProcessAppendSeconds: Number(inProcessSeconds.toFixed(3)),
  oldEntriesRead: result.oldEntriesRead,
  oldIndexBytes,
  newIndexBytes: result.manifest.index.bytes,
  bytesReadBySyscalls: bytesRead,
  bytesReadOverOldIndex: Number((bytesRead / oldIndexBytes).toFixed(3)),
  oldShardBytes,
  newShardBytes,
  newShardBytesPerNewSample: Number((newShardBytes / K).toFixed(1)),
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
fs.rmSync(work, { recursive: true, force: true });
