/**
 * `shardkit extract`: writes every member back as a file at its original relative path (key + '.' + ext),
 * decompressed and checksum-verified. The dataset is input and may be hostile:
 * - a path that would land outside the target directory is refused (UNSAFE_PATH), and so is a member whose path
 *   another member has, or that one member writes as a file and another needs as a directory (see
 *   written-paths.ts); all paths are planned from the index before any file is written, so a refused dataset
 *   leaves nothing extracted;
 * - nothing already in the target is followed: each directory on the way is checked with lstat (a symlink there is
 *   refused), and each file is written to a new temporary (O_NOFOLLOW | O_EXCL) renamed over its name once
 *   complete, so a hard link there is replaced, never written through, and a failed write (no space, EFBIG) leaves
 *   no cut-short file under a member's name.
 * - one extract at a time per target directory (the write lock pack uses, `.shardkit-lock` there while it runs).
 * - a local writer that swaps a directory of the target for a symlink while extract runs is not followed: files are
 *   created through the descriptor of the directory extract opened and checked (see target-dirs.ts; Linux, through
 *   /proc/self/fd). Without /proc, each directory is checked by path before its files are written, and a swap
 *   between that check and the create is not caught.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { MANIFEST_FILE } from '../../formats/manifest.js';
import { memberPath } from '../../formats/sample.js';
import { expectLocalPath, isRemote, resolveLocation } from '../io/location.js';
import { fsCall, ioError, makeDir } from '../pack/fs-errors.js';
import { pathOverlap, realPathOf } from '../pack/paths.js';
import { quietly, replaceFile, replaceFileStreamed } from '../pack/replace-file.js';
import { shouldStream, streamMember } from '../read/member-stream-read.js';
import { openDataset, type OpenDatasetOptions } from '../read/dataset.js';
import { probeNameFolding, WrittenPaths } from './written-paths.js';
import { LOCK_FILE, WriteLock } from '../pack/write-lock.js';
import { TargetDirs } from './target-dirs.js';

export interface ExtractOptions {
  /** Only samples whose key starts with this. */
  prefix?: string;
  onProgress?: (p: { samples: number; files: number; bytes: number }) => void;
  /** Passed to openDataset (verify is always on). */
  open?: Omit<OpenDatasetOptions, 'verify'>;
}

export interface ExtractResult {
  samples: number;
  files: number;
  bytes: number;
}

/** Extracts the dataset at `location` into `dir` (created when missing). */
export async function extractDataset(location: string, dir: string, options: ExtractOptions = {}): Promise<ExtractResult> {
  if (typeof dir !== 'string' || dir === '') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a directory path for the extract target but received ${JSON.stringify(dir)}`);
  const root = path.resolve(expectLocalPath('the extract target', dir));
  refuseOverlap(location, root);
  // opened first: a dataset that cannot be opened leaves no empty target directory behind
  const ds = await openDataset(location, { ...options.open, verify: true });
  const result: ExtractResult = { samples: 0, files: 0, bytes: 0 };
  const safeDirs = new Set<string>([root]);
  const range = options.prefix === undefined ? {} : { prefix: options.prefix };
  const created = !fs.existsSync(root);
  let lock: WriteLock | undefined;
  let dirs: TargetDirs | undefined;
  try {
    makeDir(root);
    // one writer per target: two extracts into one directory mixed their trees and both reported success
    lock = WriteLock.acquire(root, 'extract');
    dirs = TargetDirs.open(root);
    // where a member's file is created: through its directory's descriptor (see target-dirs.ts), else by path with
    // each directory checked first
    const place = (relative: string, key: string): { file: string; shown: string } => {
      const target = safeTarget(root, relative, key);
      if (dirs !== undefined) return dirs.fileFor(relative);
      ensureDirs(root, path.dirname(target), safeDirs);
      return { file: target, shown: target };
    };
    // two keys that differ only in case are two files where the file system keeps them apart, one file where not
    const written = new WrittenPaths(fsCall('write', root, () => probeNameFolding(root)));
    // every path is planned from the index before any file is written: a dataset extract refuses (a path outside
    // the target, two members on one file, a file where a directory must be) leaves nothing half-extracted
    try {
      for await (const entry of ds.entries(range)) {
        for (const m of entry.members) {
          const target = safeTarget(root, memberPath(entry.key, m.ext), entry.key);
          if (target === lock.file) throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `refusing to extract ${JSON.stringify(LOCK_FILE)}: extract keeps its lock under that name`, { key: entry.key });
          written.claim(entry.key, m.ext);
        }
      }
    } catch (err) {
      lock.release();
      if (created) quietly(() => fs.rmdirSync(root));
      throw err;
    }
    for await (const entry of ds.entries(range)) {
      if (shouldStream(entry)) {
        // a sample too large to hold: each member goes to its file as it is read (checked, then renamed into place)
        for (const m of entry.members) {
          const { file, shown } = place(memberPath(entry.key, m.ext), entry.key);
          await named(file, shown, () => replaceFileStreamed(file, (write) => streamMember(ds, entry, m, write), { createMode: 0o644 }));
          result.files++;
          result.bytes += m.size;
        }
        result.samples++;
        options.onProgress?.({ ...result });
        continue;
      }
      const sample = await ds.read(entry);
      for (const [ext, bytes] of Object.entries(sample.members)) {
        const { file, shown } = place(memberPath(sample.key, ext), sample.key);
        await named(file, shown, () => writeMember(file, bytes));
        result.files++;
        result.bytes += bytes.length;
      }
      result.samples++;
      options.onProgress?.({ ...result });
    }
  } finally {
    dirs?.close();
    lock?.release();
    await ds.close();
  }
  return result;
}

/**
 * INVALID_ARG when the target is the dataset's directory, inside it, or around it: members could then replace the
 * dataset's own files (a member named manifest.json replaced the manifest, and extract exited 0). Compared as real
 * paths, so a symlink cannot hide one in the other. A remote dataset has no directory here to overlap.
 */
function refuseOverlap(location: string, root: string): void {
  // a location that is no string or empty: openDataset says so
  if (typeof location !== 'string' || location === '' || isRemote(location)) return;
  const datasetDir = path.dirname(resolveLocation(location, MANIFEST_FILE));
  const overlap = pathOverlap(root, datasetDir);
  if (overlap !== undefined) {
    throw new ShardkitError(
      ErrorCodes.INVALID_ARG,
      `the extract target ${root} ${overlap === 'same' ? 'is' : overlap === 'inside' ? 'is inside' : 'contains'} the dataset directory ${realPathOf(path.resolve(datasetDir))}: members could overwrite the dataset's files; extract into another directory`,
      { file: root },
    );
  }
}

