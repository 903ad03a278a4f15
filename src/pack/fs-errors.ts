import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

/** Wraps a system error from a filesystem call into SHARDKIT_ERR_IO naming the file and what to do. */
export function ioError(cause: unknown, action: string, file: string): ShardkitError {
  const code = (cause as NodeJS.ErrnoException)?.code;
  const hint =
    code === 'ENOSPC' ? 'no space left on the device; free space, then run again with --resume'
    : code === 'EACCES' || code === 'EPERM' ? 'permission denied'
    : code === 'EMFILE' || code === 'ENFILE' ? 'too many open files'
    : code === 'EROFS' ? 'read-only file system'
    : (cause as Error)?.message ?? String(cause);
  return new ShardkitError(ErrorCodes.IO, `cannot ${action} ${file}: ${hint}`, { file, cause });
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
