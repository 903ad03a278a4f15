/**
 * Reads one sample's source files the way tar does (open, fstat, read, close), and checks that each file is
 * still what the walk saw: a file deleted, grown or rewritten during the pack is an error, not silent bad data.
 */
import buffer from 'node:buffer';
import fs from 'node:fs';
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { WalkEntry } from './walk.js';
import { getSystemErrorMap } from 'node:util';
import { nativeAddon, NativeErrorCodes, ReadSamplesStatus, type NativeAddon } from '../native/native.js';
import { MAX_IO_CALL_BYTES } from '../io/io-options.js';

/**
 * The largest source file pack reads whole (each member of a sample read into memory, for passes, LZ4 and its
 * checksum): what one Uint8Array can hold. A larger file is TOO_LARGE here. Without passes, pack then streams it
 * into the shard instead (stream-source.ts; the error is {@link isTooLargeToHold}); with passes, which need the
 * whole member, it stays an input error that `--on-error skip` leaves out. SHARDKIT_TEST_MAX_MEMBER_BYTES lowers
 * the limit (tests only: the streamed path then runs on files of a few MiB).
 */
export const MAX_PACK_MEMBER_BYTES = Math.min(buffer.constants.MAX_LENGTH, 2 ** 32 - 1);

/** {@link MAX_PACK_MEMBER_BYTES}, or the smaller SHARDKIT_TEST_MAX_MEMBER_BYTES. */
export function maxPackMemberBytes(): number {
  const test = Number(process.env.SHARDKIT_TEST_MAX_MEMBER_BYTES);
  return Number.isSafeInteger(test) && test > 0 ? Math.min(test, MAX_PACK_MEMBER_BYTES) : MAX_PACK_MEMBER_BYTES;
}

/** The TOO_LARGE errors of {@link checkPackable}: a file a pack without passes streams instead. */
const tooLargeToHold = new WeakSet<object>();

/** Whether `err` says that a source file is too large to read whole (and may be streamed): see MAX_PACK_MEMBER_BYTES. */
export function isTooLargeToHold(err: unknown): boolean {
  return typeof err === 'object' && err !== null && tooLargeToHold.has(err);
}

/** TOO_LARGE for a source file pack cannot hold in memory (see MAX_PACK_MEMBER_BYTES). */
function checkPackable(file: WalkEntry, size: number): void {
  const max = maxPackMemberBytes();
  if (size <= max) return;
  const err = new ShardkitError(
    ErrorCodes.TOO_LARGE,
    `${file.absPath} has ${size} bytes, more than one buffer holds (${max}), and passes need each member whole in memory (pack it without --pass, or leave it out with --exclude)`,
    { file: file.absPath },
  );
  tooLargeToHold.add(err);
  throw err;
}

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
 * (a slice of a batch buffer, say), called once the size is known. `free()`, when given, returns the free view
 * where `place(n)` puts any `n` bytes that fit in it: with the native addon, a file that fits is read straight
 * there, in one call instead of five.
 */
export function readSourceFileInto(file: WalkEntry, place: (size: number) => Uint8Array, free?: () => Uint8Array, verify = false): Uint8Array {
  const readFile = nativeReadFile();
  if (readFile !== undefined && file.size < 0 && !verify) return readNative(readFile, file, place, free?.() ?? EMPTY);
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO swapped in for a listed file must not block the pack (the fstat below refuses it)
    fd = fs.openSync(file.absPath, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (cause) {
    throw inputError(file, cause, 'open');
  }
  try {
    const before = fs.fstatSync(fd);
    if (!before.isFile()) throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `${file.absPath} is no longer a regular file`, { file: file.absPath });
    if (file.size >= 0 && (before.size !== file.size || before.mtimeMs !== file.mtimeMs)) throw changedError(file);
    checkPackable(file, before.size);
    const bytes = place(before.size);
    let off = 0;
    while (off < before.size) {
      const n = fs.readSync(fd, bytes, off, Math.min(before.size - off, MAX_IO_CALL_BYTES), off);
      if (n === 0) throw changedError(file);
      off += n;
    }
    const after = fs.fstatSync(fd);
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || after.ctimeMs !== before.ctimeMs) throw changedError(file);
    if (verify && !sameOnSecondRead(fd, bytes)) {
      throw new ShardkitError(
        ErrorCodes.INPUT_CHANGED,
        `${file.absPath} changed while it was being packed: a second read gave other bytes (a write through a memory map, or one that kept mtime and ctime); pack again once it is stable`,
        { file: file.absPath },
      );
    }
    return bytes;
  } catch (cause) {
    if (cause instanceof ShardkitError) throw cause;
    throw inputError(file, cause, 'read');
  } finally {
    fs.closeSync(fd);
  }
}