/**
 * The absolute path for a member, or UNSAFE_PATH when it would not stay inside `root`. A backslash (which pack no
 * longer takes in a name, but older datasets may hold in an extension) is kept as a character of its file name
 * where `/` is the only separator, and refused on Windows.
 */
export function safeTarget(root: string, relative: string, key: string): string {
  const unsafe = (why: string): never => {
    throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `refusing to extract ${JSON.stringify(relative)}: ${why}`, { key });
  };
  if (relative === '' || relative.includes('\0')) unsafe('empty, or contains NUL');
  // a backslash separates paths on Windows only; elsewhere it is a character of one name, as GNU tar writes it
  if (path.sep === '\\' && relative.includes('\\')) {
    unsafe('a backslash separates paths on this system; write that member under a name of your choice with `shardkit get <dataset> <key> --ext <ext> --out <file>`');
  }
  if (relative.startsWith('/') || path.isAbsolute(relative)) unsafe('absolute path');
  if (relative.split('/').some((s) => s === '' || s === '.' || s === '..')) unsafe('has an empty, "." or ".." segment');
  const target = path.resolve(root, relative);
  if (!target.startsWith(root + path.sep)) unsafe('lands outside the target directory');
  return target;
}

/** Runs a write of `file` (maybe a /proc/self/fd path), its errors naming the member's real path `shown`. */
async function named<T>(file: string, shown: string, write: () => T | Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (file === shown || !(err instanceof ShardkitError)) throw err;
    const dir = path.dirname(file);
    const message = err.message.split(file).join(shown).split(dir).join(path.dirname(shown));
    throw new ShardkitError(err.code, message, { file: shown, ...(err.key === undefined ? {} : { key: err.key }), cause: err.cause });
  }
}

/** Creates the directories from `root` down to `dir`, refusing any component that is a symlink or not a directory. */
function ensureDirs(root: string, dir: string, safe: Set<string>): void {
  if (safe.has(dir)) return;
  ensureDirs(root, path.dirname(dir), safe);
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(dir);
  } catch {
    st = undefined;
  }
  if (st === undefined) {
    try {
      fs.mkdirSync(dir);
    } catch (cause) {
      throw ioError(cause, 'create', dir);
    }
    st = fs.lstatSync(dir);
  }
  if (st.isSymbolicLink()) throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${dir} is a symbolic link; extract never follows links in the target directory`, { file: dir });
  if (!st.isDirectory()) throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${dir} exists and is not a directory`, { file: dir });
  safe.add(dir);
}

/** Writes one member at `file`, refusing a symbolic link or anything but a regular file already there. */
function writeMember(file: string, bytes: Uint8Array): void {
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(file);
  } catch {
    st = undefined;
  }
  if (st !== undefined) {
    if (st.isSymbolicLink()) throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${file} is a symbolic link; extract never follows links in the target directory`, { file });
    if (!st.isFile()) throw new ShardkitError(ErrorCodes.UNSAFE_PATH, `${file} exists and is not a regular file`, { file });
  }
  replaceFile(file, bytes, { createMode: 0o644 });
}
