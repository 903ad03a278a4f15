/**
 * `append`: adds the samples of a source directory to an existing dataset. The new samples are packed into new
 * shards, numbered after the dataset's last one (old shards are never rewritten or read); the old index is read
 * once, in key order, and merged with the new entries into a new index file `index-<n>.skidx`; the new manifest,
 * renamed into place, is the commit point. A reader that opened the dataset before keeps its manifest's index file
 * (kept until the next append); one that opens it after sees everything. Killed at any moment, the dataset is the
 * old version; `--resume` finishes with the same bytes. See formats/SPEC.md ("Append").
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { Layout } from '../../formats/index-layout.js';
import { KEY_RULE_EXTRA, MANIFEST_FILE, parseManifest, type Manifest } from '../../formats/manifest.js';
import { splitKey } from '../../formats/sample.js';
import { carriedFiles } from '../../formats/shard-index.js';
import type { Pass } from '../passes/pass.js';
import { expectLocalPath } from '../io/location.js';
import { openDataset, type Dataset } from '../read/dataset.js';
import { leafEntries, leafEntriesOfFile, mergeEntries, type MergeCounts } from './append-merge.js';
import { readTarget, removeStage, stagePaths, writeTarget, type AppendTarget, type StagePaths } from './append-stage.js';
import { appendPasses, checkAppendable } from './append-checks.js';
import { restageWithout } from './append-restage.js';
import { appendIndexFile, commitDataset, INDEX_FILE_NAME, writeAtomically } from './commit.js';
import { crashPoint } from './crash-point.js';
import { DEFAULT_SHARD_BYTES } from './dataset-writer-options.js';
import { fsCall } from './fs-errors.js';
import { IndexFileWriter } from './index-file.js';
import { expectSomeFile, pack, type PackProgress } from './pack.js';
import { validateOnError } from './sample-pipeline.js';
import { inKeyOrder } from './skipped.js';
import { WriteLock } from './write-lock.js';

export interface AppendOptions {
  /** The dataset directory to grow (local). */
  dataset: string;
  /** The directory of new files, walked as pack walks its source. */
  source: string;
  /**
   * The dataset's passes run on the new samples, made again from its manifest. Give them here only when the manifest
   * cannot make them (a `tag=FILE.csv`, a `custom:*` pass); any list given must equal the dataset's (name and params).
   */
  passes?: Pass[];
  /** Must be the dataset's when given (the new shards take the dataset's layout and compression). */
  layout?: Layout;
  compress?: 'none' | 'lz4';
  /** Shard byte budget of the new shards (default 1 GiB). */
  shardBytes?: number;
  concurrency?: number;
  readThreads?: number;
  /** 'fail' (default): a bad input or a key the dataset already has stops the append. 'skip': leave it out, list it. */
  onError?: 'fail' | 'skip';
  /** Finish an interrupted append (same source and options). */
  resume?: boolean;
  /** Discard an interrupted append and start this one. */
  force?: boolean;
  followSymlinks?: boolean;
  includeHidden?: boolean;
  /** Keep files named `stem.N.ext` together as one sample (see PackOptions.groupNumbered). */
  groupNumbered?: boolean;
  include?: string[];
  exclude?: string[];
  /** fsync the new shards and index before the manifest. */
  sync?: boolean;
  /** Count the new samples first for progress totals (see PackOptions.prescan). */
  prescan?: boolean;
  onProgress?: (p: PackProgress) => void;
}

export interface AppendResult {
  dataset: string;
  manifest: Manifest;
  /** Samples this append added, and the shard numbers `[first, end)` holding them. */
  samples: number;
  shards: [number, number];
  /** Inputs this append left out (`--on-error skip`), keys the dataset already had among them. */
  skipped: { path: string; reason: string }[];
  /** Keys the dataset already had (left out with `--on-error skip`). */
  duplicates: string[];
  /** New samples that a resume found already packed. */
  resumedSamples: number;
  /** Entries read from the old index (once each, in key order); 0 when a resume found the append committed. */
  oldEntriesRead: number;
  seconds: number;
}

