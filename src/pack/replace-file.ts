/**
 * Writing a file that is never seen cut short: the bytes go to a new temporary in the same directory, renamed over
 * the final name only once all of them are written. A failed write (no space, EFBIG, a read-only remount) leaves
 * the final name as it was and removes the temporary. A process killed mid-write (SIGKILL, power loss) can leave
 * a temporary behind: its name starts with {@link TEMP_PREFIX} (hidden, and skipped by `pack`'s walk), carries a
 * random part that no later write reuses, and is never the final name of anything.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { ioError } from './fs-errors.js';
import { MAX_IO_CALL_BYTES } from '../io/io-options.js';
import { nodeCrypto } from '../lazy-crypto.js';

export const TEMP_PREFIX = '.shardkit-tmp-';
const TEMP_RANDOM_BYTES = 8;

// always a new file: a link planted under the temporary's name is refused, never written through
const TEMP_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW;

/**
 * Creates `file` anew for writing (read too with `read`): whatever is at that name is unlinked first, then the
 * file is made with O_EXCL | O_NOFOLLOW. A hard link there is only unlinked (the file it named keeps its other
 * names and its bytes), and a symlink or link planted between the two calls is refused (UNSAFE_PATH), never
 * written through. For the temporaries writers make in a directory that is theirs; a name that may be an input
 * gets {@link tempPathFor} instead.
 */
export function createFresh(file: string, read = false): number {
  fsRemove(file);
  try {
    return fs.openSync(file, (read ? fs.constants.O_RDWR : fs.constants.O_WRONLY) | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o666);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ELOOP') {
      throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${file} appeared while it was being created (a link?); refusing to write through it`, { file, cause });
    }
    throw ioError(cause, 'create', file);
  }
}

/** A temporary name next to `file` that no other write uses (see {@link TEMP_PREFIX}). */
export function tempPathFor(file: string): string {
  return path.join(path.dirname(file), `${TEMP_PREFIX}${nodeCrypto().randomBytes(TEMP_RANDOM_BYTES).toString('hex')}`);
}

function fsRemove(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(cause, 'remove', file);
  }
}

export interface ReplaceFileOptions {
  /** Mode given to open(2) for the new file (the umask applies). Default 0o666, as for fs.writeFileSync. */
  createMode?: number;
  /** Permission bits set exactly on the new file (to keep those of a file it replaces). */
  keepMode?: number;
}

/**
 * Writes `bytes` to `file` through a temporary and rename(2). `file` itself is never opened, so a hard link or
 * symbolic link there is replaced, never written through (callers that must refuse a link check before).
 */
export function replaceFile(file: string, bytes: Uint8Array, options: ReplaceFileOptions = {}): void {
  const tmp = tempPathFor(file);
  let fd: number;
  try {
    fd = fs.openSync(tmp, TEMP_FLAGS, options.createMode ?? 0o666);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ELOOP') {
      throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${tmp} appeared while writing ${file} (a link?); refusing to write through it`, { file: tmp, cause });
    }
    throw ioError(cause, 'create', file);
  }
  let open = true;
  try {
    if (options.keepMode !== undefined) fs.fchmodSync(fd, options.keepMode);
    writeAll(fd, bytes);
    open = false;
    // close(2) can report a failed write (NFS reports them there): checked before the rename
    fs.closeSync(fd);
    fs.renameSync(tmp, file);
  } catch (cause) {
    if (open) quietly(() => fs.closeSync(fd));
    quietly(() => fs.unlinkSync(tmp));
    throw ioError(cause, 'write', file);
  }
}

/** Temporaries of {@link replaceFileStreamed} being filled: a signal handler removes them (removeStreamingTemporaries). */
const streaming = new Set<string>();

/**
 * Removes the temporaries of the streamed writes in progress: for a command ended by a signal it handles (Ctrl-C in
 * an extract of a member too large to write in one step), so that no `.shardkit-tmp-*` is left in the user's tree.
 * The process must end right after: those writes are not finished.
 */
export function removeStreamingTemporaries(): void {
  for (const tmp of streaming) quietly(() => fs.unlinkSync(tmp));
  streaming.clear();
}

/**
 * {@link replaceFile} for bytes that come in pieces: `fill` is given a function that appends a piece; the file is
 * renamed into place only once `fill` resolves, and removed if it (or a write) fails: a member whose checksum
 * turns out wrong at its end never lands under its name.
 */
export async function replaceFileStreamed(file: string, fill: (write: (piece: Uint8Array) => void) => Promise<void>, options: ReplaceFileOptions = {}): Promise<void> {
  const tmp = tempPathFor(file);
  let fd: number;
  try {
    fd = fs.openSync(tmp, TEMP_FLAGS, options.createMode ?? 0o666);
  } catch (cause) {
    throw ioError(cause, 'create', file);
  }
  streaming.add(tmp);
  let open = true;
  try {
    if (options.keepMode !== undefined) fs.fchmodSync(fd, options.keepMode);
    await fill((piece) => {
      try {
        writeAll(fd, piece);
      } catch (cause) {
        throw ioError(cause, 'write', file);
      }
    });
    open = false;
    fs.closeSync(fd);
    fs.renameSync(tmp, file);
  } catch (cause) {
    if (open) quietly(() => fs.closeSync(fd));
    quietly(() => fs.unlinkSync(tmp));
    if (cause instanceof ShardkitError) throw cause;
    throw ioError(cause, 'write', file);
  } finally {
    streaming.delete(tmp);
  }
}

/** Writes all of `bytes` to `fd` at its position, in calls of at most MAX_IO_CALL_BYTES. */
export function writeAll(fd: number, bytes: Uint8Array): void {
  for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off, Math.min(bytes.length - off, MAX_IO_CALL_BYTES));
}

/** Cleanup after a failed write: that failure is the error to report, not one from the cleanup. */
export function quietly(cleanup: () => void): void {
  try {
    cleanup();
  } catch {
    // see above
  }
}
