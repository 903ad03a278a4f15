import type { Command } from 'commander';
import { count } from '../format.js';
import { adoptTars } from '../../src/on-demand.js';
import { parseCount } from '../args.js';
import { printJson, runAction } from '../run-action.js';

export function registerIndex(program: Command): void {
  program
    .command('index')
    .description('index existing WebDataset-style tar shards made by other tools, without rewriting them')
    .argument('<tar...>', 'tar files, in shard order')
    .requiredOption('--out <dir>', 'dataset directory: gets the index, the manifest and a link to each tar')
    .option('--symlink', 'always reference tars by symbolic link (default: hard link when on the same filesystem)')
    .option('--page-size <bytes>', 'index page size, a power of two from 1024 to 65536', '4096')
    .option('--force', 'replace the index and manifest of a dataset index made in --out (no tar is deleted)')
    .option('--json', 'print the summary as JSON')
    .action(
      runAction(async (tars: string[], opts: { out: string; symlink?: boolean; pageSize: string; force?: boolean; json?: boolean }) => {
        const r = await adoptTars(tars, { out: opts.out, pageSize: parseCount(opts.pageSize, '--page-size', 1), force: opts.force === true, link: opts.symlink ? 'symlink' : 'auto' });
        const m = r.manifest;
        if (opts.json) return printJson({ out: opts.out, samples: m.totals.samples, members: m.totals.members, shards: r.shards, skipped: m.skipped });
        const lines = r.shards.map((s) => `${s.input} -> ${s.file} (${s.how})`);
        for (const s of m.skipped.slice(0, 20)) lines.push(`skipped ${s.path}: ${s.reason}`);
        if (m.skipped.length > 20) lines.push(`... and ${m.skipped.length - 20} more skipped (see manifest.json)`);
        lines.push(`${opts.out}: ${count(m.totals.samples, 'sample')}, ${count(m.totals.members, 'member')} in ${count(m.shards.length, 'shard')}, ${count(m.skipped.length, 'entry', 'entries')} skipped`);
        process.stdout.write(`${lines.join('\n')}\n`);
      }),
    );
}
