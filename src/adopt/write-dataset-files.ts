/**
 * Writes the index and then the manifest (the commit point) for shards that already exist: shared by `reindex`
 * (our own tar shards) and `index` (adopted foreign tars). Both files go through a temporary name and a rename.
 */
import fs from 'node:fs';
import path from 'node:path';
import { crc32cHex } from '../../formats/checksum.js';
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import type { Layout, ShardRecord } from '../../formats/index-layout.js';
import { MANIFEST_FILE, MANIFEST_FORMAT, MANIFEST_VERSION, serializeManifest, type Manifest, type ManifestPass } from '../../formats/manifest.js';
import type { EntrySorter } from '../pack/entry-runs.js';
import { INDEX_FILE } from '../pack/dataset-writer.js';
import { fsCall } from '../pack/fs-errors.js';
import { writeIndexFile } from '../pack/index-file.js';
import { VERSION } from '../version.js';

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
  const totals = { members: 0, bytes: 0, storedBytes: 0 };
  const duplicates: { path: string; reason: string }[] = [];
  const shardName = (e: IndexEntry): string => spec.shards[e.shard]?.file ?? `#${e.shard}`;
  function* unique(): Generator<IndexEntry> {
    let held: IndexEntry | undefined;
    const drop = (loser: IndexEntry, winner: IndexEntry): void => {
      if (spec.duplicates === 'fail') {
        throw new ShardkitError(ErrorCodes.DUPLICATE_KEY, `two samples have the key ${JSON.stringify(loser.key)} (in ${shardName(winner)} and ${shardName(loser)})`, { key: loser.key });
      }
      duplicates.push({
        path: `${shardName(loser)}:${loser.key}`,
        reason: `sample key already used at byte ${winner.offset} of ${shardName(winner)} (members of one key must be adjacent, keys unique); the later sample is skipped`,
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
      if (held !== undefined) yield count(held);
      held = e;
    }
    if (held !== undefined) yield count(held);
  }
  const count = (e: IndexEntry): IndexEntry => {
    totals.members += e.members.length;
    for (const m of e.members) {
      totals.bytes += m.size;
      totals.storedBytes += m.storedSize;
    }
    return e;
  };
  // writeIndexFile encodes the shard table after the last entry, so the lowered sample counts are the ones stored
  const index = writeIndexFile(path.join(spec.dir, INDEX_FILE), unique(), spec.shards, spec.layout, spec.pageSize, spec.sync ?? false);
  const manifest: Manifest = {
    format: MANIFEST_FORMAT,
    formatVersion: MANIFEST_VERSION,
    tool: { name: 'shardkit', version: VERSION },
    layout: spec.layout,
    compress: spec.compress,
    index: { file: INDEX_FILE, bytes: index.bytes, pageSize: spec.pageSize, crc32c: crc32cHex(index.headerCrc) },
    shards: spec.shards.map((s) => ({ file: s.file, bytes: s.bytes, samples: s.samples, crc32c: crc32cHex(s.crc32c) })),
    totals: {
      samples: index.entryCount,
      members: totals.members,
      bytes: totals.bytes,
      storedBytes: totals.storedBytes,
      shardBytes: spec.shards.reduce((n, s) => n + s.bytes, 0),
    },
    passes: spec.passes,
    files: spec.files,
    skipped: [...spec.skipped, ...duplicates],
    extra: spec.extra,
  };
  const file = path.join(spec.dir, MANIFEST_FILE);
  const tmp = `${file}.tmp`;
  fsCall('write', tmp, () => fs.writeFileSync(tmp, serializeManifest(manifest)));
  fsCall('rename', tmp, () => fs.renameSync(tmp, file));
  return manifest;
}
