import type { Command } from 'commander';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { BenchProgress } from '../../src/bench/bench-options.js';
import type { BenchReport, FirstAndSteady, SideResult } from '../../src/bench/report.js';
import { epochsReadFromStorage } from '../../src/bench/report-build.js';
import { formatRatio } from '../../src/bench/report-format.js';
import { formatSpread, formatSpreadNote, type RatioSpread } from '../../src/bench/report-spread.js';
import { runBench, writeReport } from '../../src/on-demand.js';
import { expectLocalPath } from '../../src/io/location.js';
import { CACHE_DIR_FLAGS, CACHE_SIZE_FLAGS, cacheOption, parseChoice, parseCount } from '../args.js';
import { count, humanBytes, table } from '../format.js';
import { progressBar } from '../progress.js';
import { printJson, runAction } from '../run-action.js';

interface BenchFlags {
  epochs: string;
  order: string;
  batch: string;
  concurrency: string;
  decode: string;
  cache: string;
  repeat: string;
  seed: string;
  vs?: string;
  profile?: string;
  throttleIops?: string;
  throttleMbps?: string;
  strace: boolean;
  out?: string;
  json?: boolean;
  quiet?: boolean;
  remote?: string;
  cacheDir?: string;
  cacheSize?: string;
  cachePolicy: string;
}

/** runBench's `remote` and `shardCache` from --remote, --cache-dir, --cache-size and --cache-policy. */
function remoteOptions(flags: BenchFlags): { remote?: string; shardCache?: { dir: string; maxBytes: number; policy: 'clairvoyant' | 'lru' } } {
  const policy = parseChoice(flags.cachePolicy, '--cache-policy', ['clairvoyant', 'lru'] as const);
  const { cache } = cacheOption(flags.cacheDir, flags.cacheSize);
  return {
    ...(flags.remote === undefined ? {} : { remote: flags.remote }),
    ...(cache === undefined ? {} : { shardCache: { dir: cache.dir, maxBytes: cache.maxBytes, policy } }),
  };
}

function throttleOption(flags: BenchFlags): { throttle?: { readIops: number; readBps?: number } } {
  if (flags.throttleIops === undefined) {
    if (flags.throttleMbps !== undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, '--throttle-mbps needs --throttle-iops: pass both');
    return {};
  }
  const readIops = parseCount(flags.throttleIops, '--throttle-iops', 1);
  return { throttle: { readIops, ...(flags.throttleMbps === undefined ? {} : { readBps: parseCount(flags.throttleMbps, '--throttle-mbps', 1) * 1e6 }) } };
}

/** `shardkit-bench-20250101-120000` in the current directory. */
function defaultOut(now: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `shardkit-bench-${now.getFullYear()}${p(now.getMonth() + 1)}${p(now.getDate())}-${p(now.getHours())}${p(now.getMinutes())}${p(now.getSeconds())}`;
}

const fixed = (x: number | null | undefined, digits = 2): string => (x === null || x === undefined ? 'n/a' : x.toFixed(digits));

/** The report's first-epoch / steady-state pair; steady state left out where every process ran one epoch. */
const firstAndLater = (f: FirstAndSteady, digits: number): string => (f.steadyState === null ? fixed(f.firstEpoch, digits) : `${fixed(f.firstEpoch, digits)} / ${fixed(f.steadyState, digits)}`);

/** Warm mode: how many epochs still read from storage (flagged in the report's notes). */
function warmSuffix(sides: readonly SideResult[]): string {
  const n = sides.reduce((k, s) => k + epochsReadFromStorage(s.counters).length, 0);
  return n === 0 ? '' : ` (${n} epoch${n === 1 ? '' : 's'} read from storage, NOT warm: see report)`;
}

/** `epochs 1.75x faster (note)`, or `epochs 2x SLOWER (raw/shards time ratio 0.5x, note)`: a time ratio read the right way round. */
function epochsVsRaw(ratio: number, note: string): string {
  return ratio >= 1 ? `epochs ${formatRatio(ratio)} faster (${note})` : `epochs ${formatRatio(1 / ratio)} SLOWER (raw/shards time ratio ${formatRatio(ratio)}, ${note})`;
}

/** A ratio with its range: the median of the per-run ratios (inside the range); without one, the pooled ratio, labelled. */
function ratioWithSpread(spread: RatioSpread | null | undefined, pooled: number | null | undefined, show: (ratio: number, note: string) => string): string {
  if (spread !== null && spread !== undefined) return show(spread.median, formatSpreadNote(spread));
  return pooled === null || pooled === undefined ? 'n/a' : show(pooled, `medians of all epochs; ${formatSpread(null)}`);
}

