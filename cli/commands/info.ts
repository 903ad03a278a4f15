import type { Command } from 'commander';
import { openDataset } from '../../src/on-demand.js';
import { datasetInfo } from '../../src/read/inspect.js';
import { formatSize } from '../../src/pack/size-arg.js';
import { count, indexPages, percent, table } from '../format.js';
import { HEADER_FLAGS, HEADER_HELP, TIMEOUT_FLAGS, TIMEOUT_HELP, collect, httpOption , CACHE_DIR_FLAGS, CACHE_DIR_HELP, CACHE_SIZE_FLAGS, CACHE_SIZE_HELP, cacheOption } from '../args.js';
import { printJson, runAction } from '../run-action.js';

export function registerInfo(program: Command): void {
  program
    .command('info')
    .description('summarize a dataset: layout, samples, shards, sizes, index, passes')
    .argument('<dataset>', 'dataset directory or http(s) URL')
    .option('--json', 'print JSON')
    .option(HEADER_FLAGS, HEADER_HELP, collect)
    .option(CACHE_DIR_FLAGS, CACHE_DIR_HELP)
    .option(CACHE_SIZE_FLAGS, CACHE_SIZE_HELP)
    .option(TIMEOUT_FLAGS, TIMEOUT_HELP)
    .action(
      runAction(async (location: string, opts: { json?: boolean; header?: string[]; timeout?: string; cacheDir?: string; cacheSize?: string }) => {
        const ds = await openDataset(location, { ...httpOption(opts.header, opts.timeout), ...cacheOption(opts.cacheDir, opts.cacheSize) });
        try {
          const info = datasetInfo(ds);
          if (opts.json) return printJson(info);
          const rows = [
            ['dataset', info.location],
            ['layout', `${info.layout}${info.compress === 'none' ? '' : ` + ${info.compress}`}`],
            ['samples', `${info.samples} (${count(info.members, 'member')})`],
            ['shards', `${info.shards} (${formatSize(info.bytes.shards)})`],
            ['members', `${formatSize(info.bytes.members)} original, ${formatSize(info.bytes.stored)} stored`],
            ['index', `${formatSize(info.bytes.index)}, ${indexPages(info.index.pages - 1)} of ${info.index.pageSize} B, height ${info.index.height}, ${info.index.bytesPerSample.toFixed(1)} B/sample`],
            ['overhead', info.overhead === null ? 'n/a (no member bytes)' : `${percent(info.overhead)} (shards + index vs member bytes)`],
            ['passes', info.passes.length === 0 ? 'none' : info.passes.map((p) => `${p.name}${Object.keys(p.params).length ? ` ${JSON.stringify(p.params)}` : ''}`).join(', ')],
            ['skipped', String(info.skipped)],
            ...(info.appends.length === 0 ? [] : [['appends', `${info.appends.length} (${info.appends.join(' + ')} samples)`]]),
            ['written by', info.tool],
          ];
          process.stdout.write(`${table(rows)}\n`);
        } finally {
          await ds.close();
        }
      }),
    );
}
