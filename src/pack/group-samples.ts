/**
 * Groups walked files into WebDataset samples: consecutive files with one key form one sample.
 * Needs the walk in `'sample'` order (key, then ext), where every sample's files are adjacent and keys ascend;
 * it checks that instead of buffering, so memory stays at one sample.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { compareKeys } from '../../formats/key-order.js';
import { splitKey } from '../../formats/sample.js';
import { walkSource, type WalkEntry, type WalkOptions, type WalkStats } from './walk.js';

/** The files of one sample, before their bytes are read. */
export interface SourceSample {
  key: string;
  /** One file per member, in walk order (byte order of ext). */
  files: WalkEntry[];
  /** The member extensions, parallel to `files`. */
  exts: string[];
}

/**
 * Groups entries by WebDataset key (`splitKey` of the relative path).
 * @throws ShardkitError INPUT for a name whose first dot is its last character (`a.`): WebDataset cannot tell it
 *   from `a`. DUPLICATE_KEY when a (key, ext) pair repeats (two source names that decode to one
 *   string) or the entries are not in sample order (a key comes back after another one: walk with
 *   `order: 'sample'`).
 */
export async function* groupSamples(entries: AsyncIterable<WalkEntry>): AsyncGenerator<SourceSample> {
  let current: SourceSample | undefined;
  let lastExt = '';
  for await (const entry of entries) {
    const { key, ext } = splitKey(entry.relPath);
    if (ext === '' && key !== entry.relPath) {
      // 'a.' splits to key 'a', ext '': stored under that name it would come back as 'a'.
      throw new ShardkitError(
        ErrorCodes.INPUT,
        `Source file ${entry.relPath} ends with the first dot of its name, so it has no WebDataset key/extension split that restores the name; rename it`,
        { key, file: entry.absPath },
      );
    }
    if (current !== undefined && key === current.key) {
      const order = compareKeys(ext, lastExt);
      if (order === 0) {
        throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `Two source files give sample ${key} the member ${ext === '' ? '(no extension)' : ext}: ${entry.relPath}`, { key, file: entry.absPath });
      }
      if (order < 0) throw outOfOrder(entry.relPath, `${current.key}.${lastExt}`, key);
      current.files.push(entry);
      current.exts.push(ext);
      lastExt = ext;
      continue;
    }
    if (current !== undefined) {
      if (compareKeys(key, current.key) < 0) throw outOfOrder(entry.relPath, current.key, key);
      yield current;
    }
    current = { key, files: [entry], exts: [ext] };
    lastExt = ext;
  }
  if (current !== undefined) yield current;
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
}

/**
 * `groupSamples(walkSource(root, { ...options, order: 'sample' }))` with the walk's stats attached: what `pack`
 * iterates.
 * @example
 * const samples = walkSamples('data/train');
 * for await (const s of samples) console.log(s.key, s.exts);
 */
export function walkSamples(root: string, options: Omit<WalkOptions, 'order'> = {}): SampleWalk {
  const walk = walkSource(root, { ...options, order: 'sample' });
  return {
    stats: walk.stats,
    [Symbol.asyncIterator]: () => groupSamples(walk)[Symbol.asyncIterator](),
  };
}
