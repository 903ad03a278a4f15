/**
 * Groups walked files into WebDataset samples: consecutive files with one key form one sample.
 * Needs the walk in `'sample'` order (key, then ext), where every sample's files are adjacent and keys ascend;
 * it checks that instead of buffering, so memory stays at one sample.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { compareKeys } from '../../formats/key-order.js';
import { keyDot, noKeyReason, splitKey, type KeyRule } from '../../formats/sample.js';
import { runAbsPath, runRelPath, walkSource, type FileRun, type SourceWalk, type WalkEntry, type WalkOptions, type WalkStats } from './walk.js';

const DOT = '.'.charCodeAt(0);

/** How the groupers cut names into samples. */
export interface GroupOptions {
  /** Keep files named `stem.N.ext` together as members of sample `stem` (see MAX_NUMBERED_MEMBERS). */
  groupNumbered?: boolean;
  /** Where a name's key ends (see KeyRule); default 'webdataset'. Under 'path' no extension begins a number's run. */
  keyRule?: KeyRule;
}

/** The files of one sample, before their bytes are read. */
export interface SourceSample {
  key: string;
  /** One file per member, in walk order (byte order of ext). */
  files: WalkEntry[];
  /** The member extensions, parallel to `files`. */
  exts: string[];
}

/**
 * Groups entries by WebDataset key, one entry at a time: `push` returns the sample the entry completed (the
 * previous one, when the key changes), `end` the last one. Synchronous, so a caller can group a whole chunk of a
 * walk without an await per file.
 * @throws ShardkitError INPUT for a file name that gives no key (see noKeyReason: `a.`, which WebDataset cannot
 *   tell from `a`, or `.a`); a pack's walk leaves those out first (or stops on them). DUPLICATE_KEY when a (key, ext) pair repeats (two source names that decode to one
 *   string) or the entries are not in sample order (a key comes back after another one: walk with
 *   `order: 'sample'`).
 */
export class SampleGrouper {
  private current: SourceSample | undefined;
  private lastExt = '';
  private readonly numbered: NumberedMembers;
  private readonly keyRule: KeyRule;

  constructor(options: GroupOptions = {}) {
    this.numbered = new NumberedMembers(options.groupNumbered === true || options.keyRule === 'path');
    this.keyRule = options.keyRule ?? 'webdataset';
  }

  push(entry: WalkEntry): SourceSample | undefined {
    const { key, ext } = splitKey(entry.relPath, this.keyRule);
    const why = noKeyReason(entry.relPath.slice(entry.relPath.lastIndexOf('/') + 1), this.keyRule);
    if (why !== undefined) throw noKey(entry.relPath, why, entry.absPath);
    const current = this.current;
    if (current !== undefined && key === current.key) {
      const order = compareKeys(ext, this.lastExt);
      if (order === 0) throw duplicateMember(key, ext, entry.relPath, entry.absPath);
      if (order < 0) throw outOfOrder(entry.relPath, `${current.key}.${this.lastExt}`, key);
      this.numbered.member(key, ext, entry.relPath);
      current.files.push(entry);
      current.exts.push(ext);
      this.lastExt = ext;
      return undefined;
    }
    if (current !== undefined && compareKeys(key, current.key) < 0) throw outOfOrder(entry.relPath, current.key, key);
    this.numbered.start();
    this.numbered.member(key, ext, entry.relPath);
    this.current = { key, files: [entry], exts: [ext] };
    this.lastExt = ext;
    return current;
  }

  end(): SourceSample | undefined {
    const last = this.current;
    this.current = undefined;
    return last;
  }
}

/** Groups entries by WebDataset key (see {@link SampleGrouper} for the rules and errors). */
export async function* groupSamples(entries: AsyncIterable<WalkEntry>): AsyncGenerator<SourceSample> {
  const grouper = new SampleGrouper();
  for await (const entry of entries) {
    const done = grouper.push(entry);
    if (done !== undefined) yield done;
  }
  const last = grouper.end();
  if (last !== undefined) yield last;
}

/**
 * The samples of a walk's file runs, by name only: no object per file or sample, for pack's walking thread. Needs
 * the runs of a walk in `'sample'` order; the same rules and errors as {@link SampleGrouper}. A run's files are one
 * directory's, sorted by (stem, ext), so a sample's members are adjacent in one run and keys ascend.
 */
export class RunGrouper {
  private lastKey: string | undefined;
  private readonly numbered: NumberedMembers;
  private readonly keyRule: KeyRule;

  constructor(options: GroupOptions = {}) {
    this.numbered = new NumberedMembers(options.groupNumbered === true || options.keyRule === 'path');
    this.keyRule = options.keyRule ?? 'webdataset';
  }

  /** The run's samples, flat: per sample its key and member count, and all their extensions in order. */
  group(run: FileRun): { keys: string[]; counts: number[]; exts: string[] } {
    const keys: string[] = [];
    const counts: number[] = [];
    const exts: string[] = [];
    const prefix = run.relDir === '' ? '' : `${run.relDir}/`;
    let stem: string | undefined;
    let lastExt = '';
    for (const name of run.names) {
      const dot = keyDot(name, this.keyRule);
      const ext = dot < 0 ? '' : name.slice(dot + 1);
      if (dot === 0 || (dot > 0 && ext === '') || name.charCodeAt(0) === DOT) {
        const why = noKeyReason(name, this.keyRule);
        if (why !== undefined) throw noKey(runRelPath(run, name), why, runAbsPath(run, name));
      }
      const nameStem = dot < 0 ? name : name.slice(0, dot);
      if (nameStem === stem) {
        const order = compareKeys(ext, lastExt);
        const key = this.lastKey as string;
        if (order === 0) throw duplicateMember(key, ext, runRelPath(run, name), runAbsPath(run, name));
        if (order < 0) throw outOfOrder(runRelPath(run, name), `${key}.${lastExt}`, key);
        this.numbered.member(key, ext, runRelPath(run, name));
        counts[counts.length - 1] = (counts[counts.length - 1] as number) + 1;
      } else {
        const key = `${prefix}${nameStem}`;
        if (this.lastKey !== undefined && compareKeys(key, this.lastKey) <= 0) throw outOfOrder(runRelPath(run, name), this.lastKey, key);
        this.numbered.start();
        this.numbered.member(key, ext, runRelPath(run, name));
        keys.push(key);
        counts.push(1);
        stem = nameStem;
        this.lastKey = key;
      }
      exts.push(ext);
      lastExt = ext;
    }
    return { keys, counts, exts };
  }
}

