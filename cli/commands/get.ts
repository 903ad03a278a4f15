import type { Command } from 'commander';
import { openDataset } from '../../src/on-demand.js';
import { writeMember } from '../../src/read/inspect.js';
import { HEADER_FLAGS, HEADER_HELP, TIMEOUT_FLAGS, TIMEOUT_HELP, MAX_MEMBER_FLAGS, MAX_MEMBER_HELP, collect, httpOption, maxMemberOption , CACHE_DIR_FLAGS, CACHE_DIR_HELP, CACHE_SIZE_FLAGS, CACHE_SIZE_HELP, cacheOption } from '../args.js';
import { stopBetweenFiles } from '../interrupt.js';
import { runAction } from '../run-action.js';
import { MAX_IO_CALL_BYTES } from '../../src/io/io-options.js';

export function registerGet(program: Command): void {
  program
    .command('get')
    .description("write one member of a sample to stdout or a file (checksum verified)")
    .argument('<dataset>', 'dataset directory or http(s) URL')
    .argument('<key>', 'sample key')
    .option('--ext <ext>', 'member extension (required when the sample has several members)')
    .option('--out <file>', 'write to FILE instead of stdout')
    .option(MAX_MEMBER_FLAGS, MAX_MEMBER_HELP)
    .option(HEADER_FLAGS, HEADER_HELP, collect)
    .option(CACHE_DIR_FLAGS, CACHE_DIR_HELP)
    .option(CACHE_SIZE_FLAGS, CACHE_SIZE_HELP)
    .option(TIMEOUT_FLAGS, TIMEOUT_HELP)
    .action(
      runAction(async (location: string, key: string, opts: { ext?: string; out?: string; header?: string[]; timeout?: string; maxMemberBytes?: string; cacheDir?: string; cacheSize?: string }) => {
        const ds = await openDataset(location, { ...httpOption(opts.header, opts.timeout), ...maxMemberOption(opts.maxMemberBytes), ...cacheOption(opts.cacheDir, opts.cacheSize) });
        try {
          if (opts.out !== undefined) {
            stopBetweenFiles();
            await writeMember(ds, key, opts.ext, { file: opts.out });
          } else {
            // in pieces: stdout to a file writes each piece with one fs.write
            const write = async (bytes: Uint8Array): Promise<void> => {
              for (let off = 0; off < bytes.length; off += MAX_IO_CALL_BYTES) {
                const piece = bytes.subarray(off, off + MAX_IO_CALL_BYTES);
                await new Promise<void>((resolve, reject) => process.stdout.write(piece, (err) => (err ? reject(err) : resolve())));
              }
            };
            await writeMember(ds, key, opts.ext, { write });
          }
        } finally {
          await ds.close();
        }
      }),
    );
}
