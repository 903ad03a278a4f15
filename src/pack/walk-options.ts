/**
 * The source walk's options and counters (walk.ts): what each option means, its default, and the checks walkSource
 * runs on them before it reads anything; which counter each reason to leave an entry out adds to.
 */
import picomatch from 'picomatch';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { KEY_RULES, type KeyRule } from '../../formats/sample.js';
import type { WalkOrder } from './walk-order.js';

/** Why an entry was left out; counted in {@link WalkStats} and reported to `onSkip`. */
export type WalkSkipReason = 'symlink' | 'cycle' | 'hidden' | 'excluded' | 'not-included' | 'other' | 'not-utf8' | 'no-key' | 'dataset';

/** Counters of one walk, updated as it goes (read them after the iteration ends for the totals). */
export interface WalkStats {
  /** Regular files yielded. */
  files: number;
  /** Sum of their sizes. */
  bytes: number;
  /** Directories entered, the root included. */
  directories: number;
  /** Symbolic links not followed, or followed but dangling. */
  skippedSymlinks: number;
  /** Followed links to a directory that is already being walked above them (would loop forever). */
  skippedCycles: number;
  /** Entries whose name starts with `.`; a hidden directory counts once, its contents are not visited. */
  skippedHidden: number;
  /** Files left out by `include`/`exclude`, and directories pruned by `exclude`. */
  skippedExcluded: number;
  /** Sockets, FIFOs, devices. */
  skippedOther: number;
  /**
   * Names that are not UTF-8, and files whose name gives no WebDataset key (see {@link WalkOptions.badNames}), left
   * out with `badNames: 'skip'`; a directory counts once, its contents are not visited.
   */
  skippedBadNames: number;
  /**
   * Directories below the root that hold a shardkit dataset (a manifest.json of format shardkit-dataset) or a write
   * of one (its `.shardkit-work/` or lock): an earlier pack's output inside the source. Not entered.
   */
  skippedDatasets: number;
}

export interface WalkOptions {
  /** `'sample'` (default): byte order of (key, ext), samples adjacent. `'path'`: byte order of the relative path. */
  order?: WalkOrder;
  /** Follow symbolic links to files and directories (default false: skip and count them). Loops are cut. */
  followSymlinks?: boolean;
  /**
   * Visit names starting with `.` (default false: skip and count them). A hidden directory's files then have keys
   * (`.cache/x.jpg` -> key `.cache/x`); a hidden file has none and is a bad name (see {@link WalkOptions.badNames}).
   */
  includeHidden?: boolean;
  /**
   * Globs (picomatch, `dot: true`) a file's relative path must match one of; empty or absent means every file.
   * A pattern without `/` matches the basename anywhere (`*.jpg`), like rsync and .gitignore.
   */
  include?: readonly string[];
  /** Globs that leave a file out; a directory whose relative path matches is not entered at all. */
  exclude?: readonly string[];
  /** Relative paths (not globs) left out exactly, as exclude leaves them: pack's output inside its source. */
  excludePaths?: readonly string[];
  /**
   * lstat every file to report its size and mtime (default true). `false` skips that metadata call per file (the
   * directory entry already says it is a regular file): entries then carry size and mtimeMs -1, and the reader
   * checks the file itself (pack's fstat-read-fstat, as GNU tar does). On Lots Of Small Files this halves the
   * metadata operations of a pack.
   */
  stat?: boolean;
  /**
   * A name that is not UTF-8 cannot be a key, and neither can a file name that starts with `.` (with
   * `includeHidden`) or ends with its first dot (`q.`; see noKeyReason): 'fail' (default) stops the walk with
   * INPUT naming the file (a name that is not UTF-8 by its bytes); 'skip' leaves it out (a directory that is not
   * UTF-8 with all below it) and tells `onSkip` (reason 'not-utf8', bad bytes written `\xNN`, or 'no-key' with the
   * error). The walk's filters come first: a hidden, linked or excluded name is left out for that.
   */
  badNames?: 'fail' | 'skip';
  /** How a file's name splits into key and extension (see KeyRule): what sample order sorts by. Default 'webdataset'. */
  keyRule?: KeyRule;
  /** Told about every entry left out (for `--verbose` listings); for 'no-key', with the error that says why. */
  onSkip?: (relPath: string, reason: WalkSkipReason, error?: ShardkitError) => void;
}

