import type { Command } from 'commander';
import { derive } from '../../src/on-demand.js';
import { parseSize } from '../../src/pack/size-arg.js';
import { parseSelection } from '../../src/pack/select.js';
import { configureSharpForPacking } from '../../src/passes/image-concurrency.js';
import { HEADER_FLAGS, HEADER_HELP, TIMEOUT_FLAGS, TIMEOUT_HELP, MAX_MEMBER_FLAGS, MAX_MEMBER_HELP, maxMemberOption, collect, httpOption, parseChoice, parseCount , CACHE_DIR_FLAGS, CACHE_DIR_HELP, CACHE_SIZE_FLAGS, CACHE_SIZE_HELP, cacheOption } from '../args.js';
import { passStatsNotes, skippedLines } from '../format.js';
import { sayWhenJournalStopped } from '../interrupt.js';
import { progressBar } from '../progress.js';
import { printSummary, runAction } from '../run-action.js';
import { passesFromArgv } from './pack.js';

export function registerDerive(program: Command): void {
  program
    .command('derive')
    .description('run preprocessing passes over an existing dataset, or keep a seeded selection of its samples (exemplars), into a new one (shards to shards)')
    .argument('<dataset>', 'source dataset directory or URL')
    .requiredOption('--out <dir>', 'output dataset directory')
    .option('--pass <spec>', 'preprocessing pass, repeatable (see `shardkit pack --help`)', collect, [])
    .option('--pass-module <file>', 'ES module with a pass function (repeatable)', collect, [])
    .option('--select <spec>', 'keep only some samples, in key order: random:N (uniform), per-class:N (N of each cls class), fraction:F (0 < F <= 1)')
    .option('--seed <seed>', 'seed of --select (integer or string; same seed, same samples)', '0')
    .option('--shard <size>', 'shard size budget', '1GiB')
    .option('--layout <layout>', 'tar or packed (default: the source layout)')
    .option('--compress <codec>', 'none or lz4 (default: the source compression)')
    .option('--concurrency <n>', 'samples in flight')
    .option('--on-error <mode>', 'fail or skip', 'fail')
    .option('--resume', 'finish an interrupted derive')
    .option('--force', 'replace the output')
    .option('--json', 'print a JSON summary')
    .option('--quiet', 'print nothing on success')
    .option(HEADER_FLAGS, HEADER_HELP, collect)
    .option(CACHE_DIR_FLAGS, CACHE_DIR_HELP)
    .option(CACHE_SIZE_FLAGS, CACHE_SIZE_HELP)
    .option(TIMEOUT_FLAGS, TIMEOUT_HELP)
    .option(MAX_MEMBER_FLAGS, MAX_MEMBER_HELP)
    .action(
      runAction(async (dataset: string, flags: { out: string; select?: string; seed: string; shard: string; layout?: string; compress?: string; concurrency?: string; onError: string; resume?: boolean; force?: boolean; json?: boolean; quiet?: boolean; header?: string[]; timeout?: string; cacheDir?: string; cacheSize?: string; maxMemberBytes?: string }) => {
        const passes = await passesFromArgv(process.argv, process.cwd());
        const layout = flags.layout === undefined ? undefined : parseChoice(flags.layout, '--layout', ['tar', 'packed'] as const);
        const compress = flags.compress === undefined ? undefined : parseChoice(flags.compress, '--compress', ['none', 'lz4'] as const);
        const concurrency = flags.concurrency === undefined ? undefined : parseCount(flags.concurrency, '--concurrency', 1);
        if (passes.length > 0) await configureSharpForPacking();
        const bar = progressBar(!flags.json && !flags.quiet, 'samples');
        sayWhenJournalStopped('derive', flags.out, () => bar.stop());
        let r;
        try {
          r = await derive({
            dataset,
            ...httpOption(flags.header, flags.timeout),
            ...cacheOption(flags.cacheDir, flags.cacheSize),
            ...maxMemberOption(flags.maxMemberBytes),
            out: flags.out,
            passes,
            ...(flags.select === undefined ? {} : { select: parseSelection(flags.select), seed: /^-?\d+$/.test(flags.seed) && Number.isSafeInteger(Number(flags.seed)) ? Number(flags.seed) : flags.seed }),
            shardBytes: parseSize(flags.shard, '--shard', { min: 2048 }),
            onError: parseChoice(flags.onError, '--on-error', ['fail', 'skip'] as const),
            resume: flags.resume === true,
            force: flags.force === true,
            ...(layout === undefined ? {} : { layout }),
            ...(compress === undefined ? {} : { compress }),
            ...(concurrency === undefined ? {} : { concurrency }),
            onProgress: (c) => bar.update(c.samples, c.total, { rate: '' }),
          });
        } finally {
          bar.stop();
        }
        const m = r.manifest;
        // as pack's: skipped inputs listed (path, reason), and the passes' counters
        const summary = { out: flags.out, samples: m.totals.samples, shards: m.shards.length, resumedSamples: r.resumedSamples, skipped: m.skipped, passes: m.passes.map((p) => p.name), passStats: r.passStats };
        printSummary(flags, summary, () => {
          const selected = flags.select === undefined ? '' : `selected (${flags.select}, seed ${flags.seed}) and `;
          const parts = [`${selected}derived ${summary.samples} sample${summary.samples === 1 ? '' : 's'} into ${summary.shards} shard${summary.shards === 1 ? '' : 's'} at ${summary.out} (passes: ${summary.passes.join(', ') || 'none'})`];
          if (r.resumedSamples > 0) parts.push(`${r.resumedSamples} resumed`);
          if (m.skipped.length > 0) parts.push(`${m.skipped.length} skipped (listed below and in the manifest)`);
          parts.push(...passStatsNotes(r.passStats));
          return [parts.join('; '), ...skippedLines(m.skipped)];
        });
      }),
    );
}
