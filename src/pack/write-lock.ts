/**
 * One writer at a time per output directory. pack, derive, merge and index write fixed names there (temporaries,
 * the work directory, the manifest): two at once, say a retried job next to the first, left a manifest that did not
 * match its index after one of them exited 0.
 *
 * The lock is a file created with O_EXCL holding the owner's pid and host. A lock whose owner is gone (a pack killed
 * with SIGKILL, on this host) is stale and taken over; one held by a live process, or by another host (no way to
 * know whether it lives), is refused with the owner named, and the file to delete if the owner is known gone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { fsCall, ioError, makeDir } from './fs-errors.js';

export const LOCK_FILE = '.shardkit-lock';

interface LockOwner {
  pid: number;
  host: string;
  /** What holds it: `pack`, `merge`, ... */
  command: string;
  started: string;
  /** Left by abandon(): stale whoever wrote it (the writer gave up, even if its process lives on). */
  abandoned?: boolean;
  /**
   * 1 once its writer found the directory to be shardkit's to write (see claim()), 0 before: only a claimed lock of
   * a dead writer says that the shard-like files next to it are shardkit's. `index` and `reindex`, which work among
   * the user's own files, never claim; locks of earlier versions have no claim.
   */
  claimed?: 0 | 1;
}

/** The locks this process holds, for {@link releaseHeldLocks}. */
const held = new Set<WriteLock>();

/**
 * Releases every lock this process holds: for a command ended by a signal it handles (Ctrl-C between two files of
 * an extract), so that no lock is left in the user's directory.
 */
export function releaseHeldLocks(): void {
  for (const lock of [...held]) lock.release();
}

export class WriteLock {
  private released = false;

  /**
   * @param owner what the lock file says, rewritten by claim()
   * @param tookOverClaimed the lock was a dead writer's claimed one: the directory holds what that writer left half
   *   done (a --force killed while it cleared the old dataset), which only shardkit wrote. Not so for a dead
   *   writer's unclaimed lock: killed while it checked a directory, or an `index` run in place among the user's tars.
   */
  private constructor(
    readonly file: string,
    private readonly owner: LockOwner,
    readonly tookOverClaimed: boolean,
  ) {
    held.add(this);
  }

  /**
   * Takes the lock of `dir` for `command`, or throws OUTPUT_EXISTS naming the writer that holds it.
   * @throws ShardkitError OUTPUT_EXISTS when another live process (or a process on another host) holds it.
   */
  static acquire(dir: string, command: string): WriteLock {
    makeDir(dir);
    const file = path.join(dir, LOCK_FILE);
    const owner: LockOwner = { pid: process.pid, host: os.hostname(), command, started: new Date().toISOString(), claimed: 0 };
    let tookOverClaimed = false;
    for (let attempt = 0; attempt < 2; attempt++) {
      if (tryCreate(file, owner)) return new WriteLock(file, owner, tookOverClaimed);
      const holder = readOwner(file);
      if (holder === undefined) {
        // released meanwhile (try again), or empty: its writer was killed between create and write, unless that
        // happens right now (a lock younger than a second is left to its writer)
        const age = ageMs(file);
        if (age === Infinity || age < 1000) continue;
      } else if (holder.abandoned !== true && (holder.host !== owner.host || isAlive(holder.pid))) {
        const who = `${holder.command} (pid ${holder.pid} on ${holder.host}, since ${holder.started})`;
        throw new ShardkitError(
          ErrorCodes.OUTPUT_EXISTS,
          `${dir} is being written by another shardkit ${who}; wait for it, or delete ${file} if that process is gone`,
          { file: dir },
        );
      }
      // its owner died (SIGKILL, a crash) without releasing it, or never wrote it
      fsCall('remove', file, () => fs.rmSync(file, { force: true }));
      tookOverClaimed = holder?.claimed === 1;
    }
    throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir}: another shardkit took its lock (${file}) at the same moment; try again`, { file: dir });
  }

  /**
   * Marks the lock claimed: its writer found the directory to be shardkit's to write, and may now leave files there
   * that a --force after its death must clear (see tookOverClaimed). The same number of bytes rewritten in place: a
   * reader sees the lock whole, claimed or not.
   */
  claim(): void {
    if (this.released || this.owner.claimed === 1) return;
    this.owner.claimed = 1;
    const fd = fsCall('write', this.file, () => fs.openSync(this.file, 'r+'));
    try {
      fsCall('write', this.file, () => fs.writeSync(fd, `${JSON.stringify(this.owner)}\n`, 0));
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * Lets go without removing the file, as a killed writer would: for a directory that still holds what a killed
   * write left, which the next writer must learn (it takes the lock over as stale, see tookOverClaimed). release() is
   * then a no-op.
   */
  abandon(): void {
    if (this.released) return;
    this.released = true;
    held.delete(this);
    try {
      const owner = readOwner(this.file);
      if (owner !== undefined) fs.writeFileSync(this.file, `${JSON.stringify({ ...owner, abandoned: true })}\n`);
    } catch {
      // the mark stays as it was: stale once this process ends
    }
  }

  /** Gives the lock up (idempotent). */
  release(): void {
    if (this.released) return;
    this.released = true;
    held.delete(this);
    try {
      fs.rmSync(this.file, { force: true });
    } catch {
      // the directory went away: nothing left to unlock
    }
  }
}

/** Creates the lock file with O_EXCL; false when it exists. */
function tryCreate(file: string, owner: LockOwner): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    return fsCall('create', file, () => {
      throw err;
    });
  }
  try {
    fs.writeSync(fd, `${JSON.stringify(owner)}\n`);
    fs.closeSync(fd);
  } catch (cause) {
    // a full disk: no empty lock is left behind to hold up the next writer
    try {
      fs.closeSync(fd);
    } catch {
      // closed above, or failing too: the write's error is the one to report
    }
    fs.rmSync(file, { force: true });
    throw ioError(cause, 'write', file);
  }
  return true;
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const o = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<LockOwner>;
    if (typeof o.pid !== 'number' || typeof o.host !== 'string') return undefined;
    return { pid: o.pid, host: o.host, command: String(o.command ?? 'writer'), started: String(o.started ?? '?'), abandoned: o.abandoned === true, claimed: o.claimed === 1 ? 1 : 0 };
  } catch {
    // gone, or written half (its writer was killed between create and write): a lock nobody holds
    return undefined;
  }
}

/** How long ago the file was last written; Infinity when it is gone. */
function ageMs(file: string): number {
  try {
    return Date.now() - fs.statSync(file).mtimeMs;
  } catch {
    return Infinity;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // alive, someone else's
  }
}