/**
 * Appends the samples under `source` to the dataset `dataset` (see AppendOptions).
 * @throws ShardkitError NOT_A_DATASET, INVALID_ARG (another layout, a conflicting pass, an adopted or partial
 *   dataset), OUTPUT_EXISTS (another writer holds the dataset, or an interrupted append is there), DUPLICATE_KEY (a
 *   key the dataset has, without `onError: 'skip'`), INPUT_CHANGED (the dataset changed under an interrupted append),
 *   and pack's errors for the source. Nothing is committed when it throws.
 * @example await append({ dataset: 'train.shards', source: 'new-images' })
 */
export async function append(options: AppendOptions): Promise<AppendResult> {
  const started = performance.now();
  if (typeof options !== 'object' || options === null) throw new ShardkitError(ErrorCodes.INVALID_ARG, 'Expected an object { dataset, source, ... } for append options');
  if (typeof options.dataset !== 'string' || options.dataset === '') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a dataset directory for dataset but received ${JSON.stringify(options.dataset)}`);
  if (typeof options.source !== 'string' || options.source === '') throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a source directory for source but received ${JSON.stringify(options.source)}`);
  const dir = path.resolve(expectLocalPath('the dataset to append to', options.dataset, 'append writes new shards next to the old ones'));
  const onError = validateOnError(options.onError ?? 'fail');
  // the error for a directory without a dataset is openDataset's (the lock would create the directory)
  if (!fs.existsSync(path.join(dir, MANIFEST_FILE))) await (await openDataset(dir)).close();
  const lock = WriteLock.acquire(dir, 'append');
  try {
    const result = await appendLocked(dir, options, onError);
    return { ...result, seconds: (performance.now() - started) / 1000 };
  } finally {
    lock.release();
  }
}

async function appendLocked(dir: string, options: AppendOptions, onError: 'fail' | 'skip'): Promise<Omit<AppendResult, 'seconds'>> {
  const stage = stagePaths(dir);
  let target = readTarget(stage);
  if (target !== undefined && options.resume !== true) {
    if (options.force !== true) {
      throw new ShardkitError(ErrorCodes.OUTPUT_EXISTS, `${dir} holds an interrupted append; finish it with \`shardkit append --resume\` (same source and options), or discard it with --force`, { file: dir });
    }
    target = undefined;
  }
  // a stage without its target record was killed before it began; one discarded with --force goes too
  if (target === undefined) removeStage(stage);
  const ds = await openDataset(dir);
  try {
    if (target !== undefined && isCommitted(ds.manifest, target)) return await finishCommitted(dir, ds.manifest, stage, target, 0);
    if (target !== undefined && ds.manifest.index.crc32c !== target.baseIndex) {
      throw new ShardkitError(ErrorCodes.INPUT_CHANGED, `${dir}: the dataset changed since the interrupted append began (index ${target.baseIndex}, now ${ds.manifest.index.crc32c}); start over with --force`, { file: dir });
    }
    checkAppendable(dir, ds.manifest, options);
    const passes = await appendPasses(dir, ds.manifest, options.passes);
    const shardBytes = options.shardBytes ?? DEFAULT_SHARD_BYTES;
    if (target !== undefined && (target.shardBytes !== shardBytes || target.onError !== onError)) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `--resume needs the options of the interrupted append in ${dir} (shard size ${target.shardBytes}, on-error ${target.onError})`, { file: dir });
    }
    if (target === undefined) {
      // an empty source is refused before anything is staged, as pack refuses one before writing
      await expectSomeFile(options.source, path.resolve(options.source), {
        followSymlinks: options.followSymlinks ?? false,
        includeHidden: options.includeHidden ?? false,
        ...(options.include === undefined ? {} : { include: options.include }),
        ...(options.exclude === undefined ? {} : { exclude: options.exclude }),
        ...(ds.manifest.extra[KEY_RULE_EXTRA] === 'path' ? { keyRule: 'path' as const } : {}),
      }, 'append');
      const n = (ds.manifest.appends?.length ?? 0) + 1;
      target = { baseIndex: ds.manifest.index.crc32c, baseSamples: ds.size, previousIndex: ds.manifest.index.file, append: n, indexFile: appendIndexFile(n), firstShard: ds.shards.length, shardBytes, onError };
      writeTarget(stage, target);
    }
    let resumedSamples = 0;
    settleKept(stage);
    if (!fs.existsSync(path.join(stage.added, MANIFEST_FILE))) {
      const packed = await pack({
        source: options.source,
        out: stage.added,
        layout: ds.manifest.layout,
        compress: ds.manifest.compress,
        pageSize: ds.manifest.index.pageSize,
        shardBytes,
        passes,
        onError,
        // a fresh stage has no journal, and the pack starts afresh
        resume: true,
        firstShard: target.firstShard,
        command: 'append',
        // the new files are keyed as the dataset's were (see KeyRule)
        ...(ds.manifest.extra[KEY_RULE_EXTRA] === 'path' ? { keyRule: 'path' as const } : {}),
        ...pick(options, ['concurrency', 'readThreads', 'followSymlinks', 'includeHidden', 'groupNumbered', 'include', 'exclude', 'sync', 'prescan', 'onProgress']),
      });
      resumedSamples = packed.resumedSamples;
      crashPoint('append:staged');
    }
    const { counts, added } = await mergeIndex(dir, ds, stage, target);
    return await commitAppend(dir, ds, stage, target, added, counts, resumedSamples, options.sync === true);
  } finally {
    await ds.close();
  }
}

