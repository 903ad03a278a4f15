/**
 * The member paths one extract has written, to refuse a second member that would land on the same file. Two keys
 * can give one path (key `a` + ext `b.c` and key `a.b` + ext `c` are both `a.b.c`), and on a case-insensitive file
 * system (macOS, a Windows volume) `A.txt` and `a.txt` are one file too, as are the NFC and NFD spellings of `é` on
 * macOS. Unchecked, the second member replaced the first while both were counted as written.
 *
 * Memory: one entry per member, so O(samples) for a whole dataset, unlike pack and the readers, which stay bounded.
 * Acceptable here: extract creates that many files anyway.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { memberPath } from '../../formats/sample.js';

export class WrittenPaths {
  private readonly byName = new Map<string, { key: string; ext: string }>();

  /** Records member `ext` of `key`, or throws UNSAFE_PATH naming both keys when an earlier member has its path. */
  claim(key: string, ext: string): void {
    const relative = memberPath(key, ext);
    const name = foldName(relative);
    const earlier = this.byName.get(name);
    if (earlier !== undefined) {
      const earlierPath = memberPath(earlier.key, earlier.ext);
      const same = earlierPath === relative ? 'that path' : `${JSON.stringify(earlierPath)}, the same file on a case-insensitive file system`;
      throw new ShardkitError(
        ErrorCodes.UNSAFE_PATH,
        `refusing to extract ${JSON.stringify(relative)} (key ${JSON.stringify(key)}, ext ${JSON.stringify(ext)}): ` +
          `key ${JSON.stringify(earlier.key)} (ext ${JSON.stringify(earlier.ext)}) already wrote ${same}`,
        { key },
      );
    }
    this.byName.set(name, { key, ext });
  }
}

/**
 * Close to what case-insensitive file systems take as one name: NFC, then lower case. Close, not equal: APFS and
 * NTFS each have their own folding tables; this catches the collisions real datasets have.
 */
function foldName(relative: string): string {
  return relative.normalize('NFC').toLowerCase();
}
