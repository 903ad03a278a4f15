/**
 * Walks a source tree and yields its regular files in a deterministic byte order (see walk-order.ts), holding at
 * most two directory listings per level in memory (the one being walked and the next, read ahead), whatever the
 * size of the tree.
 */
import type { Stats } from 'node:fs';
import { lstat, readFile, stat } from 'node:fs/promises';
import { normalize, sep } from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { noKeyReason } from '../../formats/sample.js';
import { MANIFEST_FILE, MANIFEST_FORMAT } from '../../formats/manifest.js';
import { WORK_DIR } from './journal.js';
import { LOCK_FILE } from './write-lock.js';
import { nativeAddon } from '../native/native.js';
import { ioError, KIND_DIRECTORY, KIND_FILE, KIND_LINK, readDirectory, type RawListing } from './walk-listing.js';
import { listingSortKey, sortListing } from './walk-order.js';
import { countSkip, emptyWalkStats, walkSettings, type WalkOptions, type WalkSkipReason, type WalkStats } from './walk-options.js';

export type { WalkOrder } from './walk-order.js';
export type { WalkOptions, WalkSkipReason, WalkStats } from './walk-options.js';

/** One regular file found by the walk. */
export interface WalkEntry {
  /** Path relative to the walk root, `/`-separated. */
  relPath: string;
  absPath: string;
  size: number;
  mtimeMs: number;
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
  /**
   * The same files by name, a run per listing between two subdirectories, without an object per file and without
   * stat'ing them (whatever `stat` says; `stats.bytes` stays 0): for consumers that need names only.
   */
  runs(): AsyncIterable<FileRun>;
}

/**
 * Whether a directory with these entries holds a shardkit dataset (a manifest.json of format shardkit-dataset) or a
 * write of one (the journal's work directory, a writer's lock): what pack's summary calls a dataset directory.
 */
async function holdsDataset(absDir: string, names: readonly string[]): Promise<boolean> {
  if (names.includes(WORK_DIR) || names.includes(LOCK_FILE)) return true;
  if (!names.includes(MANIFEST_FILE)) return false;
  try {
    const manifest = JSON.parse(await readFile(childPath(absDir, MANIFEST_FILE), 'utf8')) as { format?: unknown };
    return manifest.format === MANIFEST_FORMAT;
  } catch {
    return false; // unreadable or not JSON: a user's file that happens to be called manifest.json
  }
}

/** How many file stats run at once within a listing: overlaps metadata latency without unbounded fan-out. */
const STAT_LOOKAHEAD = 32;

const DOT = '.'.charCodeAt(0);

/** An entry of a listing the walk keeps: its name, whether it is a directory, and a followed link's stats. */
interface Listed {
  name: string;
  isDirectory: boolean;
  /** Set only when the listing is sorted here. */
  sortKey: string;
  /** Known already for followed symlinks. */
  stats?: Stats;
}

/**
 * Files of one directory that come one after another in the walk (between two of its subdirectories), by name:
 * relative path `${relDir}/${name}` (just `name` at the root), absolute path `${absDir}${sep}${name}`.
 */
export interface FileRun {
  absDir: string;
  relDir: string;
  names: string[];
  /** Stats of followed links to files, by index into `names` (absent when there are none). */
  known?: (Stats | undefined)[];
}

/** A file's relative path in a run. */
export function runRelPath(run: FileRun, name: string): string {
  return childRelPath(run.relDir, name);
}

/** A file's absolute path in a run. */
export function runAbsPath(run: FileRun, name: string): string {
  return childPath(run.absDir, name);
}

/** The path of `name` in directory `absDir` (already normal: concatenation is join without its normalising pass). */
function childPath(absDir: string, name: string): string {
  return absDir.endsWith(sep) ? `${absDir}${name}` : `${absDir}${sep}${name}`;
}

function childRelPath(relDir: string, name: string): string {
  return relDir === '' ? name : `${relDir}/${name}`;
}

/**
 * Walks `root` recursively and yields its regular files in byte order (see {@link WalkOptions.order}).
 * Memory holds two directory listings per level of depth (one read ahead), never the list of all paths.
 * @throws ShardkitError INPUT when the root or a directory cannot be read (names the path), or (badNames 'fail') a
 *   name is not UTF-8 or a file name gives no key; INPUT_CHANGED when a listed file vanishes or changes type before it is stat'ed.
 * @example
 * const walk = walkSource('data/train', { exclude: ['*.tmp'] });
 * for await (const entry of walk) console.log(entry.relPath, entry.size);
 * console.log(walk.stats.skippedHidden);
 */
