/**
 * One writer at a time per output directory. pack, derive, merge and index write fixed names there (temporaries,
 * the work directory, the manifest): two at once, say a retried job next to the first, left a manifest that did not
 * match its index after one of them exited 0.
 *
 * The lock is a file created with O_EXCL holding the owner's pid and host. A lock whose owner is gone (a pack killed
 * with SIGKILL, on this host) is stale and taken over; one held by a live process is refused with the owner named.
 * Whether a process on another host lives cannot be asked, so the owner renews its lock (rewrites the same bytes)
 * every LEASE_RENEW_MS: a lock of another host left unrenewed for LEASE_EXPIRY_MS (a job killed with its machine or
 * container, on a shared file system) is stale too. Its age is read against the file system's own clock (the mtime
 * of a file created next to it), not this host's, which may be set apart from the server's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { fsCall } from './fs-errors.js';

export const LOCK_FILE = '.shardkit-lock';
/** How often a writer renews its lock. */
export const LEASE_RENEW_MS = 30_000;
/** A lock of another host unrenewed this long is stale: twenty missed renewals, an event loop stalled for 10 min. */
export const LEASE_EXPIRY_MS = 10 * 60_000;

interface LockOwner {
  pid: number;
  host: string;
  /** What holds it: `pack`, `merge`, ... */
  command: string;
  started: string;
  /** Left by abandon(): stale whoever wrote it (the writer gave up, even if its process lives on). */
  abandoned?: boolean;
  /** How often its writer renews it (ms); absent in locks of versions that did not, which never expire. */
  renewMs?: number;
}

export class WriteLock {
  private released = false;
  private readonly renewal: NodeJS.Timeout;

  /**
   * @param tookOver the lock was a dead writer's: the directory may hold what that writer left half done (a --force
   *   killed while it cleared the old dataset), which only shardkit wrote
   * @param content the bytes written to the lock (unique to this writer: pid, host, start), rewritten at each renewal
   */
  private constructor(
    readonly file: string,
    readonly tookOver: boolean,
    content: string,
    renewMs: number,
  ) {
    this.renewal = setInterval(() => renew(file, content), renewMs);
    this.renewal.unref();
  }

  /**
   * Takes the lock of `dir` for `command`, or throws OUTPUT_EXISTS naming the writer that holds it.
   * @param renewMs how often the lock is renewed (LEASE_RENEW_MS; tests use less)
   * @throws ShardkitError OUTPUT_EXISTS when another live process, or one on another host within its lease, holds it.
   */
  static acquire(dir: string, command: string, renewMs = LEASE_RENEW_MS): WriteLock {
    fsCall('create', dir, () => fs.mkdirSync(dir, { recursive: true }));
    const file = path.join(dir, LOCK_FILE);
    const owner: LockOwner = { pid: process.pid, host: os.hostname(), command, started: new Date().toISOString(), renewMs };
    const content = `${JSON.stringify(owner)}\n`;
    let tookOver = false;
    for (let attempt = 0; attempt < 2; attempt++) {
      if (tryCreate(file, content)) return new WriteLock(file, tookOver, content, renewMs);
      const holder = readOwner(file);
      if (holder === undefined) {
        // released meanwhile (try again), or empty: its writer was killed between create and write, unless that
        // happens right now (a lock younger than a second is left to its writer)
        const age = ageMs(file);
        if (age === Infinity || age < 1000) continue;
      } else if (holder.abandoned !== true && (holder.host === owner.host ? isAlive(holder.pid) : !leaseExpired(dir, file, holder))) {
        const who = `${holder.command} (pid ${holder.pid} on ${holder.host}, since ${holder.started})`;
        const lease = holder.host !== owner.host && holder.renewMs !== undefined ? ` (its lock is taken over once unrenewed for ${LEASE_EXPIRY_MS / 60_000} minutes)` : '';
        const remedy = `delete ${file} if that process is gone${lease}`;
        throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir} is being written by another shardkit ${who}; wait for it, or ${remedy}`, { file: dir });
      }
      // its owner died (SIGKILL, a crash, its host gone) without releasing it, or never wrote it
      fsCall('remove', file, () => fs.rmSync(file, { force: true }));
      tookOver = true;
    }
    throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir}: another shardkit took its lock (${file}) at the same moment; try again`, { file: dir });
  }

  /**
   * Lets go without removing the file, as a killed writer would: for a directory that still holds what a killed
   * write left, which the next writer must learn (it takes the lock over as stale, see tookOver). release() is then
   * a no-op.
   */
  abandon(): void {
    if (this.released) return;
    this.released = true;
    clearInterval(this.renewal);
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
    clearInterval(this.renewal);
    try {
      fs.rmSync(this.file, { force: true });
    } catch {
      // the directory went away: nothing left to unlock
    }
  }
}

/** Creates the lock file with O_EXCL and writes `content`; false when it exists. */
function tryCreate(file: string, content: string): boolean {
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
    fs.writeSync(fd, content);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

/**
 * Rewrites the lock's bytes in place (same bytes: a reader never sees them change), which sets its mtime by the file
 * system's clock. Only while the file holds this writer's bytes, read through the descriptor written to: a lock a
 * taker put in its place (after this writer's lease ran out) is left alone, even on a reused inode number.
 */
function renew(file: string, content: string): void {
  try {
    const fd = fs.openSync(file, 'r+');
    try {
      const expected = Buffer.from(content);
      const held = Buffer.alloc(expected.length + 1);
      if (fs.readSync(fd, held, 0, held.length, 0) === expected.length && held.subarray(0, expected.length).equals(expected)) {
        fs.writeSync(fd, expected, 0, expected.length, 0);
      }
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // gone (released, or taken over): nothing to renew
  }
}

/**
 * Whether `file`, held by `holder`, went unrenewed for LEASE_EXPIRY_MS (longer than its renewal period), by the clock
 * of the file system that holds it: the mtime of a file created next to it now (a server's clock, on NFS), else this
 * host's. A lock whose writer does not renew it never expires.
 */
function leaseExpired(dir: string, file: string, holder: LockOwner): boolean {
  if (holder.renewMs === undefined) return false;
  let mtime: number;
  try {
    mtime = fs.statSync(file).mtimeMs;
  } catch {
    return true; // gone: nothing holds it
  }
  return fileSystemNow(dir) - mtime > Math.max(LEASE_EXPIRY_MS, 20 * holder.renewMs);
}

function fileSystemNow(dir: string): number {
  const probe = path.join(dir, `${LOCK_FILE}-clock-${process.pid}-${Math.random().toString(36).slice(2)}`);
  try {
    const fd = fs.openSync(probe, 'wx'); // created now: its mtime is the file system's now
    try {
      return fs.fstatSync(fd).mtimeMs;
    } finally {
      fs.closeSync(fd);
      fs.rmSync(probe, { force: true });
    }
  } catch {
    return Date.now();
  }
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const o = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<LockOwner>;
    if (typeof o.pid !== 'number' || typeof o.host !== 'string') return undefined;
    const renewMs = typeof o.renewMs === 'number' && o.renewMs > 0 ? o.renewMs : undefined;
    return { pid: o.pid, host: o.host, command: String(o.command ?? 'writer'), started: String(o.started ?? '?'), abandoned: o.abandoned === true, ...(renewMs === undefined ? {} : { renewMs }) };
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
