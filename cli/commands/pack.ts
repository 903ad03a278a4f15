import type { Command } from 'commander';
import { pack } from '../../src/on-demand.js';
import { defaultOutDir } from '../../src/pack/output-dir.js';
import type { PackResult } from '../../src/pack/pack.js';
import { parsePart } from '../../src/pack/partition.js';
import { parseSize, formatSize } from '../../src/pack/size-arg.js';
import { configureSharpForPacking } from '../../src/passes/image-concurrency.js';
import type { Pass } from '../../src/passes/pass.js';
import { collect, parseChoice, parseCount } from '../args.js';
import { count, passStatsNotes, printableName, skippedLines } from '../format.js';
import { progressBar } from '../progress.js';
import { sayWhenJournalStopped } from '../interrupt.js';
import { printSummary, runAction } from '../run-action.js';

interface PackFlags {
  out?: string;
  shard: string;
  layout: string;
  compress: string;
  pass: string[];
  passModule: string[];
  concurrency?: string;
  readThreads?: string;
  onError: string;
  resume?: boolean;
  force?: boolean;
  part?: string;
  followSymlinks?: boolean;
  includeHidden?: boolean;
  groupNumbered?: boolean;
  keyRule: string;
  include: string[];
  exclude: string[];
  pageSize: string;
  sync?: boolean;
  verifySource?: boolean;
  json?: boolean;
  quiet?: boolean;
}

/** Passes from --pass and --pass-module, in the order they appear on the command line. */
export async function passesFromArgv(argv: readonly string[], cwd: string): Promise<Pass[]> {
  const passes: Pass[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const [flag, inline] = arg.includes('=') && arg.startsWith('--') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flag !== '--pass' && flag !== '--pass-module') continue;
    const value = inline ?? (argv[++i] as string);
    // pass code (sharp, libvips) loads only when a pass is asked for
    if (flag === '--pass') passes.push((await import('../../src/passes/parse-pass-spec.js')).parsePassSpec(value, { cwd }));
    else passes.push(...(await (await import('../../src/passes/load-pass-module.js')).loadPassModule(value, cwd)));
  }
  return passes;
}

export function registerPack(program: Command): void {
  program
    .command('pack')
    .description('pack a directory of small files into indexed shards, running preprocessing passes once')
    .argument('<src>', 'source directory')
    .option('--out <dir>', 'output dataset directory (default: <src>.shards)')
    .option('--shard <size>', 'shard size budget: 1GiB, 512MiB, 100MB, 64KB or bytes', '1GiB')
    .option('--layout <layout>', 'tar (WebDataset-compatible) or packed (tiny samples)', 'tar')
    .option('--compress <codec>', 'none or lz4 (per member, random access kept; a file of 4 GiB or more is stored as it is)', 'none')
    .option('--pass <spec>', 'preprocessing pass (a file of 4 GiB or more cannot go through one: TOO_LARGE), repeatable, run in order: resize=WxH[:fit], normalize[=M:S], format=jpeg|webp[:q]|png, tag=dirname|FILE.csv|FILE.json', collect, [])
    .option('--pass-module <file>', 'ES module whose default export is a pass function (repeatable, runs in command-line order)', collect, [])
    .option('--concurrency <n>', 'samples in flight (default: 2 x cores)')
    .option('--read-threads <n>', 'threads reading the source ahead of the writer; more keep more reads in flight on slow disks (default: 2 on two cores or more, else 1 and 2 once reads wait on the disk; 0: none)')
    .option('--on-error <mode>', 'fail (stop at the first bad input) or skip (leave it out, list it)', 'fail')
    .option('--resume', 'finish an interrupted pack of the same source and options')
    .option('--force', 'replace a dataset or an interrupted pack in the output directory')
    .option('--part <i/n>', 'pack part I of N (0-based), to be combined with `shardkit merge`')
    .option('--follow-symlinks', 'follow symbolic links (default: skip and count them)')
    .option('--include-hidden', 'walk into directories starting with "." (.cache/x.jpg -> key .cache/x); a file starting with "." has no WebDataset key and fails the pack, or is skipped and listed with --on-error skip (default: skip and count all hidden names)')
    .option('--key-rule <rule>', 'where a file\'s key ends: webdataset (the first dot of its name: a/b.seg.png -> key a/b, member seg.png) or path (the last dot: dog.0.jpg -> key dog.0, member jpg; tar -xf is unchanged, WebDataset readers regroup by the first dot)', 'webdataset')
    .option('--group-numbered', 'keep files named STEM.N.EXT (clip.0.jpg, clip.1.jpg, ...) together as members of one sample STEM, WebDataset\'s rule; without it more than 3 such files of one stem stop the pack, since Kaggle-style names (dog.0.jpg ... dog.249.jpg) are meant as separate samples')
    .option('--include <glob>', 'only files matching GLOB (repeatable)', collect, [])
    .option('--exclude <glob>', 'leave out files matching GLOB (repeatable)', collect, [])
    .option('--page-size <bytes>', 'index page size (power of two, 1KiB..64KiB)', '4096')
    .option('--sync', 'fsync shards and index before committing the manifest')
    .option('--verify-source', 'read every source file twice and fail with INPUT_CHANGED when the two differ: catches files written during the pack without their size, mtime or ctime changing (through a shared memory map), which the default check cannot see; costs a second read')
    .option('--json', 'print a JSON summary')
    .option('--quiet', 'print nothing on success')
    .action(
      runAction(async (src: string, flags: PackFlags) => {
        const shardBytes = parseSize(flags.shard, '--shard', { min: 2048 });
        const layout = parseChoice(flags.layout, '--layout', ['tar', 'packed'] as const);
        const compress = parseChoice(flags.compress, '--compress', ['none', 'lz4'] as const);
        const onError = parseChoice(flags.onError, '--on-error', ['fail', 'skip'] as const);
        const keyRule = parseChoice(flags.keyRule, '--key-rule', ['webdataset', 'path'] as const);
        const concurrency = flags.concurrency === undefined ? undefined : parseCount(flags.concurrency, '--concurrency', 1);
        const readThreads = flags.readThreads === undefined ? undefined : parseCount(flags.readThreads, '--read-threads', 0);
        const pageSize = parseSize(flags.pageSize, '--page-size');
        const part = flags.part === undefined ? undefined : parsePart(flags.part);
        const passes = await passesFromArgv(process.argv, process.cwd());
        if (passes.length > 0) await configureSharpForPacking();
        const interactive = !flags.json && !flags.quiet && process.stderr.isTTY === true;
        const bar = progressBar(interactive, 'samples');
        const out = flags.out ?? defaultOutDir(src);
        sayWhenJournalStopped('pack', out, () => bar.stop());
        let result: PackResult;
        try {
          result = await pack({
            source: src,
            out,
            shardBytes,
            layout,
            compress,
            pageSize,
            passes,
            onError,
            resume: flags.resume === true,
            force: flags.force === true,
            followSymlinks: flags.followSymlinks === true,
            includeHidden: flags.includeHidden === true,
            groupNumbered: flags.groupNumbered === true,
            keyRule,
            include: flags.include,
            exclude: flags.exclude,
            sync: flags.sync === true,
            verifySource: flags.verifySource === true,
            prescan: interactive,
            ...(concurrency === undefined ? {} : { concurrency }),
            ...(readThreads === undefined ? {} : { readThreads }),
            ...(part === undefined ? {} : { part }),
            onProgress: (p) => {
              const secs = Math.max(p.elapsedMs / 1000, 1e-3);
              bar.update(p.samples, p.totalSamples, { rate: `${Math.round(p.samples / secs)} files/s, ${formatSize(p.bytes / secs)}/s` });
            },
          });
        } finally {
          bar.stop();
        }
        const summary = packSummary(result);
        printSummary(flags, summary, () => [summaryLine(summary), ...skippedLines(summary.skipped)]);
      }),
    );
}

