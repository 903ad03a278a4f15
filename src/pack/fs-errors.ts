import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

import fs from 'node:fs';
import path from 'node:path';

/** Advice that names no option: every command reaches these, and each has its own (see withResumeAdvice). */
const ADVICE: Record<string, string> = {
  ENOSPC: 'no space left on the device; free space, then run the command again',
  EDQUOT: 'disk quota exceeded; free space or raise the quota, then run the command again',
  EFBIG: 'EFBIG: file too large for the file system or for the file size limit (ulimit -f); write elsewhere or raise the limit',
  EROFS: 'read-only file system; write to a writable directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files',
};

/** Wraps a system error from a filesystem call into SHARDKIT_ERR_IO naming the file and what to do. */
export function ioError(cause: unknown, action: string, file: string): ShardkitError {
  const code = (cause as NodeJS.ErrnoException)?.code;
  const hint = (code === undefined ? undefined : ADVICE[code]) ?? (cause as Error)?.message ?? String(cause);
  return new ShardkitError(ErrorCodes.IO, `cannot ${action} ${file}: ${hint}`, { file, cause });
}

/** Errors a resumable write (pack, derive) can continue after, once their cause is fixed. */
const RESUMABLE = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EMFILE', 'ENFILE']);

/** For pack and derive, whose `--resume` continues a write that stopped on `err`: the advice says so. */
export function withResumeAdvice(err: unknown): unknown {
  if (!(err instanceof ShardkitError) || err.code !== ErrorCodes.IO) return err;
  const cause = (err.cause as NodeJS.ErrnoException | undefined)?.code;
  if (cause === undefined || !RESUMABLE.has(cause)) return err;
  return new ShardkitError(ErrorCodes.IO, `${err.message} with --resume (it continues where this one stopped)`, { ...(err.file === undefined ? {} : { file: err.file }), cause: err.cause });
}

/**
 * mkdir -p that reports the real reason: Node's recursive mkdir says ENOENT for a parent it could not make on a
 * read-only file system. The first missing ancestor is made alone, which fails with the true code (EROFS, EACCES).
 */
export function makeDir(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError(cause, 'create', dir);
    let missing = path.resolve(dir);
    while (!fs.existsSync(path.dirname(missing)) && path.dirname(missing) !== missing) missing = path.dirname(missing);
    try {
      fs.mkdirSync(missing);
    } catch (real) {
      if ((real as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError(real, 'create', missing);
    }
    fsCall('create', dir, () => fs.mkdirSync(dir, { recursive: true }));
  }
}

/** Runs a synchronous filesystem call, turning its system error into {@link ioError}. */
export function fsCall<T>(action: string, file: string, fn: () => T): T {
  try {
    return fn();
  } catch (cause) {
    if (cause instanceof ShardkitError) throw cause;
    throw ioError(cause, action, file);
  }
}
