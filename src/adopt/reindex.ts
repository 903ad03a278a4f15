/**
 * `shardkit reindex`: rebuilds the index and manifest of a tar-layout dataset from its shards alone, e.g. after
 * the index was lost or damaged. With intact shards the result is byte-identical to what the writer made.
 *
 * Shards: those the manifest lists when it parses, else the files named like the writer names shards
 * (`<prefix>NNNNNN.tar`) in byte order. From a manifest that parses, passes, files, skipped and extra are kept
 * (the shards cannot tell them); without one they are lost and `compress` is inferred from the members. The
 * packed layout keeps no metadata in its shards and cannot be reindexed. With the old manifest, a shard whose size or
 * whole-file CRC32C differs from what it recorded is refused (SHARD_MISMATCH, CHECKSUM): that is damage to restore,
 * not an index to rebuild. Without one, nothing tells damaged bytes from data, and the shards are indexed as they are.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ErrorCodes, ShardkitError, isShardkitError } from '../../formats/errors.js';
import { DEFAULT_PAGE_SIZE, HEADER_BYTES, decodeIndexHeader, validatePageSize } from '../../formats/index-layout.js';
import { maxKeyBytes } from '../../formats/index-page.js';
import { ADOPTED_EXTRA_KEY, KEY_RULE_EXTRA, MANIFEST_FILE, parseManifest, type Manifest } from '../../formats/manifest.js';
import { compareKeys } from '../../formats/key-order.js';
import { expectLocalPath } from '../io/location.js';
import { INDEX_FILE } from '../pack/dataset-writer.js';
import { checkShardChecksums, checkShardSizes, partFromShardNames, refuseInterruptedPack } from './reindex-checks.js';
import { scanTarShards, type ScanProgress } from './scan-tar.js';
import { writeDatasetFiles } from './write-dataset-files.js';
import { DEFAULT_MAX_MEMBER_BYTES } from '../read/dataset-options.js';
import { WriteLock } from '../pack/write-lock.js';

/** Shard files as the writer names them. */
export const WRITER_TAR_SHARD = /^[A-Za-z0-9._-]*\d{6}\.tar$/;
const WRITER_PACKED_SHARD = /^[A-Za-z0-9._-]*\d{6}\.pack$/;

export interface ReindexOptions {
  onProgress?: (p: ScanProgress & { shard: number; shards: number }) => void;
}

export interface ReindexResult {
  manifest: Manifest;
  /** Whether passes, files, skipped and extra came from the old manifest. */
  keptManifestFields: boolean;
  /**
   * Whether each shard's size and whole-file CRC32C were checked against the old manifest (a shard that differs is
   * refused). Without a usable old manifest there is nothing to check against: the shards are indexed as they are.
   */
  shardsChecked: boolean;
  /** Why the old manifest could not be used (when it could not). */
  manifestProblem: string | undefined;
  /** Without the old manifest: the part was recognized from the shard names (`part-I-of-N-shard-*`). */
  partFromShardNames: boolean;
  /** Without the old manifest: shard names that look like parts but do not agree on one (no part recorded). */
  partProblem: string | undefined;
}