/** The short table printed after a bench. */
export function benchSummary(report: BenchReport): string {
  const sides = [report.sides.raw, report.sides.shards, ...(report.sides.lmdb ? [report.sides.lmdb] : [])];
  const rows = [
    ['side', 'epoch s (median [min-max])', 'samples/s', 'payload MB/s', 'syscalls/sample (1st epoch / later)', 'files opened/epoch (1st / later)', 'peak RSS (mapped data)'],
    ...sides.map((s) => {
      return [
        s.side,
        `${fixed(s.medianSeconds, 3)} [${fixed(s.minSeconds, 3)}-${fixed(s.maxSeconds, 3)}]`,
        fixed(s.samplesPerSecond, 0),
        fixed(s.megabytesPerSecond, 1),
        firstAndLater(s.syscallsPerSample, 2),
        firstAndLater(s.opensPerEpoch, 0),
        s.mappedDataBytes ? `${humanBytes(s.peakRssBytes)} (${humanBytes(s.mappedDataBytes)})` : humanBytes(s.peakRssBytes),
      ];
    }),
  ];
  const c = report.comparison;
  const d = report.dataset;
  // a ratio moves between identical runs: its range goes with it, and the figure is the median of the same ratios
  const lines = [
    `${count(d.samples, 'sample')}, ${count(d.rawFiles, 'raw file')} (${humanBytes(d.rawBytes)}, ${humanBytes(d.rawAllocatedBytes)} allocated) vs ${count(d.shards, 'shard')} + index (${humanBytes(d.shardBytes + d.indexBytes)})`,
    `cache: ${report.options.cache.mode}${report.options.cache.mode === 'cold' ? `${report.options.cache.coldVerified ? ' (verified)' : ' (NOT verified: see report)'}, each epoch in a fresh process` : warmSuffix(sides)}, order ${report.options.order}, batch ${report.options.batch}, concurrency ${report.options.concurrency}, decode ${report.options.decode}`,
    table(rows),
    `shards vs raw: ${ratioWithSpread(c.speedupSpread, c.speedup, epochsVsRaw)}, ${fixed(c.syscallsPerSampleRatio, 3)}x the syscalls per sample in a process's first epoch${c.steadyStateSyscallsPerSampleRatio === null ? '' : ` (${fixed(c.steadyStateSyscallsPerSampleRatio, 3)}x in later epochs)`}, break-even after ${d.packSeconds === null ? 'unknown (no usable pack time: see the report\'s notes)' : c.breakEvenEpochs === null ? 'never (shards not faster here)' : `${fixed(c.breakEvenEpochs)} epochs (pack took ${fixed(d.packSeconds)} s)`}`,
  ];
  if (c.lmdbVsShards !== undefined) lines.push(`lmdb epoch / shards epoch: ${ratioWithSpread(c.lmdbVsShardsSpread, c.lmdbVsShards, (r, note) => `${formatRatio(r)} (${note})`)}`);
  lines.push(...throttledSummary(report), ...remoteSummary(report));
  return `${lines.join('\n')}\n`;
}

/** The remote section in one line: bytes from the source per epoch against the dataset, first in process / later. */
function remoteSummary(report: BenchReport): string[] {
  const r = report.remote;
  if (r === undefined) return [];
  const x = (e: { bytes: number }): string => (r.datasetBytes === 0 ? 'n/a' : `${(e.bytes / r.datasetBytes).toFixed(2)}x`);
  const first = r.epochs.filter((e) => e.firstInProcess).map(x);
  const later = r.epochs.filter((e) => !e.firstInProcess).map(x);
  const cache = r.cache === null ? 'no cache' : `a ${humanBytes(r.cache.maxBytes)} ${r.cache.policy} cache, empty in each process`;
  return [`shard side from ${r.source} (${cache}): bytes from the source per epoch, x the dataset: first in process ${first.join(', ') || 'n/a'}${later.length > 0 ? `; later ${later.join(', ')}` : ''}`];
}

/** The throttled section in a few lines, labelled as such (or why it did not run). */
function throttledSummary(report: BenchReport): string[] {
  const t = report.throttled;
  if (t === undefined) return [];
  if (t.status === 'unavailable') return [`throttled epochs (--throttle-iops ${t.readIops}) did not run: ${t.reason}`];
  const sides = [t.sides.raw, t.sides.shards, ...(t.sides.lmdb ? [t.sides.lmdb] : [])];
  return [
    `${t.title}:`,
    ...sides.map((s) => `  ${s.side}: epoch ${fixed(s.medianSeconds, 3)} s [${fixed(s.minSeconds, 3)}-${fixed(s.maxSeconds, 3)}], ${fixed(s.samplesPerSecond, 0)} samples/s, ${s.deviceReads.map((r) => r ?? 'n/a').join('/')} device reads`),
    `  shards vs raw under the throttle: ${t.speedup === null ? 'n/a' : `${fixed(t.speedup)}x`}${t.confirmed ? '' : ' (throttle NOT confirmed: see report)'}`,
  ];
}

