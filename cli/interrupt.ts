import { journalProgress } from '../src/pack/journal.js';
import { shellWord } from '../src/read/missing-manifest.js';
import { removeStreamingTemporaries } from '../src/pack/replace-file.js';
import { releaseHeldLocks } from '../src/pack/write-lock.js';
import { count } from './format.js';

/**
 * Ctrl-C (SIGINT) or SIGTERM while a command writes files. The default action ends the process wherever it is,
 * in the middle of a write too, and leaves that file's temporary behind (`.shardkit-tmp-*`, see replace-file.ts).
 * With a handler the signal waits for the event loop; extract and get write each file (temporary, write, rename) in
 * one synchronous step, so the handler runs between two files, and ends the process by the same signal, as a
 * shell expects of a child it interrupted. A member too large for one step (over 256 MiB) is written in pieces:
 * the handler can run between two of them, and removes that file's temporary (the file is not written).
 */
export function stopBetweenFiles(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    // once: the listener is gone when it runs, so this kill takes the default action
    process.once(signal, () => {
      // the target's lock and any member written in pieces go with the process: nothing of extract's stays
      removeStreamingTemporaries();
      releaseHeldLocks();
      process.kill(process.pid, signal);
    });
  }
}

/**
 * Ctrl-C (SIGINT) or SIGTERM during a write that a journal makes resumable (pack, derive): prints one line, what
 * `stopped()` says (where it stopped and how to finish), then ends the process by the same signal at once. The
 * journal holds every finished shard, so stopping anywhere is safe (a kill is, too).
 */
export function sayWhenStopped(stopped: () => string): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      let line: string;
      try {
        line = stopped();
      } catch {
        line = 'stopped';
      }
      process.stderr.write(`shardkit: ${line}\n`);
      process.kill(process.pid, signal);
    });
  }
}

/**
 * sayWhenStopped for a command that writes through a journal in `workDir` (pack and derive: the output; append:
 * its stage): what the journal kept, and the command line that finishes it.
 */
export function sayWhenJournalStopped(command: string, workDir: string, before: () => void): void {
  sayWhenStopped(() => {
    before();
    const kept = journalProgress(workDir);
    if (kept === undefined) return `${command} stopped before it wrote anything; run \`${commandLine([], [])}\` again to ${command}`;
    const where = `${count(kept.samples, 'sample')} in ${count(kept.shards, 'finished shard')} kept in ${workDir}`;
    return `${command} stopped (${where}); finish it with \`${commandLine(['--resume'], ['--force'])}\`, or start over with --force`;
  });
}

/** The command line this process ran, as `shardkit ARGS`, with `add` appended and the flags in `drop` left out. */
export function commandLine(add: readonly string[], drop: readonly string[]): string {
  const args = process.argv.slice(2).filter((arg) => !drop.includes(arg));
  for (const flag of add) if (!args.includes(flag)) args.push(flag);
  return ['shardkit', ...args.map(shellWord)].join(' ');
}
