import { ShardkitError, USAGE_ERROR_CODES } from '../formats/errors.js';

/** Exit codes of the contract: 0 success, 1 the operation found a problem, 2 bad usage. */
export const EXIT_OK = 0;
export const EXIT_PROBLEM = 1;
export const EXIT_USAGE = 2;

let debug = false;
export function setDebug(on: boolean): void {
  debug = on;
}

/**
 * Wraps a command's action: a ShardkitError becomes one line `shardkit: CODE: message` on stderr and exit 1 or 2;
 * anything else is a bug and keeps its stack trace. `--debug` prints the stack for every error.
 */
export function runAction<A extends unknown[]>(action: (...args: A) => Promise<number | void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    // Node ends a process whose event loop is empty even while a promise is pending (a pass module's that never
    // settles): without this the command would end with exit 0, its work undone, and not a word
    const unfinished = (code: number): void => {
      // a process.exit with a code of its own (a pass module's) keeps it
      if (exitingOnPurpose || code !== 0) return;
      process.stderr.write('shardkit: the command ended before it finished: something it waited for never settled (a --pass-module that returns a promise it never resolves?)\n');
      process.exitCode = EXIT_PROBLEM;
    };
    process.once('exit', unfinished);
    try {
      const code = await action(...args);
      process.exitCode = code ?? EXIT_OK;
    } catch (err) {
      process.exitCode = reportError(err);
    } finally {
      process.off('exit', unfinished);
    }
  };
}

let exitingOnPurpose = false;

/** process.exit for a command that stops on purpose before its action returns (stdout closed: `shardkit ls | head`). */
export function exitNow(code: number): never {
  exitingOnPurpose = true;
  return process.exit(code);
}

export function reportError(err: unknown): number {
  if (err instanceof ShardkitError) {
    process.stderr.write(`shardkit: ${err.code}: ${err.message}\n`);
    if (debug) process.stderr.write(`${err.stack ?? ''}\n${err.cause ? String((err.cause as Error).stack ?? err.cause) : ''}\n`);
    return USAGE_ERROR_CODES.has(err.code) ? EXIT_USAGE : EXIT_PROBLEM;
  }
  process.stderr.write(`shardkit: internal error (please report): ${debug ? (err as Error)?.stack : String(err)}\n`);
  return EXIT_PROBLEM;
}

/** Prints a JSON document on stdout: the `--json` output of every command. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A writing command's result: `summary` as JSON with --json, else its text `lines` unless --quiet. */
export function printSummary(flags: { json?: boolean; quiet?: boolean }, summary: unknown, lines: () => readonly string[]): void {
  if (flags.json) printJson(summary);
  else if (!flags.quiet) process.stdout.write(lines().map((l) => `${l}\n`).join(''));
}
