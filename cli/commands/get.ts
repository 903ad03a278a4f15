import type { Command } from 'commander';
import { openDataset } from '../../src/on-demand.js';
import { memberBytes, saveFile } from '../../src/read/inspect.js';
import { HEADER_FLAGS, HEADER_HELP, MAX_MEMBER_FLAGS, MAX_MEMBER_HELP, collect, httpOption, maxMemberOption, CACHE_DIR_FLAGS, CACHE_DIR_HELP, CACHE_SIZE_FLAGS, CACHE_SIZE_HELP, cacheOption } from '../args.js';
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
    .action(
      runAction(async (location: string, key: string, opts: { ext?: string; out?: string; header?: string[]; maxMemberBytes?: string; cacheDir?: string; cacheSize?: string }) => {
        const ds = await openDataset(location, { ...httpOption(opts.header), ...maxMemberOption(opts.maxMemberBytes), ...cacheOption(opts.cacheDir, opts.cacheSize) });
        try {
          const { bytes } = await memberBytes(ds, key, opts.ext);
          if (opts.out !== undefined) {
            stopBetweenFiles();
            saveFile(opts.out, bytes);
          } else {
            // in pieces: stdout to a file writes each piece with one fs.write
            for (let off = 0; off < bytes.length; off += MAX_IO_CALL_BYTES) {
              const piece = bytes.subarray(off, off + MAX_IO_CALL_BYTES);
              await new Promise<void>((resolve, reject) => process.stdout.write(piece, (err) => (err ? reject(err) : resolve())));
            }
          }
        } finally {
          await ds.close();
        }
      }),
    );
}
