/**
 * The last steps every way of making a dataset shares (pack, merge, derive, reindex, index): write the index from
 * entries in key order, the extra files (and, for tar shards, shardindex.json for wids and WebDataset), and then the
 * manifest, the commit point. Each file goes under a temporary name
 * and is renamed into place, so a crash leaves either no manifest or a complete dataset.
 */
import path from 'node:path';
import { crc32cHex } from '../../formats/checksum.js';
import type { IndexEntry } from '../../formats/index-entry.js';
import type { Layout, ShardRecord } from '../../formats/index-layout.js';
import { encodeShardIndex, hasShardIndex, SHARD_INDEX_FILE } from '../../formats/shard-index.js';
import { MANIFEST_FILE, MANIFEST_FORMAT, MANIFEST_VERSION, serializeManifest, type Manifest, type ManifestAppend, type ManifestPart, type ManifestPass } from '../../formats/manifest.js';
import { VERSION } from '../version.js';
import { replaceFile } from './replace-file.js';
import { IndexFileWriter, writeIndexFile } from './index-file.js';

export const INDEX_FILE = 'index.skidx';
/** The index file names a dataset may have: `index.skidx` from pack, `index-<n>.skidx` from its n-th append. */
export const INDEX_FILE_NAME = /^index(-[1-9]\d*)?\.skidx$/;

/** The index file name of a dataset's n-th append (n from 1). */
export function appendIndexFile(n: number): string {
  return `index-${n}.skidx`;
}

export interface CommitInput {
  dir: string;
  /** Index entries in strictly increasing key order, or the index already built from them as they came. */
  entries: Iterable<IndexEntry> | IndexFileWriter;
  shards: readonly ShardRecord[];
  layout: Layout;
  compress: 'none' | 'lz4';
  pageSize: number;
  sync: boolean;
  passes: ManifestPass[];
  /** Extra files to write into the dataset directory. */
  files: ReadonlyMap<string, Uint8Array>;
  /** Extra files already in place (reindex, adopt), listed in the manifest as they are. */
  keepFiles?: readonly string[];
  skipped: { path: string; reason: string }[];
  extra: Record<string, unknown>;
  /** Recorded for a dataset that is one part of a partitioned pack. */
  part?: ManifestPart;
  /** The index file's name, when not {@link INDEX_FILE} (an append writes `index-<n>.skidx`); its writer's name when given one. */
  indexFile?: string;
  /** The appends the dataset has had (see ManifestAppend). */
  appends?: ManifestAppend[];
}

export function commitDataset(c: CommitInput): Manifest {
  const index = c.entries instanceof IndexFileWriter ? c.entries.finish(c.shards, c.sync) : writeIndexFile(path.join(c.dir, INDEX_FILE), c.entries, c.shards, c.layout, c.pageSize, c.sync);
  // shardindex.json is made here from the final shard list, whatever an input dataset (merge's parts, derive's
  // source, reindex's old manifest) had: its sample counts are known only once the index is written
  const files = new Map([...c.files].filter(([name]) => name !== SHARD_INDEX_FILE));
  if (hasShardIndex(c.layout)) files.set(SHARD_INDEX_FILE, encodeShardIndex(crc32cHex(index.headerCrc), c.shards));
  for (const [name, bytes] of files) writeAtomically(path.join(c.dir, name), bytes);
  const kept = (c.keepFiles ?? []).filter((name) => name !== SHARD_INDEX_FILE);
  const names = [...new Set([...files.keys(), ...kept])].sort();
  const manifest: Manifest = {
    format: MANIFEST_FORMAT,
    formatVersion: MANIFEST_VERSION,
    tool: { name: 'shardkit', version: VERSION },
    layout: c.layout,
    compress: c.compress,
    index: { file: c.indexFile ?? INDEX_FILE, bytes: index.bytes, pageSize: c.pageSize, crc32c: crc32cHex(index.headerCrc) },
    shards: c.shards.map((s) => ({ file: s.file, bytes: s.bytes, samples: s.samples, crc32c: crc32cHex(s.crc32c) })),
    totals: {
      samples: index.entryCount,
      members: index.memberCount,
      bytes: index.memberBytes,
      storedBytes: index.storedBytes,
      shardBytes: c.shards.reduce((n, s) => n + s.bytes, 0),
    },
    passes: c.passes,
    files: names,
    skipped: c.skipped,
    extra: c.extra,
    ...(c.part === undefined ? {} : { part: { index: c.part.index, count: c.part.count } }),
    ...(c.appends === undefined ? {} : { appends: c.appends }),
  };
  writeAtomically(path.join(c.dir, MANIFEST_FILE), new TextEncoder().encode(serializeManifest(manifest)));
  return manifest;
}

/**
 * Writes `file` through a temporary of a random name (never `<file>.tmp`, a name an input may have: `index` keeps
 * the user's tars in its output) and a rename: no link at either name is written through.
 */
export function writeAtomically(file: string, bytes: Uint8Array): void {
  replaceFile(file, bytes);
}