/**
 * Builds the new index (in the stage; renamed into the dataset at the commit). A duplicate key fails the append
 * (the stage is removed: a resume would meet it again), or with skip, the new samples are copied without the
 * duplicates (their bytes must not stay in a shard the index does not point into) and the merge runs again.
 */
async function mergeIndex(dir: string, ds: Dataset, stage: StagePaths, target: AppendTarget): Promise<{ counts: MergeCounts; added: IndexFileWriter }> {
  for (let attempt = 0; ; attempt++) {
    const staged = await openDataset(stage.added);
    const index = new IndexFileWriter(path.join(dir, target.indexFile), ds.manifest.layout, ds.manifest.index.pageSize, { tmpPath: path.join(stage.root, `${target.indexFile}.tmp`) });
    let counts: MergeCounts;
    try {
      counts = await mergeEntries(leafEntriesOfFile(path.join(dir, ds.manifest.index.file), ds.index.header), leafEntries(staged.index), target.firstShard, index, target.onError === 'fail');
    } catch (err) {
      index.abort();
      await staged.close();
      throw err;
    }
    if (counts.duplicates.length === 0) {
      await staged.close();
      return { counts, added: index };
    }
    index.abort();
    try {
      const key = counts.duplicates[0] as string;
      if (target.onError === 'fail') {
        removeStage(stage);
        throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `key ${JSON.stringify(key)} is already in dataset ${dir}; remove it from the source, or leave such keys out with --on-error skip`, { key, file: dir });
      }
      if (attempt > 0) throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `key ${JSON.stringify(key)} is still in the new samples after they were copied without it; start over with --force`, { key, file: dir });
      await restageWithout(staged, stage.kept, new Set(counts.duplicates), target);
    } finally {
      await staged.close();
    }
    crashPoint('append:restaged');
    settleKept(stage);
  }
}

