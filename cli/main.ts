#!/usr/bin/env node
/** shardkit's command line: parses arguments, calls the library, prints, sets the exit code. */
import { Command, CommanderError } from 'commander';
import { VERSION } from '../src/version.js';
import { registerGet } from './commands/get.js';
import { registerInfo } from './commands/info.js';
import { registerLs } from './commands/ls.js';
import { registerPack } from './commands/pack.js';
import { registerMerge } from './commands/merge.js';
import { registerDerive } from './commands/derive.js';
import { registerSynth } from './commands/synth.js';
import { EXIT_USAGE, setDebug } from './run-action.js';

const program = new Command();
program
  .name('shardkit')
  .description('Pack Lots Of Small Files into indexed shards; read any sample with one positional read.')
  .version(VERSION, '-V, --version')
  .option('--debug', 'print stack traces for errors')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride()
  .configureOutput({ outputError: (str, write) => write(str.startsWith('error:') ? `shardkit: SHARDKIT_ERR_INVALID_ARG: ${str.slice(7)}` : str) })
  .hook('preAction', (cmd) => setDebug(Boolean(cmd.optsWithGlobals().debug)));

registerPack(program);
registerMerge(program);
registerDerive(program);
registerInfo(program);
registerSynth(program);
registerLs(program);
registerGet(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // help and version exit 0; every parse error is bad usage
    process.exitCode = err.exitCode === 0 ? 0 : EXIT_USAGE;
  } else {
    throw err;
  }
}
