/**
 * Reads one sample's source files the way tar does (open, fstat, read, close), and checks that each file is
 * still what the walk saw: a file deleted, grown or rewritten during the pack is an error, not silent bad data.
 */
import fs from 'node:fs';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { WalkEntry } from './walk.js';

/**
 * open, fstat, read, fstat, close. The file must still match what the walk saw (when the walk stat'ed it) and must
 * not change while it is read (size, mtime or ctime between the two fstats): GNU tar's "file changed as we read it",
 * made an error.
 */
export function readSourceFile(file: WalkEntry): Uint8Array {
  return readSourceFileInto(file, (size) => Buffer.allocUnsafe(size));
}

/**
 * {@link readSourceFile} into memory the caller provides: `place(size)` returns a view of exactly `size` bytes
 * (a slice of a batch buffer, say), called once the first fstat has given the size.
 */
export function readSourceFileInto(file: WalkEntry, place: (size: number) => Uint8Array): Uint8Array {
  let fd: number;
  try {
    fd = fs.openSync(file.absPath, 'r');
  } catch (cause) {
    throw inputError(file, cause, 'open');
  }
  try {
    const before = fs.fstatSync(fd);
    if (!before.isFile()) throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `${file.absPath} is no longer a regular file`, { file: file.absPath });
    if (file.size >= 0 && (before.size !== file.size || before.mtimeMs !== file.mtimeMs)) throw changed(file);
    const bytes = place(before.size);
    let off = 0;
    while (off < before.size) {
      const n = fs.readSync(fd, bytes, off, before.size - off, off);
      if (n === 0) throw changed(file);
      off += n;
    }
    const after = fs.fstatSync(fd);
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || after.ctimeMs !== before.ctimeMs) throw changed(file);
    return bytes;
  } catch (cause) {
    if (cause instanceof ShardkitError) throw cause;
    throw inputError(file, cause, 'read');
  } finally {
    fs.closeSync(fd);
  }
}

function changed(file: WalkEntry): ShardkitError {
  return new ShardkitError(ErrorCodes.INPUT_CHANGED, `${file.absPath} changed while it was being packed; pack again (or --resume) once it is stable`, { file: file.absPath });
}

function inputError(file: WalkEntry, cause: unknown, action: string): ShardkitError {
  const code = (cause as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return new ShardkitError(ErrorCodes.INPUT_CHANGED, `${file.absPath} vanished while it was being packed`, { file: file.absPath, cause });
  const why = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : ((cause as Error)?.message ?? String(cause));
  return new ShardkitError(ErrorCodes.INPUT, `cannot ${action} ${file.absPath}: ${why}`, { file: file.absPath, cause });
}