export async function reindexDataset(dir: string, options: ReindexOptions = {}): Promise<ReindexResult> {
  if (typeof dir !== 'string' || dir === '') {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected a local dataset directory for reindex but received ${JSON.stringify(dir)}`);
  }
  expectLocalPath("reindex's dataset", dir);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new ShardkitError(ErrorCodes.NOT_A_DATASET, `${dir} is not a directory`, { file: dir });
  const lock = WriteLock.acquire(dir, 'reindex'); // not while a pack, merge or another reindex writes there
  try {
    return await reindexLocked(dir, options);
  } finally {
    lock.release();
  }
}

async function reindexLocked(dir: string, options: ReindexOptions): Promise<ReindexResult> {
  refuseInterruptedPack(dir);
  const { manifest: old, problem } = readOldManifest(dir);
  if (old?.layout === 'packed') throw packedRefused(dir);
  // reindex rebuilds a lost or damaged index; shards that changed since the manifest recorded them are damage, which
  // a new index and manifest would record as the data (verify would then pass and readers return the bad bytes)
  if (old !== undefined) checkShardSizes(dir, old);
  const shardFiles = old !== undefined ? old.shards.map((s) => s.file) : findWriterShards(dir);
  // a part of a partitioned pack stays one: merge needs to know which (from the manifest, else the shard names)
  const fromNames = old === undefined ? partFromShardNames(shardFiles) : {};
  const part = old !== undefined ? old.part : fromNames.part;
  const adopted = old !== undefined && typeof old.extra[ADOPTED_EXTRA_KEY] === 'object';
  const pageSize = choosePageSize(dir, old);
  const skipped: { path: string; reason: string }[] = [];
  const rules = {
    style: adopted ? ('webdataset' as const) : ('shardkit' as const),
    // a dataset packed with --key-rule path cut its keys at the last dot: its names are read back the same way
    ...(old?.extra[KEY_RULE_EXTRA] === 'path' ? { keyRule: 'path' as const } : {}),
    lz4: adopted || old?.compress === 'none' ? ('no' as const) : ('detect' as const),
    maxKeyBytes: maxKeyBytes(pageSize),
    maxMemberBytes: DEFAULT_MAX_MEMBER_BYTES,
    onSkip: (where: string, reason: string): void => {
      if (adopted) return void skipped.push({ path: where, reason });
      throw new ShardkitError(ErrorCodes.CORRUPT_SHARD, `${where}: not an entry shardkit writes (${reason}); for tars made by other tools use \`shardkit index\``, { file: where });
    },
  };
  return scanTarShards(dir, shardFiles, rules, options.onProgress, ({ sorter, shards, compressedMembers }) => {
    if (old !== undefined) checkShardChecksums(old, shards);
    const manifest = writeDatasetFiles({
      dir,
      shards,
      sorter,
      layout: 'tar',
      compress: old?.compress ?? (compressedMembers > 0 ? 'lz4' : 'none'),
      pageSize,
      passes: old?.passes ?? [],
      files: old?.files ?? [],
      // an adopted dataset's skips are found again by the scan; a packed one's came from its inputs
      skipped: adopted ? skipped : (old?.skipped ?? []),
      extra: old?.extra ?? {},
      ...(part === undefined ? {} : { part }),
      duplicates: adopted ? 'skip' : 'fail',
    });
    return {
      manifest,
      keptManifestFields: old !== undefined,
      shardsChecked: old !== undefined,
      manifestProblem: problem,
      partFromShardNames: fromNames.part !== undefined,
      partProblem: fromNames.note,
    };
  });
}

function readOldManifest(dir: string): { manifest: Manifest | undefined; problem: string | undefined } {
  const file = path.join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return { manifest: undefined, problem: `${file} is missing` };
  }
  try {
    return { manifest: parseManifest(text, file), problem: undefined };
  } catch (err) {
    // a dataset from a newer shardkit is left alone rather than rewritten in an older format
    if (isShardkitError(err, ErrorCodes.UNSUPPORTED_VERSION)) throw err;
    return { manifest: undefined, problem: (err as Error).message };
  }
}

function findWriterShards(dir: string): string[] {
  const names = fs.readdirSync(dir);
  const tars = names.filter((n) => WRITER_TAR_SHARD.test(n)).sort(compareKeys);
  if (tars.length > 0) return tars;
  if (names.some((n) => WRITER_PACKED_SHARD.test(n))) throw packedRefused(dir);
  throw new ShardkitError(ErrorCodes.NOT_A_DATASET, `${dir}: no readable manifest and no shard files named like *000000.tar; nothing to reindex`, { file: dir });
}

function packedRefused(dir: string): ShardkitError {
  return new ShardkitError(
    ErrorCodes.INVALID_ARG,
    `${dir}: the packed layout cannot be reindexed (its shards hold no names or sizes, the index is their only metadata); restore the index from a backup or pack again`,
    { file: dir },
  );
}

/** The manifest's page size, else the old index header's (when still readable), else the default. */
function choosePageSize(dir: string, old: Manifest | undefined): number {
  const valid = (n: number): boolean => {
    try {
      validatePageSize(n);
      return true;
    } catch {
      return false;
    }
  };
  if (old !== undefined && valid(old.index.pageSize)) return old.index.pageSize;
  try {
    const fd = fs.openSync(path.join(dir, INDEX_FILE), 'r');
    try {
      const head = Buffer.alloc(HEADER_BYTES);
      fs.readSync(fd, head, 0, HEADER_BYTES, 0);
      const size = decodeIndexHeader(head, INDEX_FILE).pageSize;
      if (valid(size)) return size;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // no usable old index
  }
  return DEFAULT_PAGE_SIZE;
}
