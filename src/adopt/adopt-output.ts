/**
 * Where `shardkit index` may write. It never deletes a tar, and writes only the index, the manifest and a link per
 * tar, so a directory may hold the tars it indexes (they are used in place), but nothing else of the user's: as for
 * pack and merge, a non-empty directory that holds no dataset is refused, --force or not, since the index and
 * manifest would overwrite files of those names. `--force` replaces the index and manifest of a dataset `index`
 * made; a dataset pack, merge or derive made is refused even with it (replacing it would leave its shards behind,
 * and deleting them is not what index does).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { INDEX_MAGIC } from '../../formats/index-layout.js';
import { ADOPTED_EXTRA_KEY, MANIFEST_FILE } from '../../formats/manifest.js';
import { SHARD_INDEX_FILE, WIDS_KIND } from '../../formats/shard-index.js';
import { INDEX_FILE } from '../pack/commit.js';
import { fsCall, makeDir } from '../pack/fs-errors.js';
import { ADOPT_WORK_DIR } from './scan-tar.js';
import { LOCK_FILE } from '../pack/write-lock.js';
import { REPLACED_MANIFEST } from '../pack/output-dir.js';
import { TEMP_PREFIX } from '../pack/replace-file.js';

export interface AdoptInput {
  real: string;
  st: fs.Stats;
}

/** Creates `out` when missing, or checks that `index` may write there (see above). */
export function prepareAdoptOutput(out: string, inputs: readonly AdoptInput[], force: boolean): void {
  makeDir(out);
  // a dataset there, or one a killed `index --force` was replacing (its manifest moved aside until the new one is in)
  const replaced = path.join(out, REPLACED_MANIFEST);
  const manifestFile = fs.existsSync(replaced) && !fs.existsSync(path.join(out, MANIFEST_FILE)) ? replaced : path.join(out, MANIFEST_FILE);
  if (fs.existsSync(manifestFile)) {
    if (!force) throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${out} already holds a dataset${manifestFile === replaced ? ' (a killed index --force was replacing it)' : ''}; use --force to replace its index and manifest`, { file: out });
    if (!madeByIndex(manifestFile)) {
      throw new ShardkitError(
        ErrorCodes.OUTPUT_EXISTS,
        `${out} holds a dataset that pack, merge or derive wrote; index --force replaces only the index and manifest of one that index made (it never deletes shards): index into a new or empty directory`,
        { file: out },
      );
    }
    return;
  }
  const others = fsCall('list', out, () => fs.readdirSync(out)).filter((name) => name !== LOCK_FILE && !writtenByIndex(out, name, inputs));
  if (others.length > 0) {
    const shown = others.slice(0, 3).join(', ') + (others.length > 3 ? ` and ${others.length - 3} more` : '');
    throw new ShardkitError(
      ErrorCodes.OUTPUT_EXISTS,
      `${out} is not empty and holds no shardkit dataset (${shown}); index into a new or empty directory, or one that holds only the tars to index`,
      { file: out },
    );
  }
}

/** A manifest that records the adoption rules (unreadable: not known to be index's). */
function madeByIndex(file: string): boolean {
  try {
    const m = JSON.parse(fs.readFileSync(file, 'utf8')) as { extra?: Record<string, unknown> };
    return typeof m.extra?.[ADOPTED_EXTRA_KEY] === 'object';
  } catch {
    return false;
  }
}

/**
 * What an output without a manifest may hold: the tars to index (in place, or a link an earlier run made to one),
 * and what an interrupted `index` leaves (its work directory, an index file, a wids shard index, the temporary names).
 */
function writtenByIndex(out: string, name: string, inputs: readonly AdoptInput[]): boolean {
  // temporaries (a killed run's) are never a tar's name in `out`: see writerName in adopt-tars.ts
  if (name === ADOPT_WORK_DIR || name.startsWith(TEMP_PREFIX)) return true;
  const file = path.join(out, name);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch {
    return false;
  }
  if (name === INDEX_FILE) return st.isFile() && startsWithIndexMagic(file);
  if (name === SHARD_INDEX_FILE) return st.isFile() && isWidsShardIndex(file);
  if (st.isSymbolicLink()) {
    let target: string;
    try {
      target = fs.realpathSync(file);
    } catch {
      return false;
    }
    return inputs.some((i) => i.real === target);
  }
  // the tar itself, in place, or a hard link to it
  return st.isFile() && inputs.some((i) => i.st.ino === st.ino && i.st.dev === st.dev);
}

/** A shardindex.json as commitDataset writes it (a user's file of that name is not index's to replace). */
function isWidsShardIndex(file: string): boolean {
  try {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as { __kind__?: unknown; name?: unknown };
    return doc.__kind__ === WIDS_KIND && typeof doc.name === 'string' && doc.name.startsWith('shardkit-');
  } catch {
    return false;
  }
}

function startsWithIndexMagic(file: string): boolean {
  const head = Buffer.alloc(INDEX_MAGIC.length);
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    return fs.readSync(fd, head, 0, head.length, 0) === head.length && head.equals(Buffer.from(INDEX_MAGIC));
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
