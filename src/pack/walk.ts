/**
 * Walks a source tree and yields its regular files in a deterministic byte order (see walk-order.ts), holding at
 * most two directory listings per level in memory (the one being walked and the next, read ahead), whatever the
 * size of the tree.
 */
import type { Dirent, Stats } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import { normalize, sep } from 'node:path';
import picomatch from 'picomatch';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { listingSortKey, sortListing, type WalkOrder } from './walk-order.js';

export type { WalkOrder } from './walk-order.js';

/** One regular file found by the walk. */
export interface WalkEntry {
  /** Path relative to the walk root, `/`-separated. */
  relPath: string;
  absPath: string;
  size: number;
  mtimeMs: number;
}

/** Why an entry was left out; counted in {@link WalkStats} and reported to `onSkip`. */
export type WalkSkipReason = 'symlink' | 'cycle' | 'hidden' | 'excluded' | 'not-included' | 'other';

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
}

export interface WalkOptions {
  /** `'sample'` (default): byte order of (key, ext), samples adjacent. `'path'`: byte order of the relative path. */
  order?: WalkOrder;
  /** Follow symbolic links to files and directories (default false: skip and count them). Loops are cut. */
  followSymlinks?: boolean;
  /** Visit names starting with `.` (default false: skip and count them). */
  includeHidden?: boolean;
  /**
   * Globs (picomatch, `dot: true`) a file's relative path must match one of; empty or absent means every file.
   * A pattern without `/` matches the basename anywhere (`*.jpg`), like rsync and .gitignore.
   */
  include?: readonly string[];
  /** Globs that leave a file out; a directory whose relative path matches is not entered at all. */
  exclude?: readonly string[];
  /**
   * lstat every file to report its size and mtime (default true). `false` skips that metadata call per file (the
   * directory entry already says it is a regular file): entries then carry size and mtimeMs -1, and the reader
   * checks the file itself (pack's fstat-read-fstat, as GNU tar does). On Lots Of Small Files this halves the
   * metadata operations of a pack.
   */
  stat?: boolean;
  /** Told about every entry left out (for `--verbose` listings). */
  onSkip?: (relPath: string, reason: WalkSkipReason) => void;
}

/** A walk: iterate it for the entries; `stats` fills in as it goes and restarts with each iteration. */
export interface SourceWalk extends AsyncIterable<WalkEntry> {
  readonly root: string;
  readonly stats: WalkStats;
  /**
   * The same entries in the same order, in chunks (the files of one listing between two subdirectories, or a
   * stat lookahead's worth): one await per chunk instead of one per file, for consumers of millions of files.
   */
  chunks(): AsyncIterable<WalkEntry[]>;
}

/** How many file stats run at once within a listing: overlaps metadata latency without unbounded fan-out. */
const STAT_LOOKAHEAD = 32;

interface Listed {
  name: string;
  relPath: string;
  absPath: string;
  isDirectory: boolean;
  sortKey: string;
  /** Known already for followed symlinks. */
  stats?: Stats;
}

function emptyStats(): WalkStats {
  return { files: 0, bytes: 0, directories: 0, skippedSymlinks: 0, skippedCycles: 0, skippedHidden: 0, skippedExcluded: 0, skippedOther: 0 };
}

type Matcher = (relPath: string) => boolean;

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

const utf8 = new TextDecoder('utf-8', { fatal: true });

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

function ioError(code: typeof ErrorCodes.INPUT | typeof ErrorCodes.INPUT_CHANGED, message: string, file: string, cause: unknown): ShardkitError {
  const sys = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new ShardkitError(code, sys === undefined ? message : `${message} (${sys})`, { file, cause });
}

/**
 * Walks `root` recursively and yields its regular files in byte order (see {@link WalkOptions.order}).
 * Memory holds two directory listings per level of depth (one read ahead), never the list of all paths.
 * @throws ShardkitError INPUT when the root or a directory cannot be read (names the path), or a name is not UTF-8;
 *   INPUT_CHANGED when a listed file vanishes or changes type before it is stat'ed.
 * @example
 * const walk = walkSource('data/train', { exclude: ['*.tmp'] });
 * for await (const entry of walk) console.log(entry.relPath, entry.size);
 * console.log(walk.stats.skippedHidden);
 */
