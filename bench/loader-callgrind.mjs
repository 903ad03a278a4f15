#!/usr/bin/env node
/**
 * Instructions per sample of a loader epoch and of an atSync loop over the same order, counted by valgrind's
 * callgrind: deterministic where wall-clock ratios on a loaded machine are not (issue 28 goal 1).
 *
 *   npm run build && valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=OUT/cg.out \
 *     node --perf-basic-prof bench/loader-callgrind.mjs DATASET MODE BATCH SHUFFLES [WARMUP] [EPOCHS] [each]
 *
 * MODE: atSync | atViewSync | loader | loaderView; SHUFFLES: a comma list of none, full, block. For each shuffle it
 * runs WARMUP epochs (default 2), zeroes callgrind's counters (callgrind_control -z), runs EPOCHS (default 1) and
 * dumps them (callgrind_control -d) as part files labelled MODE-bBATCH-SHUFFLE; a "null" dump first measures what a
 * zero and a dump cost by themselves (subtract it). Instructions per sample = the part's total / (EPOCHS x samples).
 * With `each`, every epoch (warm-up ones included) is a part of its own, labelled ...-eN: the warm-up curve, how many
 * epochs the code needs before V8 has optimized it (the bench times epochs WARMUP+1 to WARMUP+3 of a fresh process).
 * Count the main thread apart: `callgrind_annotate --inclusive=yes` shows what other threads spent under
 * start_thread (TurboFan compiling, concurrent GC), which is tiering, not the steady state. JIT frames show as
 * addresses; /tmp/perf-PID.map (from --perf-basic-prof) names them (the last entry covering an address wins).
 */
import { spawnSync } from 'node:child_process';
import { openDataset } from '../dist/src/read/dataset.js';
import { planEpoch } from '../dist/src/read/epoch-plan.js';

const [dir, mode, batch, shuffles, warmup = '2', epochs = '1', each = ''] = process.argv.slice(2);
if (dir === undefined || !['atSync', 'atViewSync', 'loader', 'loaderView'].includes(mode) || !shuffles) {
  process.stderr.write('usage: loader-callgrind.mjs DATASET atSync|atViewSync|loader|loaderView BATCH none,full,block [WARMUP] [EPOCHS] [each]\n');
  process.exit(2);
}
const batchSize = Number(batch);
const ds = await openDataset(dir, { checkShards: 'size' });
const shardSizes = ds.shards.map((s) => s.samples);
const memberBytes = (s) => {
  let n = 0;
  for (const k in s.members) n += s.members[k].length;
  return n;
};
const callgrind = (...args) => {
  const r = spawnSync('callgrind_control', [...args, String(process.pid)], { encoding: 'utf8' });
  if (r.status !== 0 || /Error/.test(r.stdout)) throw new Error(`callgrind_control ${args.join(' ')} failed (run under valgrind --tool=callgrind): ${r.stderr}${r.stdout}`);
};
let epoch = 0;
const epochOf = (shuffle) =>
  mode.startsWith('at')
    ? async () => {
        const order = planEpoch({ shardSizes, seed: 1, epoch: epoch++, shuffle }).order;
        let bytes = 0;
        if (mode === 'atSync') for (let k = 0; k < order.length; k++) bytes += memberBytes(ds.atSync(order[k]));
        else for (let k = 0; k < order.length; k++) bytes += memberBytes(ds.atViewSync(order[k]));
        return bytes;
      }
    : async () => {
        let bytes = 0;
        for await (const b of ds.loader({ batchSize, shuffle, seed: 1, epoch: epoch++, view: mode === 'loaderView' })) for (const s of b) bytes += memberBytes(s);
        return bytes;
      };
callgrind('-z');
callgrind('-d', 'null');
for (const shuffle of shuffles.split(',')) {
  const run = epochOf(shuffle);
  const label = `${mode}-b${batchSize}-${shuffle}`;
  if (each === 'each') {
    callgrind('-z');
    for (let i = 0; i < Number(warmup) + Number(epochs); i++) {
      await run();
      callgrind('-d', `${label}-e${i}`);
    }
    continue;
  }
  for (let i = 0; i < Number(warmup); i++) await run();
  callgrind('-z');
  for (let i = 0; i < Number(epochs); i++) await run();
  callgrind('-d', label);
}
process.stdout.write(`${JSON.stringify({ samples: ds.size, epochs: Number(epochs) })}\n`);
await ds.close();