export function walkSource(root: string, options: WalkOptions = {}): SourceWalk {
  const { order, include, exclude, follow, includeHidden, statFiles, badNames, keyRule, onSkip } = walkSettings(options);
  const stats = emptyWalkStats();
  const listDirectory = nativeAddon()?.listDirectory;
  const readListing = (absDir: string, relDir: string): Promise<RawListing> => readDirectory(absDir, relDir, order, listDirectory, keyRule);

  const skip = (relPath: string, reason: WalkSkipReason, error?: ShardkitError): void => {
    countSkip(stats, reason);
    if (error === undefined) onSkip?.(relPath, reason);
    else onSkip?.(relPath, reason, error);
  };

  /** Why a name that is not UTF-8 is left out: a filter's reason where one applies, else its bytes. */
  const badNameReason = (name: string, kind: number, relPath: string): WalkSkipReason => {
    if (!includeHidden && name.charCodeAt(0) === DOT) return 'hidden';
    if (kind === KIND_LINK && !follow) return 'symlink';
    if (kind !== KIND_FILE && kind !== KIND_DIRECTORY && kind !== KIND_LINK) return 'other';
    if (exclude?.(relPath) === true) return 'excluded';
    if (kind === KIND_FILE && include?.(relPath) === false) return 'not-included';
    return 'not-utf8';
  };

  /** Sorts one directory's entries (unless listed sorted); decides per entry whether it is a file, a directory or skipped. */
  async function list(absDir: string, relDir: string, listing: RawListing): Promise<Listed[]> {
    const listed: Listed[] = [];
    const { kinds, names } = listing;
    // a followed link to a directory sorts as one: the listing's order (links as files) no longer holds
    let sorted = listing.sorted;
    const relPrefix = relDir === '' ? '' : `${relDir}/`;
    // the walk's filters first: a hidden, linked or excluded name is left out for that, as any other name would be
    for (const bad of listing.badNames ?? []) {
      const relPath = `${relPrefix}${bad.name}`;
      const reason = badNameReason(bad.name, bad.kind.charCodeAt(0), relPath);
      if (reason === 'not-utf8' && badNames === 'fail') throw bad.error;
      skip(relPath, reason);
    }
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      const kind = kinds.charCodeAt(i);
      if (!includeHidden && name.charCodeAt(0) === DOT) {
        skip(`${relPrefix}${name}`, 'hidden');
        continue;
      }
      let isDirectory: boolean;
      let known: Stats | undefined;
      if (kind === KIND_LINK) {
        if (!follow) {
          skip(`${relPrefix}${name}`, 'symlink');
          continue;
        }
        try {
          known = await stat(childPath(absDir, name));
        } catch {
          skip(`${relPrefix}${name}`, 'symlink'); // dangling or a link loop (ELOOP)
          continue;
        }
        if (!known.isDirectory() && !known.isFile()) {
          skip(`${relPrefix}${name}`, 'other');
          continue;
        }
        isDirectory = known.isDirectory();
        if (isDirectory) sorted = false;
      } else if (kind === KIND_DIRECTORY) {
        isDirectory = true;
      } else if (kind === KIND_FILE) {
        isDirectory = false;
      } else {
        skip(`${relPrefix}${name}`, 'other');
        continue;
      }
      if (exclude !== undefined || (include !== undefined && !isDirectory)) {
        const relPath = `${relPrefix}${name}`;
        if (exclude?.(relPath) === true) {
          skip(relPath, 'excluded');
          continue;
        }
        if (!isDirectory && include !== undefined && !include(relPath)) {
          skip(relPath, 'not-included');
          continue;
        }
      }
      // after the filters: an excluded name is left out for that; a file name that gives no key stops the walk or is skipped
      if (!isDirectory && (name.charCodeAt(0) === DOT || name.charCodeAt(name.length - 1) === DOT)) {
        const why = noKeyReason(name, keyRule);
        if (why !== undefined) {
          const relPath = `${relPrefix}${name}`;
          const error = new ShardkitError(ErrorCodes.INPUT, `Source file ${relPath} has no WebDataset key: ${why}`, { file: childPath(absDir, name) });
          if (badNames === 'fail') throw error;
          skip(relPath, 'no-key', error);
          continue;
        }
      }
      const entry: Listed = { name, isDirectory, sortKey: '' };
      if (known !== undefined) entry.stats = known;
      listed.push(entry);
    }
    if (sorted) return listed;
    for (const entry of listed) entry.sortKey = listingSortKey(entry.name, entry.isDirectory, order, keyRule);
    return sortListing(listed);
  }

  async function statFile(absPath: string): Promise<Stats> {
    let s: Stats;
    try {
      s = await lstat(absPath);
    } catch (err) {
      const vanished = (err as NodeJS.ErrnoException).code === 'ENOENT';
      throw ioError(
        vanished ? ErrorCodes.INPUT_CHANGED : ErrorCodes.INPUT,
        vanished ? `Source file ${absPath} vanished during the walk` : `Cannot stat source file ${absPath}`,
        absPath,
        err,
      );
    }
    if (!s.isFile()) {
      throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `Source file ${absPath} stopped being a regular file during the walk`, { file: absPath });
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
  function listAhead(absDir: string, relDir: string, listed: Listed[], from: number): { index: number; listing: Promise<RawListing> } | undefined {
    for (let j = from; j < listed.length; j++) {
      const entry = listed[j] as Listed;
      if (!entry.isDirectory) continue;
      const listing = readListing(childPath(absDir, entry.name), childRelPath(relDir, entry.name));
      listing.catch(() => undefined);
      return { index: j, listing };
    }
    return undefined;
  }

  /** Walks one directory: its files in runs, its subdirectories in between; `listing` is its entries when read ahead. */
  async function* walkDirectory(absDir: string, relDir: string, listing?: Promise<RawListing>): AsyncGenerator<FileRun> {
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
    try {
      let raw: RawListing;
      try {
        raw = await (listing ?? readListing(absDir, relDir));
      } catch (err) {
        // a directory whose path is past PATH_MAX cannot be listed, and its keys would not fit an index anyway: with
        // badNames 'skip' it is left out and listed, like a name that gives no key
        if (badNames !== 'skip' || ((err as ShardkitError).cause as NodeJS.ErrnoException | undefined)?.code !== 'ENAMETOOLONG') throw err;
        skip(relDir, 'no-key', new ShardkitError(ErrorCodes.TOO_LARGE, `${absDir}: the path is longer than the system allows (ENAMETOOLONG), and its keys longer than an index holds`, { file: absDir }));
        return;
      }
      // an earlier pack's output inside the source is a dataset, not samples: packing it again would double the data
      if (relDir !== '' && (await holdsDataset(absDir, raw.names))) {
        skip(relDir, 'dataset');
        return;
      }
      stats.directories++;
      const listed = await list(absDir, relDir, raw);
      let ahead = listAhead(absDir, relDir, listed, 0);
      let run: FileRun = { absDir, relDir, names: [] };
      for (let i = 0; i < listed.length; i++) {
        const entry = listed[i] as Listed;
        if (entry.isDirectory) {
          if (run.names.length > 0) yield run;
          run = { absDir, relDir, names: [] };
          const mine = ahead?.index === i ? ahead.listing : undefined;
          ahead = listAhead(absDir, relDir, listed, i + 1);
          yield* walkDirectory(childPath(absDir, entry.name), childRelPath(relDir, entry.name), mine);
          continue;
        }
        if (entry.stats !== undefined) (run.known ??= [])[run.names.length] = entry.stats;
        run.names.push(entry.name);
        stats.files++;
      }
      if (run.names.length > 0) yield run;
    } finally {
      if (identity !== undefined) ancestors.delete(identity);
    }
  }

  async function* runs(): AsyncGenerator<FileRun> {
    Object.assign(stats, emptyWalkStats());
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

  /** The runs as entries: stat'ed (a few at once, in order) unless `stat` is false, in chunks of at most STAT_LOOKAHEAD then. */
  async function* chunks(): AsyncGenerator<WalkEntry[]> {
    for await (const run of runs()) {
      const entry = (i: number, size: number, mtimeMs: number): WalkEntry => {
        const name = run.names[i] as string;
        return { relPath: runRelPath(run, name), absPath: runAbsPath(run, name), size, mtimeMs };
      };
      if (!statFiles) {
        yield run.names.map((_, i) => {
          const known = run.known?.[i];
          if (known === undefined) return entry(i, -1, -1);
          stats.bytes += known.size;
          return entry(i, known.size, known.mtimeMs);
        });
        continue;
      }
      // stats of the next files run concurrently; results are consumed in listing order
      const pending = new Map<number, Promise<Stats>>();
      let chunk: WalkEntry[] = [];
      for (let i = 0; i < run.names.length; i++) {
        for (let j = i; j < run.names.length && j < i + STAT_LOOKAHEAD; j++) {
          if (pending.has(j)) continue;
          const known = run.known?.[j];
          const p = known !== undefined ? Promise.resolve(known) : statFile(runAbsPath(run, run.names[j] as string));
          p.catch(() => undefined); // surfaced when awaited in order below
          pending.set(j, p);
        }
        const s = await (pending.get(i) as Promise<Stats>);
        pending.delete(i);
        stats.bytes += s.size;
        chunk.push(entry(i, s.size, s.mtimeMs));
        if (chunk.length >= STAT_LOOKAHEAD) {
          yield chunk;
          chunk = [];
        }
      }
      if (chunk.length > 0) yield chunk;
    }
  }

  return {
    root,
    stats,
    chunks,
    runs,
    async *[Symbol.asyncIterator]() {
      for await (const chunk of chunks()) yield* chunk;
    },
  };
}

export { groupSamples, walkSamples, type SourceSample, type SampleWalk } from './group-samples.js';
