import type { Command } from 'commander';
import { count } from '../format.js';
import { mergeParts } from '../../src/on-demand.js';
import { printSummary, runAction } from '../run-action.js';

export function registerMerge(program: Command): void {
  program
    .command('merge')
    .description('combine datasets packed with --part I/N into one dataset with one index (shards are hard linked, not copied)')
    .argument('<part-dir...>', 'part dataset directories')
    .requiredOption('--out <dir>', 'output dataset directory')
    .option('--force', 'replace a dataset in the output directory')
    .option('--sync', 'fsync the index before committing the manifest')
    .option('--json', 'print a JSON summary')
    .option('--quiet', 'print nothing on success')
    .action(
      runAction(async (parts: string[], flags: { out: string; force?: boolean; sync?: boolean; json?: boolean; quiet?: boolean }) => {
        const r = await mergeParts(parts, flags.out, { force: flags.force === true, sync: flags.sync === true });
        const summary = { out: flags.out, parts: parts.length, samples: r.manifest.totals.samples, shards: r.manifest.shards.length, linked: r.linked, copied: r.copied };
        printSummary(flags, summary, () => [
          `merged ${count(summary.parts, 'part')}: ${count(summary.samples, 'sample')} in ${count(summary.shards, 'shard')} at ${summary.out} (${count(summary.linked, 'shard')} hard linked, ${summary.copied} copied)`,
        ]);
      }),
    );
}
