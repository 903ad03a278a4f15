/**
 * Writes the index and then the manifest (the commit point) for shards that already exist: shared by `reindex`
 * (our own tar shards) and `index` (adopted foreign tars). Both files go through a temporary name and a rename.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import type { Layout, ShardRecord } from '../../formats/index-layout.js';
import type { Manifest, ManifestPart, ManifestPass } from '../../formats/manifest.js';
import { commitDataset } from '../pack/commit.js';
import type { EntrySorter } from '../pack/entry-runs.js';

export interface DatasetFilesSpec {
  dir: string;
  /** Shards in index order; `samples` is lowered here for samples dropped as duplicates. */
  shards: ShardRecord[];
  /** Every sample's entry, in any order. */
  sorter: EntrySorter;
  layout: Layout;
  compress: 'none' | 'lz4';
  pageSize: number;
  passes: ManifestPass[];
  files: string[];
  /** Skipped entries so far; duplicates found while sorting are appended. */
  skipped: { path: string; reason: string }[];
  extra: Record<string, unknown>;
  /** Of a part of a partitioned pack: which part (kept by reindex). */
  part?: ManifestPart;
  /** Two samples with one key: skip the later (adopting foreign tars) or fail with DUPLICATE_KEY (reindex). */
  duplicates: 'skip' | 'fail';
  sync?: boolean;
}

/**
 * Builds the index from the sorted entries and writes the manifest. Two samples with one key (a key repeated in
 * another tar, or members of one key that are not adjacent): the first in shard order is kept, the others are
 * listed in `skipped`.
 */
export function writeDatasetFiles(spec: DatasetFilesSpec): Manifest {
  // duplicates found while the index is written join this list before the manifest is made
  const skipped = [...spec.skipped];
  const shardName = (e: IndexEntry): string => spec.shards[e.shard]?.file ?? `#${e.shard}`;
  function* unique(): Generator<IndexEntry> {
    let held: IndexEntry | undefined;
    const drop = (loser: IndexEntry, winner: IndexEntry): void => {
      if (spec.duplicates === 'fail') {
        throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `two samples have the key ${JSON.stringify(loser.key)} (in ${shardName(winner)} and ${shardName(loser)})`, { key: loser.key });
      }
      skipped.push({
        path: `${shardName(loser)}:${loser.key}`,
        reason: `sample key already used at byte ${winner.offset} of ${shardName(winner)} (members of one key must be adjacent and keys unique, as WebDataset reads them; GNU tar needs --sort=name); the later sample is skipped`,
      });
      const record = spec.shards[loser.shard];
      if (record !== undefined) record.samples--;
    };
    for (const e of spec.sorter.sorted()) {
      if (held !== undefined && held.key === e.key) {
        const eFirst = e.shard < held.shard || (e.shard === held.shard && e.offset < held.offset);
        if (eFirst) {
          drop(held, e);
          held = e;
        } else drop(e, held);
        continue;
      }
      if (held !== undefined) yield held;
      held = e;
    }
    if (held !== undefined) yield held;
  }
  return commitDataset({
    dir: spec.dir,
    entries: unique(),
    shards: spec.shards,
    layout: spec.layout,
    compress: spec.compress,
    pageSize: spec.pageSize,
    sync: spec.sync ?? false,
    passes: spec.passes,
    files: new Map(),
    keepFiles: spec.files,
    skipped,
    extra: spec.extra,
    ...(spec.part === undefined ? {} : { part: spec.part }),
  });
}
