/**
 * Source files too large to hold in one buffer (over the limit of read-source.ts), read in pieces straight into a
 * shard (issue 26, item 3). The same protocol as readSourceFileInto: open, fstat, read, fstat, close; a file that
 * is no longer a regular file, or whose size, mtime or ctime moved while it was read, is INPUT_CHANGED.
 */
import fs from 'node:fs';
import { crc32c } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { changedError, inputError } from './read-source.js';
import type { WalkEntry } from './walk.js';

/** Bytes read at once from a streamed source file. */
export const STREAM_PIECE_BYTES = 4 << 20;

/** A source file opened for streaming: its descriptor and what fstat said before the first read. */
export interface OpenSource {
  file: WalkEntry;
  fd: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** Opens a source file and stats it: INPUT or INPUT_CHANGED as readSourceFileInto says them. */
export function openSource(absPath: string, relPath: string): OpenSource {
  const file: WalkEntry = { relPath, absPath, size: -1, mtimeMs: -1 };
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO swapped in for a listed file must not block the pack (the fstat below refuses it)
    fd = fs.openSync(absPath, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (cause) {
    throw inputError(file, cause, 'open');
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `${absPath} is no longer a regular file`, { file: absPath });
    return { file, fd, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
  } catch (cause) {
    fs.closeSync(fd);
    throw cause instanceof ShardkitError ? cause : inputError(file, cause, 'read');
  }
}

export function closeSource(src: OpenSource): void {
  try {
    fs.closeSync(src.fd);
  } catch {
    // closing a read-only descriptor loses nothing
  }
}

/**
 * Reads the whole file in pieces of `piece`'s length, handing each to `each` (the view is reused: `each` must
 * copy or write it before returning), and returns the CRC32C of its bytes. INPUT_CHANGED when the file ends early,
 * or when its size, mtime or ctime moved by the end of the read.
 */
export function streamSource(src: OpenSource, piece: Uint8Array, each: (bytes: Uint8Array) => void): number {
  let crc = 0;
  let off = 0;
  while (off < src.size) {
    const n = readAt(src, piece, Math.min(piece.length, src.size - off), off);
    if (n === 0) throw changedError(src.file);
    const bytes = piece.subarray(0, n);
    crc = crc32c(bytes, crc);
    each(bytes);
    off += n;
  }
  let after: fs.Stats;
  try {
    after = fs.fstatSync(src.fd);
  } catch (cause) {
    throw inputError(src.file, cause, 'read');
  }
  if (after.size !== src.size || after.mtimeMs !== src.mtimeMs || after.ctimeMs !== src.ctimeMs) throw changedError(src.file);
  return crc >>> 0;
}

/**
 * Reads the file a second time and compares its CRC32C and length with the first read's (pack's --verify-source):
 * INPUT_CHANGED when they differ.
 */
export function checkSecondRead(src: OpenSource, piece: Uint8Array, crc: number): void {
  let again = 0;
  let off = 0;
  for (;;) {
    const n = readAt(src, piece, piece.length, off);
    if (n === 0) break;
    again = crc32c(piece.subarray(0, n), again);
    off += n;
  }
  if (off === src.size && again >>> 0 === crc >>> 0) return;
  throw new ShardkitError(
    ErrorCodes.INPUT_CHANGED,
    `${src.file.absPath} changed while it was being packed: a second read gave other bytes (a write through a memory map, or one that kept mtime and ctime); pack again once it is stable`,
    { file: src.file.absPath },
  );
}

function readAt(src: OpenSource, piece: Uint8Array, length: number, position: number): number {
  try {
    return fs.readSync(src.fd, piece, 0, length, position);
  } catch (cause) {
    throw inputError(src.file, cause, 'read');
  }
}