function packSummary(r: PackResult) {
  const m = r.manifest;
  return {
    out: r.out,
    samples: m.totals.samples,
    members: m.totals.members,
    shards: m.shards.length,
    bytes: m.totals.bytes,
    shardBytes: m.totals.shardBytes,
    indexBytes: m.index.bytes,
    seconds: r.seconds,
    samplesPerSecond: r.seconds > 0 ? (m.totals.samples + m.skipped.length) / r.seconds : 0,
    sourceBytes: r.sourceBytes,
    /** Source bytes read per second by this run. */
    bytesPerSecond: r.seconds > 0 ? r.sourceBytes / r.seconds : 0,
    resumedSamples: r.resumedSamples,
    oversizeSamples: r.writer.oversizeSamples,
    skipped: m.skipped,
    readThreads: r.readThreads,
    native: r.native,
    walk: r.walk,
    datasetDirs: r.datasetDirs,
    passes: m.passes.map((p) => p.name),
    passStats: r.passStats,
  };
}

function summaryLine(s: ReturnType<typeof packSummary>): string {
  const parts = [
    `packed ${s.samples} sample${s.samples === 1 ? '' : 's'} (${s.passes.length === 0 ? formatSize(s.bytes) : `${formatSize(s.sourceBytes)} read, ${formatSize(s.bytes)} after passes`}) into ${s.shards} shard${s.shards === 1 ? '' : 's'} + index (${formatSize(s.indexBytes)}) in ${s.out}`,
    `${s.seconds.toFixed(1)} s, ${Math.round(s.samplesPerSecond)} files/s, ${formatSize(s.bytesPerSecond)}/s`,
  ];
  if (s.resumedSamples > 0) parts.push(`${s.resumedSamples} resumed`);
  if (s.skipped.length > 0) parts.push(`${s.skipped.length} skipped (listed below and in the manifest)`);
  parts.push(...passStatsNotes(s.passStats));
  if (s.oversizeSamples > 0) parts.push(`${s.oversizeSamples} sample${s.oversizeSamples === 1 ? '' : 's'} larger than --shard, each in its own shard`);
  const w = s.walk;
  const left = [
    w.skippedSymlinks && count(w.skippedSymlinks, 'symlink'),
    w.skippedCycles && count(w.skippedCycles, 'symlink loop'),
    w.skippedHidden && `${w.skippedHidden} hidden`,
    w.skippedExcluded && `${w.skippedExcluded} excluded`,
    w.skippedOther && count(w.skippedOther, 'special file'),
  ].filter(Boolean);
  if (left.length > 0) parts.push(`not packed: ${left.join(', ')}`);
  if (s.datasetDirs.length > 0) {
    const shown = s.datasetDirs.slice(0, 3).map(printableName).join(', ');
    parts.push(`left out ${count(s.datasetDirs.length, 'dataset directory', 'dataset directories')} (shardkit output inside the source): ${shown}${s.datasetDirs.length > 3 ? ', ...' : ''}`);
  }
  if (!s.native) parts.push('without the native addon (slower: `npm run build:native` builds it)');
  return parts.join('; ');
}
