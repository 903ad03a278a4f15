/**
 * `shardkit index`: gives existing WebDataset-style tar shards made by other tools random access, without
 * rewriting them. The output directory gets the index and manifest, and one directory entry per tar: a hard link
 * when the tar is on the same filesystem (the dataset then keeps working if the original path is removed or
 * replaced, and nothing can retarget it), else an absolute symbolic link. A tar already in the output directory is
 * used where it is. Manifest shard names stay plain file names; two inputs with the same basename get `-1`, `-2`, ...
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { DEFAULT_PAGE_SIZE, validatePageSize } from '../../formats/index-layout.js';
import { maxKeyBytes } from '../../formats/index-page.js';
import { ADOPTED_EXTRA_KEY, MANIFEST_FILE, type Manifest } from '../../formats/manifest.js';
import { SHARD_INDEX_FILE } from '../../formats/shard-index.js';
import { INDEX_FILE } from '../pack/dataset-writer.js';
import { expectLocalPath } from '../io/location.js';
import { fsCall, ioError } from '../pack/fs-errors.js';
import { prepareAdoptOutput, type AdoptInput } from './adopt-output.js';
import { ADOPT_WORK_DIR, scanTarShards, type ScanProgress } from './scan-tar.js';
import { writeDatasetFiles } from './write-dataset-files.js';
import { DEFAULT_MAX_MEMBER_BYTES } from '../read/dataset-options.js';
import { WriteLock } from '../pack/write-lock.js';
import { REPLACED_MANIFEST } from '../pack/output-dir.js';
import { LOCK_FILE } from '../pack/write-lock.js';
import { TEMP_PREFIX } from '../pack/replace-file.js';

/** Work directory for the external sort, removed when done. */
export { ADOPT_WORK_DIR };

export interface AdoptOptions {
  /** Output directory (created when missing). */
  out: string;
  /** Index page size (default 4096). */
  pageSize?: number;
  /** Replace the index and manifest of a dataset `index` made in `out` (its tars are kept). */
  force?: boolean;
  /** How tars outside `out` are referenced: 'auto' (hard link, else symlink; default), 'symlink'. */
  link?: 'auto' | 'symlink';
  onProgress?: (p: ScanProgress & { shard: number; shards: number }) => void;
}

export interface AdoptedShard {
  input: string;
  file: string;
  how: 'in-place' | 'hardlink' | 'symlink';
}

export interface AdoptResult {
  manifest: Manifest;
  shards: AdoptedShard[];
}

/** Indexes `tars` into a dataset in `options.out`. */
export async function adoptTars(tars: readonly string[], options: AdoptOptions): Promise<AdoptResult> {
  if (!Array.isArray(tars) || tars.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, 'Expected at least one tar file to index but received none');
  if (typeof options.out !== 'string' || options.out === '') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a directory path for out but received ${JSON.stringify(options.out)}`);
  expectLocalPath('--out', options.out);
  for (const t of tars) if (typeof t === 'string') expectLocalPath('a tar to index', t);
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  validatePageSize(pageSize);
  const inputs = tars.map((t) => {
    let st: fs.Stats;
    try {
      st = fs.statSync(t);
    } catch (cause) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `${t}: cannot read this tar (${(cause as NodeJS.ErrnoException).code ?? 'error'})`, { file: t, cause });
    }
    if (!st.isFile()) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${t} is not a regular file`, { file: t });
    return { input: t, real: fs.realpathSync(t), st };
  });
  const out = path.resolve(options.out);
  const lock = WriteLock.acquire(out, 'index'); // one writer at a time in `out`: two index runs broke each other's
  try {
    return await adoptInto(out, inputs, pageSize, options);
  } finally {
    lock.release();
  }
}

async function adoptInto(out: string, inputs: Array<AdoptInput & { input: string }>, pageSize: number, options: AdoptOptions): Promise<AdoptResult> {
  prepareAdoptOutput(out, inputs, options.force === true);
  const outReal = fs.realpathSync(out);
  const used = new Set<string>([MANIFEST_FILE, INDEX_FILE, ADOPT_WORK_DIR]);
  const placed: AdoptedShard[] = inputs.map(({ input, real, st }) => place(input, real, st, out, outReal, used, options.link ?? 'auto'));
  refuseInputsAtOutputNames(out, inputs);

  const skipped: { path: string; reason: string }[] = [];
  const rules = { style: 'webdataset' as const, lz4: 'no' as const, maxKeyBytes: maxKeyBytes(pageSize), maxMemberBytes: DEFAULT_MAX_MEMBER_BYTES };
  return scanTarShards(out, placed.map((p) => p.file), { ...rules, onSkip: (where, reason) => skipped.push({ path: where, reason }) }, options.onProgress, ({ sorter, shards }) => {
    // with --force, the dataset there stays usable until every tar has been scanned; its manifest goes before the
    // new index, so an interruption from here leaves no manifest rather than one that names another index. Moved
    // aside, not deleted: it tells a rerun that index wrote the files there (its links), until the new one is in
    const oldManifest = path.join(out, MANIFEST_FILE);
    const replaced = path.join(out, REPLACED_MANIFEST);
    if (fs.existsSync(oldManifest)) fsCall('rename', replaced, () => fs.renameSync(oldManifest, replaced));
    const manifest = writeDatasetFiles({
      dir: out,
      shards,
      sorter,
      layout: 'tar',
      compress: 'none',
      pageSize,
      passes: [],
      files: [],
      skipped,
      extra: { [ADOPTED_EXTRA_KEY]: { rules: 1, inputs: placed.map((p) => p.file) } },
      duplicates: 'skip',
    });
    fsCall('remove', replaced, () => fs.rmSync(replaced, { force: true }));
    return { manifest, shards: placed };
  });
}

