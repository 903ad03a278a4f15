/**
 * `merge`: combines the datasets packed by `pack --part I/N` into one dataset with one index. Shard files are hard
 * linked into the output (copied only across file systems), never rewritten; the index is rebuilt from the parts'
 * indexes. The result holds the same samples with the same bytes as a one-machine pack.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import { carriedFiles } from '../../formats/shard-index.js';
import type { ShardRecord } from '../../formats/index-layout.js';
import type { Manifest, ManifestPart } from '../../formats/manifest.js';
import { openDataset, type Dataset } from '../read/dataset.js';
import { commitDataset } from './commit.js';
import { EntrySorter } from './entry-runs.js';
import { expectLocalPath } from '../io/location.js';
import { pathOverlap } from './paths.js';
import { fsCall } from './fs-errors.js';
import { WORK_DIR } from './journal.js';
import { prepareDirectory } from './output-dir.js';
import { WriteLock } from './write-lock.js';
import { inKeyOrder } from './skipped.js';

export interface MergeResult {
  manifest: Manifest;
  /** Shards hard linked / copied into the output. */
  linked: number;
  copied: number;
}

export async function mergeParts(parts: string[], out: string, options: { force?: boolean; sync?: boolean } = {}): Promise<MergeResult> {
  if (parts.length === 0) throw new ShardkitError(ErrorCodes.INVALID_ARG, 'merge needs at least one part directory');
  for (const p of parts) expectLocalPath('a part to merge (its shards are linked or copied)', p);
  out = path.resolve(expectLocalPath('--out', out));
  // merging into a part would delete that part's files before linking them
  for (const p of parts) {
    const overlap = pathOverlap(out, p);
    if (overlap === 'same' || overlap === 'inside') {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `--out ${out} is part ${p} or inside it; merge into another directory`, { file: out });
    }
  }
  const datasets: Dataset[] = [];
  let lock: WriteLock | undefined; // one writer at a time in `out` (two merges there broke each other's dataset)
  try {
    for (const p of parts) datasets.push(await openDataset(p));
    checkParts(datasets);
    const first = (datasets[0] as Dataset).manifest;
    for (const ds of datasets.slice(1)) checkCompatible(first, ds);
    // pack's rules for its output: a dataset there is replaced only with --force (its manifest first, then the files
    // it owns), an interrupted pack is left to --resume, and a non-empty directory without a dataset is refused
    lock = WriteLock.acquire(out, 'merge');
    prepareDirectory(out, path.join(out, WORK_DIR), false, options.force === true, {}, lock);
    const shards: ShardRecord[] = [];
    const sorter = new EntrySorter(path.join(out, WORK_DIR));
    let linked = 0;
    let copied = 0;
    const names = new Set<string>();
    for (const ds of datasets) {
      const base = shards.length;
      for (const [i, record] of ds.shards.entries()) {
        if (names.has(record.file)) throw new ShardkitError(ErrorCodes.INVALID_ARG, `shard ${record.file} appears in two parts; merge parts packed with --part I/N`, { file: record.file });
        names.add(record.file);
        if (linkOrCopy(ds.shardLocation(i), path.join(out, record.file))) linked++;
        else copied++;
        shards.push(record);
      }
      for await (const e of ds.entries()) sorter.add({ key: e.key, shard: base + e.shard, offset: e.offset, length: e.length, members: e.members });
    }
    const files = new Map<string, Uint8Array>();
    for (const name of carriedFiles(first.files)) files.set(name, fs.readFileSync(path.join((datasets[0] as Dataset).location, name)));
    const manifest = commitDataset({
      dir: out,
      entries: sorter.sorted(),
      shards,
      layout: first.layout,
      compress: first.compress,
      pageSize: first.index.pageSize,
      sync: options.sync ?? false,
      passes: first.passes,
      files,
      skipped: inKeyOrder(datasets.flatMap((d) => d.manifest.skipped)),
      extra: first.extra,
    });
    fs.rmSync(path.join(out, WORK_DIR), { recursive: true, force: true });
    return { manifest, linked, copied };
  } finally {
    lock?.release();
    for (const ds of datasets) await ds.close();
  }
}

/**
 * Parts of a partitioned pack (their manifests say which part they are) must all be there, once each, and go in
 * part order whatever order they were given in: the merge then names its shards the same way every time. Datasets
 * packed without --part merge in the order given.
 */
function checkParts(datasets: Dataset[]): void {
  const parts = datasets.map((d) => d.manifest.part);
  if (parts.every((p) => p === undefined)) return;
  const plain = datasets.find((d) => d.manifest.part === undefined);
  if (plain !== undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${plain.location} was not packed with --part I/N, unlike the other datasets to merge`, { file: plain.location });
  const count = (parts[0] as ManifestPart).count;
  const seen = new Map<number, Dataset>();
  for (const ds of datasets) {
    const p = ds.manifest.part as ManifestPart;
    if (p.count !== count) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${ds.location} is part ${p.index}/${p.count}, but ${(datasets[0] as Dataset).location} is one of ${count} parts`, { file: ds.location });
    const twin = seen.get(p.index);
    if (twin !== undefined) throw new ShardkitError(ErrorCodes.INVALID_ARG, `${twin.location} and ${ds.location} are both part ${p.index}/${count}`, { file: ds.location });
    seen.set(p.index, ds);
  }
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !seen.has(i));
  if (missing.length > 0) {
    const list = missing.slice(0, 8).map((i) => `${i}/${count}`).join(', ') + (missing.length > 8 ? ` and ${missing.length - 8} more` : '');
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `merge needs every part of the pack: ${list} missing`);
  }
  datasets.sort((a, b) => (a.manifest.part as ManifestPart).index - (b.manifest.part as ManifestPart).index);
}

function checkCompatible(a: Manifest, ds: Dataset): void {
  const b = ds.manifest;
  const differs = (what: string, x: unknown, y: unknown): void => {
    if (JSON.stringify(x) !== JSON.stringify(y)) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `part ${ds.location} was packed with another ${what} (${JSON.stringify(y)} vs ${JSON.stringify(x)}); parts must share every option`, { file: ds.location });
    }
  };
  differs('layout', a.layout, b.layout);
  differs('compression', a.compress, b.compress);
  differs('page size', a.index.pageSize, b.index.pageSize);
  differs('list of passes', a.passes, b.passes);
  differs('set of extra files', a.files, b.files);
  differs('pass output', a.extra, b.extra);
}

/**
 * Hard link (no data copied); across file systems, a copy. Returns true when linked. A file already at `to` is a
 * shard an interrupted merge linked there (prepareDirectory refused any directory shardkit did not write).
 */
function linkOrCopy(from: string, to: string): boolean {
  fsCall('remove', to, () => fs.rmSync(to, { force: true }));
  try {
    fs.linkSync(from, to);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV' && (err as NodeJS.ErrnoException).code !== 'EPERM') throw new ShardkitError(ErrorCodes.IO, `cannot link ${from} to ${to}: ${(err as Error).message}`, { cause: err });
    fsCall('copy', from, () => fs.copyFileSync(from, to));
    return false;
  }
}
