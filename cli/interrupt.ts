import { releaseHeldLocks } from '../src/pack/write-lock.js';

/**
 * Ctrl-C (SIGINT) or SIGTERM while a command writes files. The default action ends the process wherever it is,
 * in the middle of a write too, and leaves that file's temporary behind (`.shardkit-tmp-*`, see replace-file.ts).
 * With a handler the signal waits for the event loop; extract and get write each file (temporary, write, rename) in
 * one synchronous step, so the handler runs between two files, and ends the process by the same signal, as a
 * shell expects of a child it interrupted.
 */
export function stopBetweenFiles(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    // once: the listener is gone when it runs, so this kill takes the default action
    process.once(signal, () => {
      // the target's lock goes with the process: nothing of extract's stays in the user's tree
      releaseHeldLocks();
      process.kill(process.pid, signal);
    });
  }
}