async function commitAppend(dir: string, ds: Dataset, stage: StagePaths, target: AppendTarget, index: IndexFileWriter, counts: MergeCounts, resumedSamples: number, sync: boolean): Promise<Omit<AppendResult, 'seconds'>> {
  crashPoint('append:merged');
  const staged = await openDataset(stage.added);
  const old = ds.manifest;
  try {
    const taken = new Set(ds.shards.map((s) => s.file));
    const clash = staged.shards.find((s) => taken.has(s.file));
    if (clash !== undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, `dataset ${dir} already has a shard named ${clash.file}, the name of a new one; rename its shards with shardkit derive first`, { file: dir });
    // new names only: a reader of the old version never opens them
    for (const s of staged.shards) moveInto(path.join(stage.added, s.file), path.join(dir, s.file), s.bytes);
    crashPoint('append:moved');
    const first = target.firstShard;
    const manifest = commitDataset({
      dir,
      entries: index,
      shards: [...ds.shards, ...staged.shards],
      layout: old.layout,
      compress: old.compress,
      pageSize: old.index.pageSize,
      sync,
      passes: old.passes,
      // the class list and other pass files are replaced after the commit (see finishCommitted)
      files: new Map(),
      keepFiles: [...old.files, ...staged.manifest.files],
      skipped: inKeyOrder([...old.skipped, ...staged.manifest.skipped]),
      extra: { ...old.extra, ...staged.manifest.extra },
      indexFile: target.indexFile,
      appends: [...(old.appends ?? []), { samples: staged.size, shards: [first, first + staged.shards.length], passes: staged.manifest.passes }],
    });
    crashPoint('append:committed');
    return await finishCommitted(dir, manifest, stage, target, counts.old, resumedSamples);
  } finally {
    await staged.close();
  }
}

/**
 * After the commit: the pass files (classes.txt, grown) replace the old ones, index files older than the previous
 * one go, and so does the stage. A resume that finds the append committed runs only this.
 */
async function finishCommitted(dir: string, manifest: Manifest, stage: StagePaths, target: AppendTarget, oldEntriesRead: number, resumedSamples = 0): Promise<Omit<AppendResult, 'seconds'>> {
  settleKept(stage);
  const stagedFile = path.join(stage.added, MANIFEST_FILE);
  // gone only when a kill cut the stage's removal, the last step, short: the files were copied before it began
  const stagedManifest = fs.existsSync(stagedFile) ? parseManifest(fsCall('read', stagedFile, () => fs.readFileSync(stagedFile, 'utf8')), stagedFile) : undefined;
  // (not the stage's shardindex.json, which lists the new shards alone: the commit wrote the dataset's own)
  for (const name of carriedFiles(stagedManifest?.files ?? [])) writeAtomically(path.join(dir, name), fsCall('read', name, () => fs.readFileSync(path.join(stage.added, name))));
  for (const name of fs.readdirSync(dir)) {
    if (INDEX_FILE_NAME.test(name) && name !== target.indexFile && name !== target.previousIndex) fsCall('remove', name, () => fs.rmSync(path.join(dir, name), { force: true }));
  }
  removeStage(stage);
  const record = manifest.appends?.[target.append - 1];
  const skipped = stagedManifest?.skipped ?? [];
  const duplicates = skipped.filter((s) => s.reason.startsWith(ErrorCodes.DUPLICATE_KEY)).map((s) => splitKey(s.path).key);
  return { dataset: dir, manifest, samples: record?.samples ?? 0, shards: record?.shards ?? [target.firstShard, target.firstShard], skipped, duplicates, resumedSamples, oldEntriesRead };
}

function isCommitted(m: Manifest, target: AppendTarget): boolean {
  return m.index.file === target.indexFile && (m.appends?.length ?? 0) === target.append;
}

/** `kept/` complete (its manifest written) replaces `new/`; an incomplete one is dropped (made again from `new/`). */
function settleKept(stage: StagePaths): void {
  if (!fs.existsSync(stage.kept)) return;
  if (fs.existsSync(path.join(stage.kept, MANIFEST_FILE))) {
    fsCall('remove', stage.added, () => fs.rmSync(stage.added, { recursive: true, force: true }));
    fsCall('rename', stage.kept, () => fs.renameSync(stage.kept, stage.added));
  } else {
    fsCall('remove', stage.kept, () => fs.rmSync(stage.kept, { recursive: true, force: true }));
  }
}

/** Renames a new shard into the dataset; one already there (a resume after the move) must have its size. */
function moveInto(from: string, to: string, bytes: number): void {
  if (fs.existsSync(from)) {
    fsCall('rename', from, () => fs.renameSync(from, to));
    return;
  }
  const size = fs.existsSync(to) ? fs.statSync(to).size : -1;
  if (size !== bytes) throw new ShardkitError(ErrorCodes.SHARD_MISSING, `${from}: a new shard of the interrupted append is missing; start over with --force`, { file: from });
}

function pick<T extends object, K extends keyof T>(o: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}