/** Whether a relative path matches a filter. */
export type Matcher = (relPath: string) => boolean;

/** {@link WalkOptions} checked, with their defaults, the globs compiled and `excludePaths` folded into `exclude`. */
export interface WalkSettings {
  order: WalkOrder;
  include: Matcher | undefined;
  exclude: Matcher | undefined;
  follow: boolean;
  includeHidden: boolean;
  statFiles: boolean;
  badNames: 'fail' | 'skip';
  keyRule: KeyRule;
  onSkip: WalkOptions['onSkip'];
}

/**
 * Checks the options before the walk reads anything.
 * @throws ShardkitError INVALID_ARG for an unknown order, badNames or keyRule, or a glob that is not a non-empty string.
 */
export function walkSettings(options: WalkOptions): WalkSettings {
  const order = options.order ?? 'sample';
  if (order !== 'sample' && order !== 'path') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected one of sample, path for order but received ${String(order)}`);
  }
  const include = compileGlobs(options.include, 'include');
  const globExclude = compileGlobs(options.exclude, 'exclude');
  const exactExclude = new Set(options.excludePaths ?? []);
  const exclude: Matcher | undefined =
    exactExclude.size === 0 ? globExclude : (relPath) => exactExclude.has(relPath) || globExclude?.(relPath) === true;
  const badNames = options.badNames ?? 'fail';
  if (badNames !== 'fail' && badNames !== 'skip') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected one of fail, skip for badNames but received ${String(badNames)}`);
  const keyRule = options.keyRule ?? 'webdataset';
  if (!KEY_RULES.includes(keyRule)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected one of ${KEY_RULES.join(', ')} for keyRule but received ${String(keyRule)}`);
  return {
    order,
    include,
    exclude,
    follow: options.followSymlinks === true,
    includeHidden: options.includeHidden === true,
    statFiles: options.stat !== false,
    badNames,
    keyRule,
    onSkip: options.onSkip,
  };
}

/** Compiles globs; patterns without `/` match basenames (picomatch's `basename` mode breaks patterns with `/`). */
function compileGlobs(patterns: readonly string[] | undefined, what: string): Matcher | undefined {
  if (patterns === undefined || patterns.length === 0) return undefined;
  for (const p of patterns) {
    if (typeof p !== 'string' || p === '') {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected non-empty glob strings for ${what} but received ${JSON.stringify(p)}`);
    }
  }
  const withSlash = patterns.filter((p) => p.includes('/'));
  const bare = patterns.filter((p) => !p.includes('/'));
  const matchers: Matcher[] = [];
  if (withSlash.length > 0) matchers.push(picomatch(withSlash, { dot: true }));
  if (bare.length > 0) matchers.push(picomatch(bare, { dot: true, basename: true }));
  return (relPath) => matchers.some((m) => m(relPath));
}

export function emptyWalkStats(): WalkStats {
  return { files: 0, bytes: 0, directories: 0, skippedSymlinks: 0, skippedCycles: 0, skippedHidden: 0, skippedExcluded: 0, skippedOther: 0, skippedBadNames: 0, skippedDatasets: 0 };
}

/** Adds an entry left out for `reason` to its counter. */
export function countSkip(stats: WalkStats, reason: WalkSkipReason): void {
  if (reason === 'symlink') stats.skippedSymlinks++;
  else if (reason === 'cycle') stats.skippedCycles++;
  else if (reason === 'hidden') stats.skippedHidden++;
  else if (reason === 'excluded' || reason === 'not-included') stats.skippedExcluded++;
  else if (reason === 'not-utf8' || reason === 'no-key') stats.skippedBadNames++;
  else if (reason === 'dataset') stats.skippedDatasets++;
  else stats.skippedOther++;
}
