import type { Command } from 'commander';
import { openDataset } from '../../src/on-demand.js';
import { describeEntry } from '../../src/read/inspect.js';
import { printableName } from '../format.js';
import { runAction } from '../run-action.js';
import { HEADER_FLAGS, HEADER_HELP, TIMEOUT_FLAGS, TIMEOUT_HELP, collect, httpOption, parseCount , CACHE_DIR_FLAGS, CACHE_DIR_HELP, CACHE_SIZE_FLAGS, CACHE_SIZE_HELP, cacheOption } from '../args.js';

export function registerLs(program: Command): void {
  program
    .command('ls')
    .description('list sample keys in key order (a key with a control character, or starting with ", printed as a JSON string)')
    .argument('<dataset>', 'dataset directory or http(s) URL')
    .option('--long', 'also show shard, offset, span length and members (ext:size)')
    .option('--prefix <p>', 'only keys starting with P')
    .option('--limit <n>', 'at most N keys')
    .option('--json', 'print JSON lines, one sample per line')
    .option(HEADER_FLAGS, HEADER_HELP, collect)
    .option(CACHE_DIR_FLAGS, CACHE_DIR_HELP)
    .option(CACHE_SIZE_FLAGS, CACHE_SIZE_HELP)
    .option(TIMEOUT_FLAGS, TIMEOUT_HELP)
    .action(
      runAction(async (location: string, opts: { long?: boolean; prefix?: string; limit?: string; json?: boolean; header?: string[]; timeout?: string; cacheDir?: string; cacheSize?: string }) => {
        const limit = opts.limit === undefined ? undefined : parseCount(opts.limit, '--limit');
        const ds = await openDataset(location, { ...httpOption(opts.header, opts.timeout), ...cacheOption(opts.cacheDir, opts.cacheSize) });
        try {
          const out: string[] = [];
          const flush = (): void => {
            if (out.length > 0) process.stdout.write(`${out.join('\n')}\n`);
            out.length = 0;
          };
          for await (const e of ds.entries({ ...(opts.prefix === undefined ? {} : { prefix: opts.prefix }), ...(limit === undefined ? {} : { limit }) })) {
            if (opts.json) out.push(JSON.stringify(describeEntry(ds, e)));
            else if (opts.long) {
              const d = describeEntry(ds, e);
              out.push([printableName(d.key), d.shard, d.offset, d.length, d.members.map((m) => `${printableName(m.ext)}:${m.size}${m.codec === 'none' ? '' : `(${m.codec} ${m.storedSize})`}`).join(',')].join('\t'));
            } else out.push(printableName(e.key));
            if (out.length >= 4096) flush();
          }
          flush();
        } finally {
          await ds.close();
        }
      }),
    );
}