export function walkSource(root: string, options: WalkOptions = {}): SourceWalk {
  const order = options.order ?? 'sample';
  if (order !== 'sample' && order !== 'path') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected one of sample, path for order but received ${String(order)}`);
  }
  const include = compileGlobs(options.include, 'include');
  const exclude = compileGlobs(options.exclude, 'exclude');
  const follow = options.followSymlinks === true;
  const includeHidden = options.includeHidden === true;
  const onSkip = options.onSkip;
  const statFiles = options.stat !== false;
  const stats = emptyStats();

  const skip = (relPath: string, reason: WalkSkipReason): void => {
    if (reason === 'symlink') stats.skippedSymlinks++;
    else if (reason === 'cycle') stats.skippedCycles++;
    else if (reason === 'hidden') stats.skippedHidden++;
    else if (reason === 'excluded' || reason === 'not-included') stats.skippedExcluded++;
    else stats.skippedOther++;
    onSkip?.(relPath, reason);
  };

  /**
   * Reads one directory's entries with their names as strings. Node decodes names as UTF-8 and puts U+FFFD where
   * the bytes are not UTF-8; only a listing that holds U+FFFD is read again as bytes, to tell a name that is not
   * UTF-8 (an error) from one that holds the character itself. (Reading every listing as bytes and decoding each
   * name took twice as long.)
   */
  async function readListing(absDir: string, relDir: string): Promise<Dirent[]> {
    let dirents: Dirent[];
    try {
      dirents = await readdir(absDir, { withFileTypes: true });
      if (dirents.some((d) => d.name.includes('\uFFFD'))) {
        const raw = await readdir(absDir, { withFileTypes: true, encoding: 'buffer' });
        for (const d of raw) decodeName(d.name, relDir);
      }
    } catch (err) {
      if (err instanceof ShardkitError) throw err;
      throw ioError(ErrorCodes.INPUT, `Cannot read source directory ${absDir}; check that it exists and is readable`, absDir, err);
    }
    return dirents;
  }

  /** Sorts one directory's entries; decides per entry whether it is a file, a directory or skipped. */
  async function list(absDir: string, relDir: string, dirents: Dirent[]): Promise<Listed[]> {
    const listed: Listed[] = [];
    for (const dirent of dirents) {
      const name = dirent.name;
      const relPath = relDir === '' ? name : `${relDir}/${name}`;
      // absDir is already normal (the resolved root, then names): concatenation is join without its normalising pass
      const absPath = absDir.endsWith(sep) ? `${absDir}${name}` : `${absDir}${sep}${name}`;
      if (!includeHidden && name.startsWith('.')) {
        skip(relPath, 'hidden');
        continue;
      }
      let isDirectory: boolean;
      let known: Stats | undefined;
      if (dirent.isSymbolicLink()) {
        if (!follow) {
          skip(relPath, 'symlink');
          continue;
        }
        try {
          known = await stat(absPath);
        } catch {
          skip(relPath, 'symlink'); // dangling or a link loop (ELOOP)
          continue;
        }
        if (!known.isDirectory() && !known.isFile()) {
          skip(relPath, 'other');
          continue;
        }
        isDirectory = known.isDirectory();
      } else if (dirent.isDirectory()) {
        isDirectory = true;
      } else if (dirent.isFile()) {
        isDirectory = false;
      } else {
        skip(relPath, 'other');
        continue;
      }
      if (exclude?.(relPath) === true) {
        skip(relPath, 'excluded');
        continue;
      }
      if (!isDirectory && include !== undefined && !include(relPath)) {
        skip(relPath, 'not-included');
        continue;
      }
      const entry: Listed = { name, relPath, absPath, isDirectory, sortKey: listingSortKey(name, isDirectory, order) };
      if (known !== undefined) entry.stats = known;
      listed.push(entry);
    }
    return sortListing(listed);
  }

  async function statFile(entry: Listed): Promise<Stats> {
    if (entry.stats !== undefined) return entry.stats;
    let s: Stats;
    try {
      s = await lstat(entry.absPath);
    } catch (err) {
      const vanished = (err as NodeJS.ErrnoException).code === 'ENOENT';
      throw ioError(
        vanished ? ErrorCodes.INPUT_CHANGED : ErrorCodes.INPUT,
        vanished ? `Source file ${entry.absPath} vanished during the walk` : `Cannot stat source file ${entry.absPath}`,
        entry.absPath,
        err,
      );
    }
    if (!s.isFile()) {
      throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `Source file ${entry.absPath} stopped being a regular file during the walk`, { file: entry.absPath });
    }
    return s;
  }

  /** dev:ino of the directories being walked, root to current, to cut loops through followed links. */
  const ancestors = new Set<string>();

  /**
   * The listing of the first directory in `listed` from `from` on, started now (its rejection is kept for the walk to
   * meet when it gets there). The walk reads the next directory while the consumer works on this one's files: a
   * listing is a thread-pool round trip, which would otherwise stall a consumer that is waiting for the next chunk.
   */
  function listAhead(listed: Listed[], from: number): { index: number; dirents: Promise<Dirent[]> } | undefined {
    for (let j = from; j < listed.length; j++) {
      const entry = listed[j] as Listed;
      if (!entry.isDirectory) continue;
      const dirents = readListing(entry.absPath, entry.relPath);
      dirents.catch(() => undefined);
      return { index: j, dirents };
    }
    return undefined;
  }

  /** Walks one directory; `listing` is its entries when read ahead. */
  async function* walkDirectory(absDir: string, relDir: string, listing?: Promise<Dirent[]>): AsyncGenerator<WalkEntry[]> {
    let identity: string | undefined;
    if (follow) {
      const s = await stat(absDir).catch((err: unknown) => {
        throw ioError(ErrorCodes.INPUT, `Cannot stat source directory ${absDir}`, absDir, err);
      });
      identity = `${s.dev}:${s.ino}`;
      if (ancestors.has(identity)) {
        skip(relDir, 'cycle');
        return;
      }
      ancestors.add(identity);
    }
    stats.directories++;
    try {
      const listed = await list(absDir, relDir, await (listing ?? readListing(absDir, relDir)));
      let ahead = listAhead(listed, 0);
      // Stats of the next files run concurrently; results are consumed in listing order.
      const pending = new Map<number, Promise<Stats>>();
      let chunk: WalkEntry[] = [];
      for (let i = 0; i < listed.length; i++) {
        const entry = listed[i] as Listed;
        if (entry.isDirectory) {
          if (chunk.length > 0) yield chunk;
          chunk = [];
          const mine = ahead?.index === i ? ahead.dirents : undefined;
          ahead = listAhead(listed, i + 1);
          yield* walkDirectory(entry.absPath, entry.relPath, mine);
          continue;
        }
        if (!statFiles && entry.stats === undefined) {
          stats.files++;
          chunk.push({ relPath: entry.relPath, absPath: entry.absPath, size: -1, mtimeMs: -1 });
          continue;
        }
        for (let j = i; j < listed.length && j < i + STAT_LOOKAHEAD; j++) {
          const next = listed[j] as Listed;
          if (next.isDirectory) break;
          if (!pending.has(j)) {
            const p = statFile(next);
            p.catch(() => undefined); // surfaced when awaited in order below
            pending.set(j, p);
          }
        }
        const s = await (pending.get(i) as Promise<Stats>);
        pending.delete(i);
        stats.files++;
        stats.bytes += s.size;
        chunk.push({ relPath: entry.relPath, absPath: entry.absPath, size: s.size, mtimeMs: s.mtimeMs });
        if (chunk.length >= STAT_LOOKAHEAD) {
          yield chunk;
          chunk = [];
        }
      }
      if (chunk.length > 0) yield chunk;
    } finally {
      if (identity !== undefined) ancestors.delete(identity);
    }
  }

  async function* chunks(): AsyncGenerator<WalkEntry[]> {
    Object.assign(stats, emptyStats());
    ancestors.clear();
    let rootStats: Stats;
    try {
      rootStats = await stat(root);
    } catch (err) {
      throw ioError(ErrorCodes.INPUT, `Cannot open source directory ${root}; check the path`, root, err);
    }
    if (!rootStats.isDirectory()) {
      throw new ShardkitError(ErrorCodes.INPUT, `Source ${root} is not a directory; pack takes a directory of files`, { file: root });
    }
    yield* walkDirectory(normalize(root), '');
  }

  return {
    root,
    stats,
    chunks,
    async *[Symbol.asyncIterator]() {
      for await (const chunk of chunks()) yield* chunk;
    },
  };
}

export { groupSamples, walkSamples, type SourceSample, type SampleWalk } from './group-samples.js';
