/**
 * One directory's listing for the walk (walk.ts): from the native addon, read and sorted in C on the thread pool,
 * or from fs.readdir. Names that are not UTF-8 are left out and handed back, with the error that names their bytes.
 */
import { readdir } from 'node:fs/promises';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { NativeErrorCodes, type NativeAddon } from '../native/native.js';
import type { WalkOrder } from './walk-order.js';
import type { KeyRule } from '../../formats/sample.js';

/**
 * One directory's entries as read: names, and per entry one character of `kinds` ('f' regular file, 'd' directory,
 * 'l' symbolic link, 'o' other); `sorted` when they come in the walk's order already (links sorted as files).
 */
export interface RawListing {
  kinds: string;
  names: string[];
  sorted: boolean;
  /**
   * Names that are not UTF-8, left out of `names`: escaped (see escapeName), with their kind (a character as in
   * `kinds`) and the error that names their bytes, in byte order. The walk decides (its filters may leave them out).
   */
  badNames?: { name: string; kind: string; error: ShardkitError }[];
}

export const KIND_FILE = 'f'.charCodeAt(0);
export const KIND_DIRECTORY = 'd'.charCodeAt(0);
export const KIND_LINK = 'l'.charCodeAt(0);

// strict, and a name may start with U+FEFF (the default decoder would drop it)
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The name, or undefined when it is not UTF-8. */
function decodeName(raw: Buffer): string | undefined {
  try {
    return utf8.decode(raw);
  } catch {
    return undefined;
  }
}

/** The error of a name that is not UTF-8, naming its bytes. */
function badNameError(raw: Buffer, dirRel: string): ShardkitError {
  return new ShardkitError(
    ErrorCodes.INPUT,
    `A file name in ${dirRel === '' ? 'the source root' : dirRel} is not valid UTF-8 (bytes ${raw.toString('hex')}); rename it: keys and member names must be UTF-8`,
    { file: dirRel },
  );
}

/** A name that is not UTF-8 as text: its valid UTF-8 as it is, every other byte as `\xNN`. */
export function escapeName(raw: Uint8Array): string {
  let out = '';
  let start = 0;
  for (let i = 0; i < raw.length; ) {
    const n = utf8SequenceLength(raw, i);
    if (n > 0) {
      i += n;
      continue;
    }
    out += utf8.decode(raw.subarray(start, i)) + `\\x${(raw[i] as number).toString(16).padStart(2, '0')}`;
    start = ++i;
  }
  return out + utf8.decode(raw.subarray(start));
}

/** Length of the well-formed UTF-8 sequence at `i` (as the decoder accepts it), 0 when there is none. */
function utf8SequenceLength(b: Uint8Array, i: number): number {
  const lead = b[i] as number;
  if (lead < 0x80) return 1;
  const n = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
  if (n === 0 || i + n > b.length) return 0;
  return decodeName(Buffer.from(b.subarray(i, i + n))) === undefined ? 0 : n;
}

/**
 * Reads one directory's entries: with the native addon, listed and sorted in C on the thread pool (two strings,
 * not a Dirent per entry); else with fs.readdir, whose Dirents say the kinds. Node decodes names as UTF-8 and puts
 * U+FFFD where the bytes are not UTF-8; only a listing that holds U+FFFD is read again as bytes, to tell a name
 * that is not UTF-8 (handed back in `badNames`) from one that holds the character itself. The addon checks the
 * bytes itself and leaves such a listing to this path.
 */
export async function readDirectory(
  absDir: string,
  relDir: string,
  order: WalkOrder,
  listDirectory: NativeAddon['listDirectory'] | undefined,
  rule: KeyRule = 'webdataset',
): Promise<RawListing> {
  // the addon sorts by WebDataset key (first dot) or by path: under the path rule the walk sorts the listing itself
  const nativeSorts = order === 'path' || rule === 'webdataset';
  try {
    if (listDirectory !== undefined) {
      const listing = await listDirectory(absDir, order === 'sample' && nativeSorts).then(
        ([kinds, names]): RawListing => ({ kinds, names: kinds === '' ? [] : names.split('\0'), sorted: nativeSorts }),
        (err: unknown) => {
          if ((err as NodeJS.ErrnoException).code === NativeErrorCodes.NOT_UTF8) return undefined;
          throw err;
        },
      );
      if (listing !== undefined) return listing;
    }
    const kindOf = (d: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): string => (d.isFile() ? 'f' : d.isDirectory() ? 'd' : d.isSymbolicLink() ? 'l' : 'o');
    const dirents = await readdir(absDir, { withFileTypes: true });
    if (!dirents.some((d) => d.name.includes('\uFFFD'))) return { kinds: dirents.map(kindOf).join(''), names: dirents.map((d) => d.name), sorted: false };
    // read again as bytes: the names and kinds all come from this one listing
    const raw = await readdir(absDir, { withFileTypes: true, encoding: 'buffer' });
    const names: string[] = [];
    let kinds = '';
    const bad: { raw: Buffer; kind: string }[] = [];
    for (const d of raw) {
      const name = decodeName(d.name);
      if (name === undefined) {
        bad.push({ raw: d.name, kind: kindOf(d) });
        continue;
      }
      names.push(name);
      kinds += kindOf(d);
    }
    bad.sort((a, b) => Buffer.compare(a.raw, b.raw));
    return { kinds, names, sorted: false, ...(bad.length === 0 ? {} : { badNames: bad.map((b) => ({ name: escapeName(b.raw), kind: b.kind, error: badNameError(b.raw, relDir) })) }) };
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
