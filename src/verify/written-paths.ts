/**
 * The member paths one extract has written, to refuse a second member that would land on the same file. Two keys
 * can give one path (key `a` + ext `b.c` and key `a.b` + ext `c` are both `a.b.c`), and on a case-insensitive file
 * system (macOS, a Windows volume) `A.txt` and `a.txt` are one file too, as are the NFC and NFD spellings of `é` on
 * macOS (probeNameFolding asks the target). Unchecked, the second member replaced the first while both were counted
 * as written.
 *
 * Memory: one entry per member, so O(samples) for a whole dataset, unlike pack and the readers, which stay bounded.
 * Acceptable here: extract creates that many files anyway.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { memberPath } from '../../formats/sample.js';
import { nodeCrypto } from '../lazy-crypto.js';

/** Which spellings the target's file system takes as one name. */
export interface NameFolding {
  /** `A.txt` is `a.txt` (macOS, Windows volumes, FAT). */
  caseInsensitive: boolean;
  /** NFC and NFD `é` are one name (macOS). */
  normalizationInsensitive: boolean;
}

/**
 * Asks the file system of `dir` how it folds names: creates a probe file (a `.shardkit-tmp-` name, like extract's
 * temporaries) and looks it up in upper case and in NFD. Linux file systems usually fold neither, and there two
 * keys that differ only in case are two files, as they should be.
 */
export function probeNameFolding(dir: string): NameFolding {
  const base = `.shardkit-tmp-probe-${nodeCrypto().randomBytes(6).toString('hex')}`;
  // the é tells normalization; a file system that takes no such name (FAT with an ASCII charset) folds none, and
  // is then asked about case with a plain name
  let name = tryCreate(dir, `${base}-\u00e9`);
  if (name === undefined) {
    fs.writeFileSync(path.join(dir, base), '', { flag: 'wx' });
    name = base;
  }
  try {
    return {
      caseInsensitive: fs.existsSync(path.join(dir, name.toUpperCase())),
      normalizationInsensitive: name !== base && fs.existsSync(path.join(dir, name.normalize('NFD'))),
    };
  } finally {
    fs.rmSync(path.join(dir, name), { force: true });
  }
}

/** Creates an empty file `name` in `dir`; undefined when the file system refuses that name (not other errors). */
function tryCreate(dir: string, name: string): string | undefined {
  try {
    fs.writeFileSync(path.join(dir, name), '', { flag: 'wx' });
    return name;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EINVAL' || code === 'EILSEQ') return undefined;
    throw err;
  }
}

export class WrittenPaths {
  private readonly byName = new Map<string, { key: string; ext: string }>();
  /** Directories the members need (folded), with the first key that needs each: one may not also be a file. */
  private readonly dirs = new Map<string, string>();

  constructor(private readonly folding: NameFolding) {}

  /**
   * Records member `ext` of `key`, or throws UNSAFE_PATH naming both keys when an earlier member has its path, or
   * when one needs as a directory what the other writes as a file (key `a` with no extension, and key `a/b`).
   */
  claim(key: string, ext: string): void {
    const relative = memberPath(key, ext);
    const name = foldName(relative, this.folding);
    const refuse = (why: string): never => {
      throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `refusing to extract ${JSON.stringify(relative)} (key ${JSON.stringify(key)}, ext ${JSON.stringify(ext)}): ${why}`, { key });
    };
    const needsDir = this.dirs.get(name);
    if (needsDir !== undefined) refuse(`key ${JSON.stringify(needsDir)} needs that path as a directory`);
    for (let slash = name.indexOf('/'); slash >= 0; slash = name.indexOf('/', slash + 1)) {
      const dir = name.slice(0, slash);
      const file = this.byName.get(dir);
      if (file !== undefined) refuse(`it needs ${JSON.stringify(memberPath(file.key, file.ext))} as a directory, and key ${JSON.stringify(file.key)} writes a file there`);
      if (!this.dirs.has(dir)) this.dirs.set(dir, key);
    }
    const earlier = this.byName.get(name);
    if (earlier !== undefined) {
      const earlierPath = memberPath(earlier.key, earlier.ext);
      const folded = earlierPath.normalize('NFC') === relative.normalize('NFC') ? 'Unicode normalization' : 'case';
      const same = earlierPath === relative ? 'that path' : `${JSON.stringify(earlierPath)}, the same file on this file system (it folds ${folded})`;
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
 * Close to what a folding file system takes as one name: NFC, then lower case, as it folds. Close, not equal: APFS
 * and NTFS each have their own folding tables; this catches the collisions real datasets have.
 */
function foldName(relative: string, folding: NameFolding): string {
  const normalized = folding.normalizationInsensitive ? relative.normalize('NFC') : relative;
  return folding.caseInsensitive ? normalized.toLowerCase() : normalized;
}
