#!/usr/bin/env node
/** shardkit's command line: parses arguments, calls the library, prints, sets the exit code. */
import './prestart.js';
import { Command, CommanderError } from 'commander';
import { VERSION } from '../src/version.js';
import { ErrorCodes, ShardkitError } from '../formats/errors.js';
import { EXIT_USAGE, exitNow, reportError, setDebug } from './run-action.js';

// `shardkit ls ds | head`: a closed pipe ends the output quietly, as for any Unix tool; any other failure to write
// the output (a full disk, an I/O error) is one line on stderr and exit 1, as for any other error
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') exitNow(typeof process.exitCode === 'number' ? process.exitCode : 0);
  exitNow(reportError(new ShardkitError(ErrorCodes.IO, `cannot write to stdout: ${err.message}`, { cause: err })));
});

const program = new Command();
program
  .name('shardkit')
  .description('Pack Lots Of Small Files into indexed shards; read any sample with one positional read.')
  .version(VERSION, '-V, --version')
  .option('--debug', 'print stack traces for errors')
  .exitOverride()
  .configureOutput({ outputError: (str, write) => write(str.startsWith('error:') ? `shardkit: SHARDKIT_ERR_INVALID_ARG: ${str.slice(7)}` : str) })
  .hook('preAction', (cmd) => setDebug(Boolean(cmd.optsWithGlobals().debug)));

/**
 * Commands load on demand: `shardkit get` should not pay for sharp, vega and the pack pipeline. Only the command
 * named on the command line is imported (none for --version; all of them for --help or an unknown name, so
 * commander can list them).
 */
const COMMANDS: Record<string, () => Promise<(p: Command) => void>> = {
  pack: async () => (await import('./commands/pack.js')).registerPack,
  append: async () => (await import('./commands/append.js')).registerAppend,
  merge: async () => (await import('./commands/merge.js')).registerMerge,
  derive: async () => (await import('./commands/derive.js')).registerDerive,
  info: async () => (await import('./commands/info.js')).registerInfo,
  ls: async () => (await import('./commands/ls.js')).registerLs,
  get: async () => (await import('./commands/get.js')).registerGet,
  verify: async () => (await import('./commands/verify.js')).registerVerify,
  extract: async () => (await import('./commands/extract.js')).registerExtract,
  reindex: async () => (await import('./commands/reindex.js')).registerReindex,
  index: async () => (await import('./commands/index.js')).registerIndex,
  synth: async () => (await import('./commands/synth.js')).registerSynth,
  bench: async () => (await import('./commands/bench.js')).registerBench,
};

const args = process.argv.slice(2);
const named = args.find((a) => !a.startsWith('-'));
// --version alone needs no command at all
const versionOnly = named === undefined && args.some((a) => a === '-V' || a === '--version');
const wanted = named !== undefined && Object.hasOwn(COMMANDS, named) ? [named] : versionOnly ? [] : Object.keys(COMMANDS);
for (const name of wanted) (await (COMMANDS[name] as () => Promise<(p: Command) => void>)())(program);

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