export function registerBench(program: Command): void {
  program
    .command('bench')
    .description('time epochs over the raw files vs the dataset, in fresh processes, and write report.md/.json/.html')
    .argument('<raw-dir>', 'the raw files the dataset was packed from')
    .argument('<dataset>', 'the dataset directory')
    .option('--epochs <n>', 'timed epochs per run', '2')
    .option('--order <order>', 'random | sequential', 'random')
    .option('--batch <n>', 'samples per batch', '32')
    .option('--concurrency <n>', 'reads in flight (both sides)', '4')
    .option('--decode <what>', 'none | image (decode image members with sharp on every side)', 'none')
    .option('--cache <mode>', 'warm | cold (drop the page cache before each epoch, where allowed)', 'warm')
    .option('--repeat <n>', 'runs per side, alternated', '3')
    .option('--seed <s>', 'seed of the epoch orders', '0')
    .option('--vs <other>', 'also measure: lmdb')
    .option('--profile <file>', 'JSON file of storage profiles for the projections')
    .option('--throttle-iops <n>', 'also measure, cold cache, with reads of the data\'s disk limited to N IOPS (root, cgroup blkio/io)')
    .option('--throttle-mbps <m>', 'with --throttle-iops: also limit read bandwidth to M MB/s')
    .option('--remote <url>', 'the shard side reads the dataset from this http(s) URL (the same dataset: same index); the raw side still reads <raw-dir>')
    .option(CACHE_DIR_FLAGS, 'the shard side reads through a node-local shard cache here; each shard-side process starts with an empty one (a fresh subdirectory, removed after it)')
    .option(CACHE_SIZE_FLAGS, 'most bytes the shard cache holds (e.g. 512MiB); required with --cache-dir')
    .option('--cache-policy <p>', 'clairvoyant (prefetch, evict by the plan: Belady\'s MIN) | lru (for comparison)', 'clairvoyant')
    .option('--no-strace', 'skip the strace cross-check')
    .option('--out <dir>', 'report directory (default ./shardkit-bench-<time>)')
    .option('--json', 'print report.json on stdout')
    .option('--quiet', 'print only where the report is')
    .action(
      runAction(async (rawDir: string, dataset: string, flags: BenchFlags) => {
        // checked before the epochs run, not when the report is written at the end
        const out = expectLocalPath('--out', flags.out ?? defaultOut(new Date()));
        const options = {
          rawDir,
          dataset,
          epochs: parseCount(flags.epochs, '--epochs', 1),
          order: parseChoice(flags.order, '--order', ['random', 'sequential'] as const),
          batch: parseCount(flags.batch, '--batch', 1),
          concurrency: parseCount(flags.concurrency, '--concurrency', 1),
          decode: parseChoice(flags.decode, '--decode', ['none', 'image'] as const),
          cache: parseChoice(flags.cache, '--cache', ['warm', 'cold'] as const),
          repeat: parseCount(flags.repeat, '--repeat', 1),
          seed: parseCount(flags.seed, '--seed', 0),
          ...(flags.vs === undefined ? {} : { vs: parseChoice(flags.vs, '--vs', ['lmdb'] as const) }),
          ...(flags.profile === undefined ? {} : { profileFile: flags.profile }),
          strace: flags.strace ? ('auto' as const) : false,
          ...throttleOption(flags),
          ...remoteOptions(flags),
          command: ['shardkit', ...process.argv.slice(2)],
        };
        const bar = progressBar(!flags.json && !flags.quiet, 'samples');
        const onProgress = (p: BenchProgress): void => bar.update(p.done, p.total, { rate: `${p.phase}${p.side ? ` ${p.side}` : ''}` });
        let report: BenchReport;
        try {
          report = await runBench({ ...options, onProgress });
        } finally {
          bar.stop();
        }
        const written = await writeReport(out, report);
        if (flags.json) return printJson(report);
        if (!flags.quiet) process.stdout.write(benchSummary(report));
        process.stdout.write(`report: ${written.markdown}, ${written.json}, ${written.html}\n`);
      }),
    );
}
