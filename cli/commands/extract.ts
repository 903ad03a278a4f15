import type { Command } from 'commander';
import { extractDataset } from '../../src/on-demand.js';
import { HEADER_FLAGS, HEADER_HELP, TIMEOUT_FLAGS, TIMEOUT_HELP, MAX_MEMBER_FLAGS, MAX_MEMBER_HELP, collect, httpOption, maxMemberOption , CACHE_DIR_FLAGS, CACHE_DIR_HELP, CACHE_SIZE_FLAGS, CACHE_SIZE_HELP, cacheOption } from '../args.js';
import { count, humanBytes } from '../format.js';
import { stopBetweenFiles } from '../interrupt.js';
import { printJson, runAction } from '../run-action.js';

export function registerExtract(program: Command): void {
  program
    .command('extract')
    .description('write members back as files at their original relative paths (verified, decompressed)')
    .argument('<dataset>', 'dataset directory or http(s) URL')
    .argument('<dir>', 'target directory (created when missing); nothing lands outside it, no link in it is followed')
    .option('--prefix <p>', 'only samples whose key starts with P')
    .option('--json', 'print the summary as JSON')
    .option(MAX_MEMBER_FLAGS, MAX_MEMBER_HELP)
    .option(HEADER_FLAGS, HEADER_HELP, collect)
    .option(CACHE_DIR_FLAGS, CACHE_DIR_HELP)
    .option(CACHE_SIZE_FLAGS, CACHE_SIZE_HELP)
    .option(TIMEOUT_FLAGS, TIMEOUT_HELP)
    .action(
      runAction(async (location: string, dir: string, opts: { prefix?: string; json?: boolean; maxMemberBytes?: string; header?: string[]; timeout?: string; cacheDir?: string; cacheSize?: string }) => {
        stopBetweenFiles();
        const open = { ...httpOption(opts.header, opts.timeout), ...maxMemberOption(opts.maxMemberBytes), ...cacheOption(opts.cacheDir, opts.cacheSize) };
        const r = await extractDataset(location, dir, { ...(opts.prefix === undefined ? {} : { prefix: opts.prefix }), open });
        if (opts.json) return printJson(r);
        process.stdout.write(`${dir}: ${count(r.samples, 'sample')}, ${count(r.files, 'file')}, ${humanBytes(r.bytes)}\n`);
      }),
    );
}
