/**
 * One directory's listing for the walk (walk.ts): from the native addon, read and sorted in C on the thread pool,
 * or from fs.readdir. Names that are not UTF-8 are refused here, naming their bytes.
 */
import { readdir } from 'node:fs/promises';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { NativeErrorCodes, type NativeAddon } from '../native/native.js';
import type { WalkOrder } from './walk-order.js';

/**
 * One directory's entries as read: names, and per entry one character of `kinds` ('f' regular file, 'd' directory,
 * 'l' symbolic link, 'o' other); `sorted` when they come in the walk's order already (links sorted as files).
 */
export interface RawListing {
  kinds: string;
  names: string[];
  sorted: boolean;
}

export const KIND_FILE = 'f'.charCodeAt(0);
export const KIND_DIRECTORY = 'd'.charCodeAt(0);
export const KIND_LINK = 'l'.charCodeAt(0);

// strict, and a name may start with U+FEFF (the default decoder would drop it)
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeName(raw: Buffer, dirRel: string): string {
  try {
    return utf8.decode(raw);
  } catch {
    throw new ShardkitError(
      ErrorCodes.INPUT,
      `A file name in ${dirRel === '' ? 'the source root' : dirRel} is not valid UTF-8 (bytes ${raw.toString('hex')}); rename it: keys and member names must be UTF-8`,
      { file: dirRel },
    );
  }
}

/**
 * Reads one directory's entries: with the native addon, listed and sorted in C on the thread pool (two strings,
 * not a Dirent per entry); else with fs.readdir, whose Dirents say the kinds. Node decodes names as UTF-8 and puts
 * U+FFFD where the bytes are not UTF-8; only a listing that holds U+FFFD is read again as bytes, to tell a name
 * that is not UTF-8 (an error) from one that holds the character itself. The addon checks the bytes itself and
 * leaves such a listing to this path, for the same error.
 */
export async function readDirectory(absDir: string, relDir: string, order: WalkOrder, listDirectory: NativeAddon['listDirectory'] | undefined): Promise<RawListing> {
  try {
    if (listDirectory !== undefined) {
      const listing = await listDirectory(absDir, order === 'sample').then(
        ([kinds, names]): RawListing => ({ kinds, names: kinds === '' ? [] : names.split('\0'), sorted: true }),
        (err: unknown) => {
          if ((err as NodeJS.ErrnoException).code === NativeErrorCodes.NOT_UTF8) return undefined;
          throw err;
        },
      );
      if (listing !== undefined) return listing;
    }
    const dirents = await readdir(absDir, { withFileTypes: true });
    if (dirents.some((d) => d.name.includes('\uFFFD'))) {
      const raw = await readdir(absDir, { withFileTypes: true, encoding: 'buffer' });
      for (const d of raw) decodeName(d.name, relDir);
    }
    const kinds = dirents.map((d) => (d.isFile() ? 'f' : d.isDirectory() ? 'd' : d.isSymbolicLink() ? 'l' : 'o')).join('');
    return { kinds, names: dirents.map((d) => d.name), sorted: false };
  } catch (err) {
    if (err instanceof ShardkitError) throw err;
    throw ioError(ErrorCodes.INPUT, `Cannot read source directory ${absDir}; check that it exists and is readable`, absDir, err);
  }
}

/** A walk error with the system error code, if any, after the message. */
export function ioError(code: typeof ErrorCodes.INPUT | typeof ErrorCodes.INPUT_CHANGED, message: string, file: string, cause: unknown): ShardkitError {
  const sys = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new ShardkitError(code, sys === undefined ? message : `${message} (${sys})`, { file, cause });
}
