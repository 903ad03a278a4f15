import type { Command } from 'commander';
import { append } from '../../src/on-demand.js';
import type { AppendResult } from '../../src/pack/append.js';
import { parseSize, formatSize } from '../../src/pack/size-arg.js';
import { configureSharpForPacking } from '../../src/passes/image-concurrency.js';
import { collect, parseChoice, parseCount } from '../args.js';
import { skippedLines } from '../format.js';
import { stagePaths } from '../../src/pack/append-stage.js';
import { sayWhenJournalStopped } from '../interrupt.js';
import { progressBar } from '../progress.js';
import { printSummary, runAction } from '../run-action.js';
import { passesFromArgv } from './pack.js';

interface AppendFlags {
  shard: string;
  layout?: string;
  compress?: string;
  concurrency?: string;
  readThreads?: string;
  onError: string;
  resume?: boolean;
  force?: boolean;
  followSymlinks?: boolean;
  includeHidden?: boolean;
  groupNumbered?: boolean;
  include: string[];
  exclude: string[];
  sync?: boolean;
  json?: boolean;
  quiet?: boolean;
}

export function registerAppend(program: Command): void {
  program
    .command('append')
    .description("add a directory's files to a dataset: new shards, a new index over all samples, committed at once; readers of the old version are undisturbed")
    .argument('<dataset>', 'dataset directory to grow')
    .argument('<src>', 'directory of new files (walked as pack walks its source)')
    .option('--shard <size>', 'shard size budget of the new shards: 1GiB, 512MiB, 100MB, 64KB or bytes', '1GiB')
    .option('--layout <layout>', "must be the dataset's (new shards take its layout)")
    .option('--compress <codec>', "must be the dataset's (new shards take its compression)")
    .option('--pass <spec>', "the dataset's passes run on the new files, made from its manifest; give them (all, in order) only for a tag=FILE pass", collect, [])
    .option('--pass-module <file>', "the dataset's custom passes, given again (see --pass)", collect, [])
    .option('--concurrency <n>', 'samples in flight (default: 2 x cores)')
    .option('--read-threads <n>', 'threads reading the source ahead of the writer (see pack --help)')
    .option('--on-error <mode>', 'fail (stop at the first bad input or a key the dataset has) or skip (leave it out, list it)', 'fail')
    .option('--resume', 'finish an interrupted append of the same source and options')
    .option('--force', 'discard an interrupted append and start this one')
    .option('--follow-symlinks', 'follow symbolic links (default: skip and count them)')
    .option('--include-hidden', 'walk into directories starting with "." (see pack --help)')
    .option('--group-numbered', 'keep files named STEM.N.EXT together as one sample STEM (see pack --help); the key rule is the dataset\'s own')
    .option('--include <glob>', 'only files matching GLOB (repeatable)', collect, [])
    .option('--exclude <glob>', 'leave out files matching GLOB (repeatable)', collect, [])
    .option('--sync', 'fsync the new shards and index before committing the manifest')
    .option('--json', 'print a JSON summary')
    .option('--quiet', 'print nothing on success')
    .action(
      runAction(async (dataset: string, src: string, flags: AppendFlags) => {
        const shardBytes = parseSize(flags.shard, '--shard', { min: 2048 });
        const layout = flags.layout === undefined ? undefined : parseChoice(flags.layout, '--layout', ['tar', 'packed'] as const);
        const compress = flags.compress === undefined ? undefined : parseChoice(flags.compress, '--compress', ['none', 'lz4'] as const);
        const onError = parseChoice(flags.onError, '--on-error', ['fail', 'skip'] as const);
        const concurrency = flags.concurrency === undefined ? undefined : parseCount(flags.concurrency, '--concurrency', 1);
        const readThreads = flags.readThreads === undefined ? undefined : parseCount(flags.readThreads, '--read-threads', 0);
        const given = await passesFromArgv(process.argv, process.cwd());
        if (given.length > 0) await configureSharpForPacking();
        const interactive = !flags.json && !flags.quiet && process.stderr.isTTY === true;
        const bar = progressBar(interactive, 'samples');
        sayWhenJournalStopped('append', stagePaths(dataset).added, () => bar.stop());
        let result: AppendResult;
        try {
          result = await append({
            dataset,
            source: src,
            shardBytes,
            onError,
            resume: flags.resume === true,
            force: flags.force === true,
            followSymlinks: flags.followSymlinks === true,
            includeHidden: flags.includeHidden === true,
            groupNumbered: flags.groupNumbered === true,
            include: flags.include,
            exclude: flags.exclude,
            sync: flags.sync === true,
            prescan: interactive,
            ...(given.length === 0 ? {} : { passes: given }),
            ...(layout === undefined ? {} : { layout }),
            ...(compress === undefined ? {} : { compress }),
            ...(concurrency === undefined ? {} : { concurrency }),
            ...(readThreads === undefined ? {} : { readThreads }),
            onProgress: (p) => bar.update(p.samples, p.totalSamples, { rate: `${Math.round(p.samples / Math.max(p.elapsedMs / 1000, 1e-3))} files/s` }),
          });
        } finally {
          bar.stop();
        }
        const summary = appendSummary(result);
        printSummary(flags, summary, () => [summaryLine(summary), ...skippedLines(summary.skipped)]);
      }),
    );
}

function appendSummary(r: AppendResult) {
  return {
    dataset: r.dataset,
    appended: r.samples,
    samples: r.manifest.totals.samples,
    shards: r.shards,
    index: r.manifest.index.file,
    indexBytes: r.manifest.index.bytes,
    appends: r.manifest.appends?.length ?? 0,
    duplicates: r.duplicates,
    skipped: r.skipped,
    resumedSamples: r.resumedSamples,
    oldEntriesRead: r.oldEntriesRead,
    seconds: r.seconds,
  };
}

function summaryLine(s: ReturnType<typeof appendSummary>): string {
  const shards = s.shards[1] - s.shards[0];
  const parts = [
    `appended ${s.appended} sample${s.appended === 1 ? '' : 's'} in ${shards} new shard${shards === 1 ? '' : 's'} to ${s.dataset}, now ${s.samples} samples (index ${s.index}, ${formatSize(s.indexBytes)})`,
    `${s.seconds.toFixed(1)} s`,
  ];
  if (s.resumedSamples > 0) parts.push(`${s.resumedSamples} resumed`);
  if (s.duplicates.length > 0) parts.push(`${s.duplicates.length} already in the dataset`);
  if (s.skipped.length > 0) parts.push(`${s.skipped.length} skipped (listed below and in the manifest)`);
  return parts.join('; ');
}