/** Pieces of the second read of --verify-source. */
const SECOND_READ_BYTES = 1 << 20;

/**
 * Reads the open file again and compares its CRC32C with that of `bytes` (pack's --verify-source): a file changed
 * between two reads without its size, mtime or ctime moving (pages written through a shared memory map) is caught
 * unless it changes back in between, or is changed after the second read.
 */
export function sameOnSecondRead(fd: number, bytes: Uint8Array): boolean {
  const piece = Buffer.allocUnsafe(Math.min(SECOND_READ_BYTES, Math.max(1, bytes.length)));
  let crc = 0;
  let off = 0;
  for (;;) {
    const n = fs.readSync(fd, piece, 0, piece.length, off);
    if (n === 0) break;
    crc = crc32c(piece.subarray(0, n), crc);
    off += n;
  }
  return off === bytes.length && crc >>> 0 === crc32c(bytes) >>> 0;
}

type NativeReadFile = NativeAddon['readFile'];
const EMPTY = new Uint8Array(0);

let nativeRead: NativeReadFile | null | undefined;

/** The addon's readFile, looked up once per thread (SHARDKIT_NATIVE=0 turns it off for the process). */
function nativeReadFile(): NativeReadFile | undefined {
  nativeRead ??= nativeAddon()?.readFile ?? null;
  return nativeRead ?? undefined;
}

/**
 * The same protocol in C (src/native): open, fstat, read, fstat, close, with the same checks. A file larger than
 * the free view is read again once `place` has found room for it.
 */
function readNative(readFile: NativeReadFile, file: WalkEntry, place: (size: number) => Uint8Array, free: Uint8Array): Uint8Array {
  const call = (target: Uint8Array): number => {
    try {
      return readFile(file.absPath, target, 0, target.length);
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if (code === NativeErrorCodes.CHANGED) throw changedError(file);
      if (code === NativeErrorCodes.NOT_FILE) throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `${file.absPath} is no longer a regular file`, { file: file.absPath });
      throw inputError(file, cause, (cause as NodeJS.ErrnoException).syscall === 'open' ? 'open' : 'read');
    }
  };
  const n = call(free);
  if (n >= 0) {
    const view = place(n);
    // place(n) is free's start whenever n fits there; copy if a caller's place ever decides otherwise
    if (view.buffer !== free.buffer || view.byteOffset !== free.byteOffset) view.set(free.subarray(0, n));
    return view;
  }
  checkPackable(file, -n - 1);
  const view = place(-n - 1);
  // read again where there is room; a file that changed size in between changed while it was being packed
  if (call(view) !== view.length) throw changedError(file);
  return view;
}

/**
 * The error of a source file the native readSamples could not read (its status, errno and system call), as
 * {@link readSourceFileInto} reports it.
 */
export function nativeReadError(absPath: string, status: number, errno: number, syscall: string): ShardkitError {
  const file: WalkEntry = { relPath: absPath, absPath, size: -1, mtimeMs: -1 };
  if (status === ReadSamplesStatus.CHANGED) return changedError(file);
  if (status === ReadSamplesStatus.NOT_FILE) return new ShardkitError(ErrorCodes.INPUT_CHANGED, `${absPath} is no longer a regular file`, { file: absPath });
  const [code, message] = getSystemErrorMap().get(-errno) ?? ['EUNKNOWN', `errno ${errno}`];
  return inputError(file, Object.assign(new Error(`${syscall}: ${message}`), { code, syscall }), syscall === 'open' ? 'open' : 'read');
}

/** INPUT_CHANGED for a file that changed while it was read. */
export function changedError(file: WalkEntry): ShardkitError {
  return new ShardkitError(ErrorCodes.INPUT_CHANGED, `${file.absPath} changed while it was being packed; pack again (or --resume) once it is stable`, { file: file.absPath });
}

/** INPUT (or INPUT_CHANGED for a file gone) for a system error of `action` on a source file. */
export function inputError(file: WalkEntry, cause: unknown, action: string): ShardkitError {
  const code = (cause as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return new ShardkitError(ErrorCodes.INPUT_CHANGED, `${file.absPath} vanished while it was being packed`, { file: file.absPath, cause });
  const why = code === 'EACCES' || code === 'EPERM' ? 'permission denied' : ((cause as Error)?.message ?? String(cause));
  return new ShardkitError(ErrorCodes.INPUT, `cannot ${action} ${file.absPath}: ${why}`, { file: file.absPath, cause });
}