/**
 * More members than this whose extension begins with a number (`dog.0.jpg`, `dog.1.jpg`, ... give key `dog`,
 * members `0.jpg`, `1.jpg`, ...) stop the walk: Kaggle-style names that WebDataset's key rule (the key ends at the
 * basename's first dot) folds into one sample. Frames or views of one sample named that way are rarer; for them,
 * `groupNumbered` keeps the WebDataset grouping.
 */
export const MAX_NUMBERED_MEMBERS = 3;

const NUMBERED_EXT = /^\d+\./;

/** Counts one sample's numbered members as they come (see MAX_NUMBERED_MEMBERS). */
class NumberedMembers {
  private count = 0;
  private readonly paths: string[] = [];

  constructor(private readonly allowed: boolean) {}

  /** A new sample begins. */
  start(): void {
    this.count = 0;
    this.paths.length = 0;
  }

  member(key: string, ext: string, relPath: string): void {
    if (this.allowed || !NUMBERED_EXT.test(ext)) return;
    this.count++;
    this.paths.push(relPath);
    if (this.count > MAX_NUMBERED_MEMBERS) throw foldedNumbered(key, this.paths);
  }
}

/** Files named `stem.N.ext` that WebDataset's key rule folds into one sample. */
function foldedNumbered(key: string, paths: readonly string[]): ShardkitError {
  const stem = key.slice(key.lastIndexOf('/') + 1);
  const first = paths[0] as string;
  const renamed = first.slice(first.lastIndexOf('/') + 1).replace('.', '_');
  return new ShardkitError(
    ErrorCodes.INPUT,
    `Source files ${paths.join(', ')} and maybe more all get the key ${key} (a WebDataset key ends at the first dot of the ` +
      `name), so they would be packed as one sample with members ${paths.map((p) => p.slice(p.lastIndexOf('/') + stem.length + 2)).join(', ')}, ...: ` +
      `pass --key-rule path to key each file by its path without its last extension (${first} -> key ${first.slice(0, first.lastIndexOf('.'))}), ` +
      `rename them so that the number comes before the first dot (${renamed}), or, if they are parts of one sample, pass --group-numbered`,
    { key },
  );
}

/** A (key, ext) pair that repeats: two source names that decode to one string. */
function duplicateMember(key: string, ext: string, relPath: string, absPath: string): ShardkitError {
  return new ShardkitError(ErrorCodes.DUPLICATE_KEY, `Two source files give sample ${key} the member ${ext === '' ? '(no extension)' : ext}: ${relPath}`, { key, file: absPath });
}

/** A file name that gives no key ('a.', '.a'): the walk's own error for it (walk.ts), should one get this far. */
function noKey(relPath: string, why: string, absPath: string): ShardkitError {
  return new ShardkitError(ErrorCodes.INPUT, `Source file ${relPath} has no WebDataset key: ${why}`, { file: absPath });
}

function outOfOrder(relPath: string, previous: string, key: string): ShardkitError {
  return new ShardkitError(
    ErrorCodes.DUPLICATE_KEY,
    `Source file ${relPath} comes after ${previous}: samples must arrive grouped and in key order (walk with order 'sample')`,
    { key },
  );
}

/** A walk grouped into samples; `stats` are the walk's counters. */
export interface SampleWalk extends AsyncIterable<SourceSample> {
  readonly stats: WalkStats;
  /** The same samples in chunks, one await per chunk (see {@link SourceWalk.chunks}). */
  chunks(): AsyncIterable<SourceSample[]>;
}

/**
 * `groupSamples(walkSource(root, { ...options, order: 'sample' }))` with the walk's stats attached: what `pack`
 * iterates.
 * @example
 * const samples = walkSamples('data/train');
 * for await (const s of samples) console.log(s.key, s.exts);
 */
export function walkSamples(root: string, options: Omit<WalkOptions, 'order'> & { groupNumbered?: boolean } = {}): SampleWalk {
  const { groupNumbered, ...walkOptions } = options;
  const walk = walkSource(root, { ...walkOptions, order: 'sample' });
  async function* chunks(): AsyncGenerator<SourceSample[]> {
    const grouper = new SampleGrouper({ ...(groupNumbered === undefined ? {} : { groupNumbered }), ...(walkOptions.keyRule === undefined ? {} : { keyRule: walkOptions.keyRule }) });
    for await (const entries of walk.chunks()) {
      const samples: SourceSample[] = [];
      for (const entry of entries) {
        const done = grouper.push(entry);
        if (done !== undefined) samples.push(done);
      }
      if (samples.length > 0) yield samples;
    }
    const last = grouper.end();
    if (last !== undefined) yield [last];
  }
  return {
    stats: walk.stats,
    chunks,
    async *[Symbol.asyncIterator]() {
      for await (const samples of chunks()) yield* samples;
    },
  };
}