/**
 * Names `index` itself creates or replaces in `out`: its index, manifest and wids shard index, their temporaries (`.tmp` names of
 * earlier versions, TEMP_PREFIX ones now), its lock and work directory. A tar is never linked or used under one: a
 * tar at `out/manifest.json.tmp` was overwritten with the manifest through the link.
 */
function writerName(name: string): boolean {
  return name === MANIFEST_FILE || name === INDEX_FILE || name === SHARD_INDEX_FILE || name === LOCK_FILE || name === REPLACED_MANIFEST || name === ADOPT_WORK_DIR || name.endsWith('.tmp') || name.startsWith('.shardkit-') || name.startsWith(TEMP_PREFIX);
}

/** A name for a tar that `index` never writes (see writerName): `manifest.json.tmp` -> `manifest.json_tmp.tar`. */
function adoptableName(name: string): string {
  if (!writerName(name)) return name;
  return `${name.replace(/^\./, '_').replace(/\.tmp$/, '_tmp')}.tar`;
}

/**
 * The last guard before the index and manifest are renamed into place: neither name may be an input (same inode,
 * or a link resolving to one), whatever put it there since the output was checked.
 */
function refuseInputsAtOutputNames(out: string, inputs: readonly AdoptInput[]): void {
  for (const name of [MANIFEST_FILE, INDEX_FILE]) {
    const file = path.join(out, name);
    const st = lstatOrUndefined(file);
    if (st === undefined) continue;
    const target = st.isSymbolicLink() ? safeRealpath(file) : undefined;
    const input = inputs.find((i) => (i.st.ino === st.ino && i.st.dev === st.dev) || i.real === target);
    if (input !== undefined) {
      throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${file} is the tar ${input.real} to index, and index writes its ${name} there; move the tar or index into another directory`, { file });
    }
  }
}

/** Chooses the tar's name in `out` and links it there (or finds it already there). */
function place(input: string, real: string, st: fs.Stats, out: string, outReal: string, used: Set<string>, link: 'auto' | 'symlink'): AdoptedShard {
  const base = adoptableName(plainName(path.basename(real)));
  if (path.dirname(real) === outReal && base === path.basename(real) && !used.has(base)) {
    used.add(base);
    return { input, file: base, how: 'in-place' };
  }
  const ext = base.endsWith('.tar') ? '.tar' : path.extname(base);
  const stem = base.slice(0, base.length - ext.length);
  for (let n = 0; ; n++) {
    const name = n === 0 ? base : `${stem}-${n}${ext}`;
    if (used.has(name) || writerName(name)) continue;
    const dest = path.join(out, name);
    const existing = lstatOrUndefined(dest);
    if (existing !== undefined) {
      // a previous run's link to this same tar is reused; anything else keeps its name
      const same = existing.isSymbolicLink() ? safeRealpath(dest) === real : existing.ino === st.ino && existing.dev === st.dev;
      if (!same) continue;
      used.add(name);
      return { input, file: name, how: existing.isSymbolicLink() ? 'symlink' : 'hardlink' };
    }
    used.add(name);
    if (link === 'auto') {
      try {
        fs.linkSync(real, dest);
        return { input, file: name, how: 'hardlink' };
      } catch (cause) {
        const code = (cause as NodeJS.ErrnoException).code;
        if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EMLINK') throw ioError(cause, 'link', dest);
      }
    }
    fsCall('symlink', dest, () => fs.symlinkSync(real, dest));
    return { input, file: name, how: 'symlink' };
  }
}

/** A name the manifest accepts and resolveLocation keeps local: no backslash, nothing that reads as a URL scheme. */
function plainName(name: string): string {
  const noBackslash = name.replace(/\\/g, '_');
  return /^[a-z][a-z0-9+.-]*:/i.test(noBackslash) ? noBackslash.replace(':', '_') : noBackslash;
}

function lstatOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch {
    return undefined;
  }
}

function safeRealpath(p: string): string | undefined {
  try {
    return fs.realpathSync(p);
  } catch {
    return undefined;
  }
}
