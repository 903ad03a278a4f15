/**
 * Lock files for the cache, shared by the processes of one node: created with O_EXCL, holding the owner's pid and
 * host. A lock whose owner (on this host) is dead is taken over; a live owner's lock is never waited for here: the
 * caller decides (a reader reads from the remote meanwhile).
 */
import fs from 'node:fs';
import os from 'node:os';

interface LockOwner {
  pid: number;
  host: string;
}

/** Whether the process that wrote `path` is alive. A lock from another host, or unreadable, counts as alive. */
export function lockHolderAlive(path: string): boolean {
  let owner: LockOwner;
  try {
    owner = JSON.parse(fs.readFileSync(path, 'utf8')) as LockOwner;
  } catch (err) {
    // vanished: nobody holds it; half-written (its owner died between create and write): a torn lock
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    return !isOldEmpty(path);
  }
  if (owner.host !== os.hostname() || !Number.isInteger(owner.pid)) return true;
  return pidAlive(owner.pid);
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A lock file with no owner written after a few seconds: its creator died before writing it. */
function isOldEmpty(path: string): boolean {
  try {
    const st = fs.statSync(path);
    return st.size === 0 && Date.now() - st.mtimeMs > 5_000;
  } catch {
    return true;
  }
}

/**
 * Takes the lock at `path`: true when this process now holds it; false when a live process does. A dead holder's
 * lock is removed and taken. Other errors (an unwritable directory) are thrown.
 */
export function tryLock(path: string): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(path, 'wx');
      try {
        fs.writeSync(fd, JSON.stringify({ pid: process.pid, host: os.hostname() } satisfies LockOwner));
      } finally {
        fs.closeSync(fd);
      }
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (lockHolderAlive(path)) return false;
      fs.rmSync(path, { force: true }); // a dead holder's: take it over (another taker may win the O_EXCL race)
    }
  }
  return false;
}

export function unlock(path: string): void {
  fs.rmSync(path, { force: true });
}

/** Runs `fn` under the lock at `path`, retrying for a short while (critical sections under it are short). */
export async function withLock<T>(path: string, fn: () => T | Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  while (!tryLock(path)) {
    if (Date.now() > deadline) throw new Error(`the cache lock ${path} stayed held by a live process for ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 50);
  }
  try {
    return await fn();
  } finally {
    unlock(path);
  }
}
